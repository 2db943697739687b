#pragma once
// Reading a database no coordinator serves: a finished Slurm job's results, read from a login node.
//
// With --db DB (and neither --server nor LADDER_SERVER) and no coordinator answering where DB.server says (or at
// the default address), a read command (search list/show, trials, watch, nodes) starts a coordinator over DB
// read-only inside itself — server::ServerOptions::read_only: the file is opened without a lock and never written
// (no migration, no checkpoint, no journal entry), nothing is scheduled, no worker is accepted — on 127.0.0.1, a
// free port, behind a token made for this process only, and points the command at it. Every read command then
// works unchanged through the same API, with the same output and --json as against the live coordinator. (Reading
// the store directly would need a second implementation of each read: counts, node-hours, the best trial, the hero
// band, the watch snapshot.) Commands that change state keep saying that no coordinator answers.
#include <memory>
#include <string>

#include "cli/client.h"

namespace ladder::server {
class Server;
}

namespace ladder::cli {

class ReadOnlyView {
 public:
  // Opens `db_path` read-only and serves it; throws std::runtime_error naming the file when it cannot be read.
  explicit ReadOnlyView(const std::string& db_path);
  ~ReadOnlyView();
  ReadOnlyView(const ReadOnlyView&) = delete;
  ReadOnlyView& operator=(const ReadOnlyView&) = delete;

  std::string address() const;
  const std::string& token() const { return token_; }

 private:
  std::string token_;
  std::unique_ptr<server::Server> server_;
};

// When `g` names a database (--db) whose coordinator does not answer: a ReadOnlyView of it, with `g` pointed at it
// (server, token, plaintext), said on stderr as "`command`: ...". nullptr (and `g` unchanged) when a coordinator
// answers, when `g` names no database or names the server, or when the database cannot be read (said on stderr:
// the command then reports the unreachable coordinator as before).
std::unique_ptr<ReadOnlyView> ServeDatabaseIfUnserved(GlobalOptions& g, const std::string& command);

}  // namespace ladder::cli
