#include "cli/local_stack.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "common/token.h"

namespace ladder::cli {

LocalStack::LocalStack(LocalStackOptions opt) : opt_(std::move(opt)) {}

LocalStack::~LocalStack() { Stop(); }

void LocalStack::Start() {
  namespace fs = std::filesystem;
  server::DatabaseLock::CheckDirectory(opt_.db_path);  // before the token file goes next to the database
  std::error_code ec;
  const std::string token_path = opt_.db_path + ".token";
  const bool token_existed = !opt_.token || fs::exists(token_path, ec);
  if (opt_.token) token_ = EnsureTokenFile(token_path);
  server::ServerOptions so;
  so.listen = opt_.listen;
  so.db_path = opt_.db_path;
  so.token = token_;
  so.http_listen = opt_.http;
  so.insecure = opt_.insecure;
  so.coordinator.registration_window = opt_.registration_window;
  // ladder up --slurm: a job requeued after its coordinator was killed may start on another node while that one's
  // lease in the database still runs; it waits for it to expire (twice the default lease) instead of failing.
  if (!opt_.local_worker) so.db_lease_wait = 2 * store::kDefaultDbLeaseTimeout;
  if (!opt_.tls_dir.empty()) so.tls = {opt_.tls_dir + "/server.crt", opt_.tls_dir + "/server.key", opt_.tls_dir + "/ca.crt"};
  // The database failed: the coordinator has stopped, and so must the command that embeds it (ladder up, demo).
  so.coordinator.on_fatal = [](const std::string& what) {
    std::fprintf(stderr, "ladder: the local coordinator's database failed (%s); stopping\n", what.c_str());
    ::kill(::getpid(), SIGTERM);
  };
  server_ = std::make_unique<server::Server>(so);
  try {
    try {
      server_->Start();
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      if (!opt_.http_any_port_if_taken || what.find("cannot serve the dashboard") == std::string::npos) throw;
      // The default dashboard port is taken (another ladder up?): any free port will do; the URL is printed.
      so.http_listen = opt_.http.substr(0, opt_.http.rfind(':')) + ":0";
      server_ = std::make_unique<server::Server>(so);
      server_->Start();
    }
  } catch (...) {
    server_.reset();
    if (!token_existed) fs::remove(token_path, ec);  // a failed start leaves no new files (as ladder-server)
    throw;
  }
  if (!opt_.local_worker) return;
  worker::WorkerOptions wo;
  wo.server = local_address();
  wo.token = token_;
  if (!opt_.tls_dir.empty()) wo.tls = {opt_.tls_dir + "/worker.crt", opt_.tls_dir + "/worker.key", opt_.tls_dir + "/ca.crt"};
  wo.slots = opt_.slots;
  wo.node_id = "local";
  const auto db_dir = fs::absolute(opt_.db_path).parent_path();
  wo.trial_dir = opt_.trial_dir.empty() ? (db_dir / "ladder-trials").string() : opt_.trial_dir;
  // As ladder-worker: LADDER_COLD_STARTS=1 starts every ladder-train rank as a new process (worker/warm_start.h).
  if (const char* c = std::getenv("LADDER_COLD_STARTS"); c && *c && std::string(c) != "0") wo.warm_starts = false;
  worker_ = std::make_unique<worker::Worker>(wo);
  worker_->Start();
  if (!worker_->WaitRegistered(std::chrono::seconds(10))) {
    throw std::runtime_error("the local worker did not register with the coordinator at " + server_->address());
  }
}

std::string LocalStack::local_address() const {
  const std::string a = address();
  const std::string host = a.substr(0, a.rfind(':'));
  if (host == "0.0.0.0" || host == "[::]" || host == "::") return "127.0.0.1" + a.substr(a.rfind(':'));
  return a;
}

void LocalStack::Stop() {
  if (worker_) worker_->Stop();
  if (server_) server_->Stop();
  worker_.reset();
  server_.reset();
}

}  // namespace ladder::cli
