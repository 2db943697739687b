#include "server/server.h"

#include "server/http/http_server.h"

#include <absl/synchronization/mutex.h>
#include <grpcpp/grpcpp.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <future>

#include "common/log.h"
#include "common/loop_thread.h"
#include "server/grpc_services.h"
#include "server/rendezvous_port.h"

namespace ladder::server {

DatabaseLock::~DatabaseLock() {
  if (fd_ >= 0) ::close(fd_);
}

void DatabaseLock::CheckDirectory(const std::string& path) {
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!dir.empty() && !std::filesystem::is_directory(dir, ec)) {
    throw std::runtime_error("--db " + path + ": the directory " + dir.string() + " does not exist");
  }
}

void DatabaseLock::Acquire(const std::string& path) {
  CheckDirectory(path);
  std::error_code ec;
  created_ = !std::filesystem::exists(path, ec);
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd_ < 0) throw std::runtime_error("--db " + path + ": cannot open: " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    created_ = false;
    throw std::runtime_error("--db " + path + ": " +
                             (err == EWOULDBLOCK ? std::string("in use by another coordinator (ladder-server, ladder "
                                                               "up or ladder demo); one database per coordinator")
                                                 : std::string("cannot lock: ") + std::strerror(err)));
  }
}

Server::Server(ServerOptions options) : opt_(std::move(options)) {}

Server::~Server() { Stop(); }

std::string Server::address() const {
  auto colon = opt_.listen.rfind(':');
  return opt_.listen.substr(0, colon) + ":" + std::to_string(port_);
}

void Server::Start() {
  CheckListenSettings();
  if (!opt_.read_only) lock_.Acquire(opt_.db_path);
  OpenStore();
  StartLoop();
  StartGrpc();
  if (!opt_.http_listen.empty()) StartDashboard();
  LogInfo("server",
          "listening on " + address() + ", database " + opt_.db_path + (opt_.read_only ? " (read-only)" : ""));
}

void Server::CheckListenSettings() const {
  // Refused before anything is created: plaintext on a network others share.
  if (std::string err = PlaintextListenError(opt_.listen, !opt_.tls.cert.empty(), opt_.insecure, "gRPC");
      !err.empty()) {
    throw std::runtime_error(err);
  }
  if (!opt_.http_listen.empty()) {
    if (std::string err = PlaintextListenError(opt_.http_listen, !opt_.tls.cert.empty(), opt_.insecure,
                                               "the web dashboard");
        !err.empty()) {
      throw std::runtime_error(err);
    }
  }
  if (std::string err = TlsFilesError(opt_.tls, /*server=*/true); !err.empty()) throw std::runtime_error(err);
  if (std::string w = EphemeralOverlapWarning(opt_.coordinator.rendezvous_port_base, opt_.coordinator.rendezvous_port_span);
      !w.empty()) {
    LogWarning("server", w);
  }
}

void Server::RemoveCreatedDatabase() {
  if (opt_.read_only || !lock_.created()) return;
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(opt_.db_path + suffix, ec);
}

void Server::OpenStore() {
  try {
    store_ = std::make_unique<store::Store>(opt_.db_path, opt_.read_only ? store::OpenMode::kReadOnly
                                                                          : store::OpenMode::kReadWrite);
  } catch (const std::exception& e) {
    store_.reset();
    RemoveCreatedDatabase();
    throw std::runtime_error(std::string("cannot open the store: ") + e.what());
  }
  if (opt_.read_only) return;
  try {
    // The file lock may be node-local (Lustre, GPFS): the lease in the database is what keeps a coordinator on
    // another host off it.
    const auto until = std::chrono::steady_clock::now() + opt_.db_lease_wait;
    for (bool said = false;; said = true) {
      try {
        store_->TakeLease(opt_.db_lease_timeout);
        break;
      } catch (const store::LeaseHeld& e) {
        if (std::chrono::steady_clock::now() >= until) throw;
        if (!said) LogWarning("server", std::string("waiting for the lease: ") + e.what());
        std::this_thread::sleep_for(std::chrono::milliseconds(500));  // start-up only: the row is read again
      }
    }
  } catch (...) {
    store_.reset();
    RemoveCreatedDatabase();
    throw;
  }
}

void Server::StartLoop() {
  access_ = std::make_unique<AccessControl>(opt_.token);
  open_streams_ = std::make_unique<OpenStreams>();
  // A token's end (revoked, expired) ends the gRPC streams opened with it, on the loop that owns them.
  streams_subscription_ = access_->Subscribe([this](const std::string& sha256, const std::string& why) {
    boost::asio::post(loop_, [this, sha256, why] {
      if (int n = open_streams_->CloseAll(sha256, why); n > 0) {
        LogInfo("server", "closed " + std::to_string(n) + " stream(s) of token " + sha256.substr(0, 12) + ": " + why);
      }
    });
  });
  tokens_ = std::make_unique<TokenAdmin>(*store_, *access_, loop_);
  tokens_->Load();
  coord_ = std::make_unique<Coordinator>(loop_, *store_, opt_.coordinator);
  work_ = std::make_unique<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>>(
      loop_.get_executor());
  // Recover state before anything can call in.
  coord_->Start();
  loop_thread_ = StartLoopThread(loop_, "server");
}

void Server::StartGrpc() {
  ladder_service_ = std::make_unique<LadderService>(loop_, *coord_, *access_, *tokens_, *open_streams_);
  worker_service_ = std::make_unique<WorkerServiceImpl>(loop_, *coord_, *access_, *open_streams_);
  // gRPC's mutexes are abseil's, and this system's abseil is built with their deadlock detection on: a lock-order
  // graph kept on every lock, 7% of the coordinator's CPU with 4,608 workers connected (bench/fleet, perf). Off
  // wherever a coordinator serves (ladder-server, ladder up, ladder demo).
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  grpc::ServerBuilder builder;
  // gRPC shares ports by default (SO_REUSEPORT): a second coordinator on the same port would split the calls.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort(opt_.listen, MakeServerCredentials(opt_.tls), &port_);
  builder.RegisterService(ladder_service_.get());
  builder.RegisterService(worker_service_.get());
  builder.SetMaxReceiveMessageSize(16 * 1024 * 1024);
  grpc_ = builder.BuildAndStart();
  if (!grpc_ || port_ == 0) {
    Stop();
    coord_.reset();
    store_.reset();
    RemoveCreatedDatabase();
    throw std::runtime_error("cannot listen on " + opt_.listen + " (address in use or invalid?)");
  }
}

void Server::StartDashboard() {
  HttpOptions ho;
  ho.listen = opt_.http_listen;
  ho.access = access_.get();
  ho.tls = opt_.tls;
  ho.db_path = opt_.db_path;
  ho.max_queued_bytes = opt_.http_max_queued_bytes;
  ho.sessions = opt_.http_sessions;
  ho.clock = opt_.http_clock;
  http_ = std::make_unique<HttpServer>(ho, loop_, *coord_);
  try {
    http_->Start();
  } catch (...) {
    http_.reset();
    Stop();
    coord_.reset();
    store_.reset();
    RemoveCreatedDatabase();
    throw;
  }
  LogInfo("server", "web dashboard on " + http_->url());
}

std::string Server::dashboard_url() const { return http_ ? http_->url() : ""; }

int Server::PauseAndWait(const std::string& reason, std::chrono::milliseconds timeout) {
  // On the loop: a running trial's stop is its exits, which arrive there; this thread only asks how many are left.
  auto ask = [this](std::function<int()> f) {
    std::promise<int> p;
    auto fut = p.get_future();
    boost::asio::post(loop_, [&p, &f] { p.set_value(f()); });
    return fut.get();
  };
  int running = ask([&] { return coord_->Pause(reason); });
  for (auto until = std::chrono::steady_clock::now() + timeout; running > 0 && std::chrono::steady_clock::now() < until;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    running = ask([this] { return coord_->RunningTrials(); });
  }
  return running;
}

void Server::Stop() {
  if (stopped_) return;
  stopped_ = true;
  if (http_) http_->Stop();  // first: its calls post onto the loop, which must still run them
  if (grpc_) {
    // The loop keeps running so that posted handlers can finish their reactors.
    grpc_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
  }
  if (coord_ && loop_thread_.joinable()) {
    std::promise<void> done;
    boost::asio::post(loop_, [&] {
      coord_->Stop();
      if (tokens_) tokens_->Stop();
      done.set_value();
    });
    done.get_future().wait();
  } else if (tokens_) {
    tokens_->Stop();
  }
  if (access_ && streams_subscription_) access_->Unsubscribe(streams_subscription_);
  if (grpc_) grpc_->Wait();
  // Let the loop drain (reactors' OnDone handlers free them there), then end.
  work_.reset();
  if (loop_thread_.joinable()) loop_thread_.join();
  grpc_.reset();
  // After the last commit; a coordinator whose database failed writes nothing more (its lease expires).
  if (store_ && coord_ && !coord_->failed()) store_->ReleaseLease();
}

void Server::Wait() {
  if (grpc_) grpc_->Wait();
}

}  // namespace ladder::server
