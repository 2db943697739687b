#include "cli/read_only_view.h"

#include <iostream>

#include "common/log.h"
#include "common/token.h"
#include "server/server.h"

namespace ladder::cli {

namespace {
// How long a coordinator has to answer before the database is read without it. A coordinator on another node
// that is up answers in milliseconds; one whose job ended refuses the connection at once.
constexpr std::chrono::seconds kProbe{3};
}  // namespace

ReadOnlyView::ReadOnlyView(const std::string& db_path) : token_(GenerateToken()) {
  server::ServerOptions so;
  so.listen = "127.0.0.1:0";
  so.db_path = db_path;
  so.token = token_;  // only this process knows it: another user of this host reaches nothing through the port
  so.read_only = true;
  server_ = std::make_unique<server::Server>(so);
  server_->Start();
}

ReadOnlyView::~ReadOnlyView() {
  if (server_) server_->Stop();
}

std::string ReadOnlyView::address() const { return server_->address(); }

std::unique_ptr<ReadOnlyView> ServeDatabaseIfUnserved(GlobalOptions& g, const std::string& command) {
  if (g.db.empty() || g.server_given) return nullptr;
  {
    Client probe(g);
    if (probe.Reachable(kProbe)) return nullptr;
  }
  const std::string unserved = ResolveServer(g);
  SetDefaultLogLevel(LogLevel::kWarning);  // the in-process coordinator's start is no news to the user
  std::unique_ptr<ReadOnlyView> view;
  try {
    view = std::make_unique<ReadOnlyView>(g.db);
  } catch (const std::exception& e) {
    std::cerr << "ladder " << command << ": no coordinator answers at " << unserved << ", and " << g.db
              << " cannot be read without one: " << e.what() << "\n";
    return nullptr;
  }
  std::cerr << "ladder " << command << ": no coordinator answers at " << unserved << "; reading " << g.db
            << " read-only (nothing runs, nothing is written)\n";
  g.server = view->address();
  g.server_given = true;
  g.token = view->token();
  g.token_file.clear();
  g.tls = {};
  g.tls_dir.clear();
  g.plaintext = true;
  return view;
}

}  // namespace ladder::cli
