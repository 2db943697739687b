#pragma once
// LocalStack: the embedded default — a coordinator and one worker in this process on 127.0.0.1, with the
// database in a local file. Used by `ladder up` (foreground) and `ladder demo` (when no coordinator runs).
#include <chrono>
#include <memory>
#include <string>

#include "server/server.h"
#include "worker/worker.h"

namespace ladder::cli {

struct LocalStackOptions {
  std::string listen = "127.0.0.1:50051";
  std::string db_path = "ladder.db";
  int slots = 0;                        // 0: number of cores
  std::string trial_dir;                // default: <db dir>/ladder-trials
  bool token = true;                    // require <db>.token for state-changing calls
  std::string http;                     // host:port of the web dashboard; empty: none
  bool http_any_port_if_taken = false;  // when that port is taken, serve the dashboard on a free one instead
  bool local_worker = true;             // false: the coordinator alone (ladder up --slurm: workers are Slurm steps)
  // TLS from a directory `ladder certs create` made: the coordinator serves DIR/server.crt+key and asks clients for
  // certificates DIR/ca.crt signed (mutual TLS); the local worker presents DIR/worker.crt. Empty: plaintext.
  std::string tls_dir;
  bool insecure = false;                // plaintext on a non-loopback address (refused otherwise)
  // CoordinatorOptions::registration_window (0: one lease): ladder up --slurm, the wait for its step's workers.
  std::chrono::milliseconds registration_window{0};
};

class LocalStack {
 public:
  explicit LocalStack(LocalStackOptions opt);
  ~LocalStack();
  // Starts both and waits until the worker has registered; throws std::runtime_error on failure.
  void Start();
  void Stop();
  // Before a Slurm job ends: no trial starts any more and the running ones stop through their checkpoints (back to
  // the queue, same attempt); waits up to `timeout`; returns how many still run.
  int PauseAndWait(const std::string& reason, std::chrono::milliseconds timeout) {
    return server_ ? server_->PauseAndWait(reason, timeout) : 0;
  }
  std::string address() const { return server_ ? server_->address() : ""; }
  // Where a client on this machine reaches it: address(), with a wildcard host (0.0.0.0, [::]) as 127.0.0.1 (the
  // server certificate names that, not the wildcard).
  std::string local_address() const;
  const std::string& token() const { return token_; }
  std::string dashboard_url() const { return server_ ? server_->dashboard_url() : ""; }

 private:
  LocalStackOptions opt_;
  std::string token_;
  std::unique_ptr<server::Server> server_;
  std::unique_ptr<worker::Worker> worker_;
};

}  // namespace ladder::cli
