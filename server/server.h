#pragma once
// Server: ladder-server as a class — a SQLite store, a Coordinator on its own event-loop thread, and a gRPC
// server with the Ladder and WorkerService services. Start twice in one process on port 0 for tests.
//
// Lifecycle: Start() (locks the database against a second coordinator, opens the store, takes its lease, recovers state, binds
// without port sharing; throws std::runtime_error with a clear message on failure, leaving no new files) → serving → Stop() (gRPC shutdown with a short deadline while the loop still runs, then the
// loop stops, the store is flushed and its lease released). The destructor calls Stop().
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <memory>
#include <string>
#include <thread>

#include "common/tls.h"
#include "server/access.h"
#include "server/coordinator.h"
#include "server/http/dashboard_sessions.h"

namespace grpc {
class Server;
}

namespace ladder::server {

class HttpServer;
class LadderService;
class OpenStreams;
class TokenAdmin;
class WorkerServiceImpl;

// One coordinator per database: an exclusive flock(2) on the database file (SQLite's own locks are fcntl(2)
// locks, which flock does not touch). Acquire creates the file with mode 0600 when it does not exist.
class DatabaseLock {
 public:
  DatabaseLock() = default;
  DatabaseLock(const DatabaseLock&) = delete;
  DatabaseLock& operator=(const DatabaseLock&) = delete;
  ~DatabaseLock();
  // Throws std::runtime_error naming the file: no such directory, cannot open, or held by another process.
  void Acquire(const std::string& path);
  // Throws std::runtime_error naming the path when the directory that would hold the database does not exist.
  static void CheckDirectory(const std::string& path);
  // Whether Acquire created the file (a failed start removes what it created).
  bool created() const { return created_; }

 private:
  int fd_ = -1;
  bool created_ = false;
};

struct ServerOptions {
  std::string listen = "127.0.0.1:50051";  // host:port; port 0 picks a free one
  std::string db_path = "ladder.db";
  std::string token;        // the admin token (<db>.token); empty: no token required
  TlsFiles tls;             // cert + key: serve TLS (gRPC and the dashboard); + ca: mutual TLS on gRPC
  bool insecure = false;    // allow plaintext on a non-loopback address (else Start refuses it)
  std::string http_listen;  // host:port of the web dashboard (HttpServer); empty: none
  // Serve the database read-only (ladder-server --read-only): opened as store::OpenMode::kReadOnly, never locked
  // (a coordinator may serve it meanwhile, or start later), never created, never written; the read calls and the
  // dashboard answer from it, the calls that change state and every worker are refused (Coordinator::Start).
  bool read_only = false;
  // The coordinator's lease on the database (store::Store::TakeLease; --db-lease-timeout): another coordinator may
  // take the database over only after this long without a heartbeat. Not taken read-only.
  std::chrono::milliseconds db_lease_timeout = store::kDefaultDbLeaseTimeout;
  // How long Start waits for another coordinator's lease to be released or expire (a Slurm job requeued after its
  // coordinator was killed, started on another node; --db-lease-wait-ms); 0: refused at once.
  std::chrono::milliseconds db_lease_wait{0};
  size_t http_max_queued_bytes = 8 * 1024 * 1024;  // per event-stream client of the dashboard
  SessionLimits http_sessions;  // the dashboard's logins: idle and absolute lifetimes (--session-idle/-lifetime)
  std::function<std::chrono::steady_clock::time_point()> http_clock;  // what sessions age by (tests); empty: steady
  CoordinatorOptions coordinator;
};

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();

  void Start();
  void Stop();
  // Blocks until Stop() is called from another thread.
  void Wait();

  int port() const { return port_; }
  std::string address() const;  // host:port actually bound
  std::string dashboard_url() const;  // http://host:port/ of the web dashboard; empty without one
  boost::asio::io_context& loop() { return loop_; }
  Coordinator& coordinator() { return *coord_; }
  // Coordinator::Pause on the loop, then waits (up to `timeout`) until no trial runs; returns how many still do.
  int PauseAndWait(const std::string& reason, std::chrono::milliseconds timeout);
  HttpServer* http() { return http_.get(); }

 private:
  // Start's steps, in order; each that fails leaves no database behind that Start created.
  void CheckListenSettings() const;  // refuses plaintext on a shared network, missing TLS files
  void OpenStore();
  void StartLoop();  // access control, tokens, the coordinator (recovered), then the loop's thread
  void StartGrpc();
  void StartDashboard();
  void RemoveCreatedDatabase();

  ServerOptions opt_;
  DatabaseLock lock_;  // declared first: released after the store is closed
  boost::asio::io_context loop_;
  std::unique_ptr<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<Coordinator> coord_;
  std::unique_ptr<AccessControl> access_;
  std::unique_ptr<OpenStreams> open_streams_;  // the gRPC streams by token (the loop only)
  int64_t streams_subscription_ = 0;           // access_'s subscription that ends them
  std::unique_ptr<TokenAdmin> tokens_;
  std::unique_ptr<LadderService> ladder_service_;
  std::unique_ptr<WorkerServiceImpl> worker_service_;
  std::unique_ptr<grpc::Server> grpc_;
  std::unique_ptr<HttpServer> http_;
  std::thread loop_thread_;
  int port_ = 0;
  bool stopped_ = false;
};

}  // namespace ladder::server
