#include "cli/local_stack.h"

#include <filesystem>

#include "common/token.h"

namespace ladder::cli {

LocalStack::LocalStack(LocalStackOptions opt) : opt_(std::move(opt)) {}

LocalStack::~LocalStack() { Stop(); }

void LocalStack::Start() {
  if (opt_.token) token_ = EnsureTokenFile(opt_.db_path + ".token");
  server::ServerOptions so;
  so.listen = opt_.listen;
  so.db_path = opt_.db_path;
  so.token = token_;
  server_ = std::make_unique<server::Server>(so);
  server_->Start();
  worker::WorkerOptions wo;
  wo.server = server_->address();
  wo.token = token_;
  wo.slots = opt_.slots;
  wo.node_id = "local";
  auto dir = std::filesystem::absolute(opt_.db_path).parent_path();
  wo.trial_dir = opt_.trial_dir.empty() ? (dir / "ladder-trials").string() : opt_.trial_dir;
  worker_ = std::make_unique<worker::Worker>(wo);
  worker_->Start();
  if (!worker_->WaitRegistered(std::chrono::seconds(10))) {
    throw std::runtime_error("the local worker did not register with the coordinator at " + server_->address());
  }
}

void LocalStack::Stop() {
  if (worker_) worker_->Stop();
  if (server_) server_->Stop();
  worker_.reset();
  server_.reset();
}

}  // namespace ladder::cli
