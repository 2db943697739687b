#include "server/grpc_services.h"
#include "server/store/sqlite_db.h"

#include <boost/asio/post.hpp>
#include <atomic>
#include <mutex>

#include "common/log.h"
#include "server/stream_writer.h"

namespace ladder::server {

namespace {

// Runs `fn` on the loop, turning an exception (a store failure) into INTERNAL.
grpc::Status Guarded(const std::function<grpc::Status()>& fn) {
  try {
    return fn();
  } catch (const std::exception& e) {
    LogError("grpc", std::string("request failed: ") + e.what());
    return grpc::Status(grpc::StatusCode::INTERNAL, e.what());
  }
}

// The bearer token the call carries ("" when none).
std::string_view BearerOf(const grpc::CallbackServerContext* ctx) {
  const auto& md = ctx->client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) return {};
  std::string_view v(it->second.data(), it->second.size());
  constexpr std::string_view kBearer = "Bearer ";
  return v.substr(0, kBearer.size()) == kBearer ? v.substr(kBearer.size()) : std::string_view("?");
}

}  // namespace

grpc::Status Refusal(const Access& a, const std::string& call) {
  switch (a.verdict) {
    case Access::kAllowed: return grpc::Status::OK;
    case Access::kNoToken:
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          "this call needs a token: pass --token or set LADDER_TOKEN (ladder up writes the "
                          "coordinator's admin token next to the database, in <db>.token; ladder tokens create "
                          "makes viewer and worker tokens)");
    case Access::kUnknownToken:
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          "the token was rejected: it is not one of this server's (its admin token is in <db>.token "
                          "next to its database, or its --token-file; `ladder tokens list` shows the others)");
    case Access::kRevoked: return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, RevokedMessage());
    case Access::kExpired: return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, ExpiredMessage(a.expires_unix));
    case Access::kWrongRole:
      if (a.role == v1::TOKEN_ROLE_WORKER) {
        return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                            call + " refused: a worker token may only connect a ladder-worker (the WorkerService); "
                            "use a viewer or admin token");
      }
      if (call == "Connect") {
        return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                            "a " + RoleName(a.role) + " token cannot connect a worker: give ladder-worker a worker "
                            "token (ladder tokens create --role worker) or the admin token");
      }
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                          call + " refused: a " + RoleName(a.role) + " token may only read; it needs an admin token");
  }
  return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, call + " refused");
}

namespace {

// Streams events to one Watch caller. The coordinator pushes from its loop; gRPC completes writes on its own
// threads; a mutex orders the two. Under overload, metric events are dropped (state events never are), so
// memory stays bounded. Filed in OpenStreams under its token: the token's end finishes it UNAUTHENTICATED.
class WatchReactor final : public grpc::ServerWriteReactor<v1::Event> {
 public:
  static constexpr size_t kMaxQueued = 10000;

  WatchReactor(boost::asio::io_context& loop, Coordinator& coord, const v1::WatchRequest& req, OpenStreams& streams,
               const AccessControl& access, std::string token_sha256)
      : loop_(loop),
        coord_(coord),
        streams_(streams),
        writer_([this](const v1::Event* ev) { StartWrite(ev); }, [this](const grpc::Status& st) { Finish(st); }) {
    // Runs on the loop. The reactor cannot be freed meanwhile: OnDone frees it from a handler posted later.
    boost::asio::post(loop_, [this, req, &access, token_sha256 = std::move(token_sha256)] {
      {
        std::lock_guard<std::mutex> g(mu_);
        if (done_) return;  // the call ended before it was registered
      }
      if (!token_sha256.empty()) {
        // The token may have ended since the call was let in; from here on its end reaches this stream.
        if (const Access a = access.CheckHash(token_sha256, Need::kRead); !a.allowed()) {
          return Close(Refusal(a, "Watch"));
        }
        streams_.Add(this, token_sha256, [this](const grpc::Status& st) { Close(st); });
      }
      // AddWatcher calls the sink at once with the snapshot (Push takes mu_ itself).
      watcher_id_ = coord_.AddWatcher(req, [this](const v1::Event& ev) { Push(ev); });
    });
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> g(mu_);
    writer_.WriteDone(ok);
  }

  void OnCancel() override {
    std::lock_guard<std::mutex> g(mu_);
    writer_.Finish(grpc::Status::CANCELLED);
  }

  void OnDone() override {
    {
      std::lock_guard<std::mutex> g(mu_);
      done_ = true;
    }
    // Unregister on the loop, then free: the sink is never called after RemoveWatcher.
    boost::asio::post(loop_, [this] {
      streams_.Remove(this);
      if (watcher_id_) coord_.RemoveWatcher(watcher_id_);
      delete this;
    });
  }

 private:
  // Ends the stream with `st` (on the loop: the token ended).
  void Close(const grpc::Status& st) {
    std::lock_guard<std::mutex> g(mu_);
    writer_.Finish(st);
  }
  void Push(const v1::Event& ev) {
    std::lock_guard<std::mutex> g(mu_);
    if (writer_.queued() >= kMaxQueued && ev.kind() == v1::Event::TRIAL_METRICS) return;
    writer_.Push(ev);
  }

  boost::asio::io_context& loop_;
  Coordinator& coord_;
  OpenStreams& streams_;
  std::mutex mu_;
  StreamWriter<v1::Event> writer_;  // under mu_
  bool done_ = false;
  int64_t watcher_id_ = 0;
};

// One worker's stream. Each message read is handed to the loop, and the next read starts only once the loop
// has handled it (ReadNext): at most one message per worker is waiting, and a worker that sends faster than
// the coordinator stores is held back by gRPC flow control (its Write blocks), so memory stays bounded.
// Writes are queued (Send is thread-safe; they are small: assignments, cancels, acknowledgements). The link
// object outlives the reactor (the coordinator may hold it); after OnDone it drops everything.
class WorkerReactor;

class ReactorLink final : public WorkerLink {
 public:
  explicit ReactorLink(WorkerReactor* r) : reactor_(r) {}
  void Send(const v1::CoordinatorMessage& msg) override;
  void Close(const grpc::Status& status) override;
  bool IsClosed() const override { return closed_.load(); }
  // Starts the next read (after the loop handled the last message).
  void ReadNext();
  void Detach() {
    std::lock_guard<std::mutex> g(mu_);
    reactor_ = nullptr;
  }

 private:
  std::mutex mu_;
  WorkerReactor* reactor_;
  std::atomic<bool> closed_{false};
};

class WorkerReactor final : public grpc::ServerBidiReactor<v1::WorkerMessage, v1::CoordinatorMessage> {
 public:
  // Filed in OpenStreams under its token (on the loop): the token's end closes the stream and the coordinator
  // takes the node down without counting a failure (Coordinator::OnWorkerTokenEnded).
  WorkerReactor(boost::asio::io_context& loop, Coordinator& coord, OpenStreams& streams, const AccessControl& access,
                std::string token_sha256)
      : loop_(loop),
        coord_(coord),
        streams_(streams),
        link_(std::make_shared<ReactorLink>(this)),
        writer_([this](const v1::CoordinatorMessage* m) { StartWrite(m); },
                [this](const grpc::Status& st) { Finish(st); }) {
    if (!token_sha256.empty()) {
      boost::asio::post(loop_, [coord = &coord_, streams = &streams_, access = &access, link = link_,
                                token_sha256 = std::move(token_sha256)] {
        // The token may have ended since the call was let in; from here on its end reaches this stream.
        if (const Access a = access->CheckHash(token_sha256, Need::kWorker); !a.allowed()) {
          return coord->OnWorkerTokenEnded(link, Refusal(a, "Connect"));
        }
        streams->Add(link.get(), token_sha256,
                     [coord, link](const grpc::Status& st) { coord->OnWorkerTokenEnded(link, st); });
      });
    }
    StartRead(&in_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      boost::asio::post(loop_, [coord = &coord_, link = link_] { coord->OnWorkerGone(link, "stream closed"); });
      std::lock_guard<std::mutex> g(mu_);
      writer_.Finish(grpc::Status::OK);
      return;
    }
    boost::asio::post(loop_, [coord = &coord_, link = link_, msg = std::move(in_)] {
      coord->OnWorkerMessage(link, msg);
      link->ReadNext();
    });
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> g(mu_);
    writer_.WriteDone(ok);
  }

  void OnCancel() override {
    std::lock_guard<std::mutex> g(mu_);
    writer_.Finish(grpc::Status::CANCELLED);
  }

  void OnDone() override {
    link_->Detach();
    boost::asio::post(loop_, [coord = &coord_, streams = &streams_, link = link_] {
      streams->Remove(link.get());
      coord->OnWorkerGone(link, "stream ended");
    });
    delete this;
  }

  // Called through ReactorLink, under its mutex, so the reactor is alive. A start or a cancel goes ahead of the
  // acknowledgements still queued behind the write in flight: the worker waits on it, while an acknowledgement only
  // lets it forget (and a run's acknowledgement after its new start is ignored by epoch). Nothing else is reordered.
  void Send(const v1::CoordinatorMessage& msg) {
    std::lock_guard<std::mutex> g(mu_);
    writer_.Push(msg, msg.has_start() || msg.has_cancel() ? &IsAck : nullptr);
  }
  void Close(const grpc::Status& st) {
    std::lock_guard<std::mutex> g(mu_);
    writer_.Finish(st);
  }
  // No read is outstanding here (OnReadDone posted the message and started none).
  void ReadNext() {
    std::lock_guard<std::mutex> g(mu_);
    if (writer_.finishing()) return;
    in_.Clear();
    StartRead(&in_);
  }

 private:
  static bool IsAck(const v1::CoordinatorMessage& m) { return m.has_ack(); }

  boost::asio::io_context& loop_;
  Coordinator& coord_;
  OpenStreams& streams_;
  std::shared_ptr<ReactorLink> link_;
  v1::WorkerMessage in_;
  std::mutex mu_;
  StreamWriter<v1::CoordinatorMessage> writer_;  // under mu_
};

void ReactorLink::Send(const v1::CoordinatorMessage& msg) {
  std::lock_guard<std::mutex> g(mu_);
  if (reactor_) reactor_->Send(msg);
}
void ReactorLink::Close(const grpc::Status& status) {
  std::lock_guard<std::mutex> g(mu_);
  closed_ = true;
  if (reactor_) reactor_->Close(status);
}
void ReactorLink::ReadNext() {
  std::lock_guard<std::mutex> g(mu_);
  if (reactor_) reactor_->ReadNext();
}

// Finishes a reactor that was refused before any read started.
class RefusedStream final : public grpc::ServerBidiReactor<v1::WorkerMessage, v1::CoordinatorMessage> {
 public:
  explicit RefusedStream(const grpc::Status& st) { Finish(st); }
  void OnDone() override { delete this; }
};

// The same for a Watch call refused before it starts.
class RefusedWriter final : public grpc::ServerWriteReactor<v1::Event> {
 public:
  explicit RefusedWriter(const grpc::Status& st) { Finish(st); }
  void OnDone() override { delete this; }
};

}  // namespace

Access LadderService::Check(const grpc::CallbackServerContext* ctx, Need need) const {
  return access_.Check(BearerOf(ctx), need);
}

grpc::ServerUnaryReactor* LadderService::OnLoop(grpc::CallbackServerContext* ctx, const char* call, Need need,
                                                std::function<grpc::Status()> fn) {
  auto* reactor = ctx->DefaultReactor();
  if (const Access a = Check(ctx, need); !a.allowed()) {
    reactor->Finish(Refusal(a, call));
    return reactor;
  }
  boost::asio::post(loop_, [this, reactor, fn = std::move(fn)] {
    reactor->Finish(Guarded([&] {
      if (coord_.failed()) {
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the coordinator's database failed; it has stopped");
      }
      try {
        return fn();
      } catch (const store::SqliteError& e) {
        coord_.Fatal(e.what());
        return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                            std::string("the coordinator's database failed (") + e.what() + "); it has stopped");
      }
    }));
  });
  return reactor;
}

template <typename Req, typename Resp>
grpc::ServerUnaryReactor* LadderService::Unary(grpc::CallbackServerContext* ctx, const char* call, Need need,
                                               const Req* req, Resp* resp,
                                               grpc::Status (Coordinator::*method)(const Req&, Resp*)) {
  return OnLoop(ctx, call, need, [this, req, resp, method] {
    // Through a const pointer, not (coord_.*method)(...): GCC 12 with -fsanitize=vptr miscompiles that call when
    // `method` is not virtual (the object's address comes from a register only the virtual branch sets: a SEGV
    // under scripts/sanitize.sh asan, every unary call).
    Coordinator* const coord = &coord_;
    return (coord->*method)(*req, resp);
  });
}

grpc::ServerUnaryReactor* LadderService::ServerInfo(grpc::CallbackServerContext* ctx,
                                                    const v1::ServerInfoRequest* req, v1::ServerInfoResponse* resp) {
  return Unary(ctx, "ServerInfo", Need::kRead, req, resp, &Coordinator::ServerInfo);
}
grpc::ServerUnaryReactor* LadderService::ReleaseNode(grpc::CallbackServerContext* ctx,
                                                     const v1::ReleaseNodeRequest* req, v1::ReleaseNodeResponse* resp) {
  return Unary(ctx, "ReleaseNode", Need::kWrite, req, resp, &Coordinator::ReleaseNode);
}
grpc::ServerUnaryReactor* LadderService::CreateSearch(grpc::CallbackServerContext* ctx,
                                                      const v1::CreateSearchRequest* req,
                                                      v1::CreateSearchResponse* resp) {
  return Unary(ctx, "CreateSearch", Need::kWrite, req, resp, &Coordinator::CreateSearch);
}
grpc::ServerUnaryReactor* LadderService::ListSearches(grpc::CallbackServerContext* ctx,
                                                      const v1::ListSearchesRequest* req,
                                                      v1::ListSearchesResponse* resp) {
  return Unary(ctx, "ListSearches", Need::kRead, req, resp, &Coordinator::ListSearches);
}
grpc::ServerUnaryReactor* LadderService::GetSearch(grpc::CallbackServerContext* ctx, const v1::GetSearchRequest* req,
                                                   v1::GetSearchResponse* resp) {
  return Unary(ctx, "GetSearch", Need::kRead, req, resp, &Coordinator::GetSearch);
}
grpc::ServerUnaryReactor* LadderService::CancelSearch(grpc::CallbackServerContext* ctx,
                                                      const v1::CancelSearchRequest* req,
                                                      v1::CancelSearchResponse* resp) {
  return Unary(ctx, "CancelSearch", Need::kWrite, req, resp, &Coordinator::CancelSearch);
}

grpc::ServerUnaryReactor* LadderService::AddProbe(grpc::CallbackServerContext* ctx, const v1::AddProbeRequest* req,
                                                  v1::AddProbeResponse* resp) {
  return Unary(ctx, "AddProbe", Need::kWrite, req, resp, &Coordinator::AddProbe);
}

grpc::ServerUnaryReactor* LadderService::EnqueueTrial(grpc::CallbackServerContext* ctx,
                                                      const v1::EnqueueTrialRequest* req,
                                                      v1::EnqueueTrialResponse* resp) {
  return Unary(ctx, "EnqueueTrial", Need::kWrite, req, resp, &Coordinator::EnqueueTrial);
}
grpc::ServerUnaryReactor* LadderService::ListTrials(grpc::CallbackServerContext* ctx,
                                                    const v1::ListTrialsRequest* req, v1::ListTrialsResponse* resp) {
  return Unary(ctx, "ListTrials", Need::kRead, req, resp, &Coordinator::ListTrials);
}
grpc::ServerUnaryReactor* LadderService::GetTrial(grpc::CallbackServerContext* ctx, const v1::GetTrialRequest* req,
                                                  v1::GetTrialResponse* resp) {
  return Unary(ctx, "GetTrial", Need::kRead, req, resp, &Coordinator::GetTrial);
}

grpc::ServerWriteReactor<v1::Event>* LadderService::Watch(grpc::CallbackServerContext* ctx,
                                                          const v1::WatchRequest* req) {
  const Access a = Check(ctx, Need::kRead);
  if (!a.allowed()) return new RefusedWriter(Refusal(a, "Watch"));
  return new WatchReactor(loop_, coord_, *req, streams_, access_, a.sha256);
}

grpc::ServerUnaryReactor* LadderService::CreateToken(grpc::CallbackServerContext* ctx,
                                                     const v1::CreateTokenRequest* req,
                                                     v1::CreateTokenResponse* resp) {
  return OnLoop(ctx, "CreateToken", Need::kWrite, [this, req, resp] {
    return coord_.read_only() ? ReadOnlyRefusal("CreateToken", coord_.db_path()) : tokens_.Create(*req, resp);
  });
}
grpc::ServerUnaryReactor* LadderService::RevokeToken(grpc::CallbackServerContext* ctx,
                                                     const v1::RevokeTokenRequest* req,
                                                     v1::RevokeTokenResponse* resp) {
  return OnLoop(ctx, "RevokeToken", Need::kWrite, [this, req, resp] {
    return coord_.read_only() ? ReadOnlyRefusal("RevokeToken", coord_.db_path()) : tokens_.Revoke(*req, resp);
  });
}
grpc::ServerUnaryReactor* LadderService::ListTokens(grpc::CallbackServerContext* ctx,
                                                    const v1::ListTokensRequest* req, v1::ListTokensResponse* resp) {
  return OnLoop(ctx, "ListTokens", Need::kWrite, [this, req, resp] { return tokens_.List(*req, resp); });
}

grpc::ServerBidiReactor<v1::WorkerMessage, v1::CoordinatorMessage>* WorkerServiceImpl::Connect(
    grpc::CallbackServerContext* ctx) {
  const Access a = access_.Check(BearerOf(ctx), Need::kWorker);
  if (!a.allowed()) {
    return new RefusedStream(a.verdict == Access::kNoToken
                                 ? grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                                                "a worker needs a token: ladder-worker --token-file <db>.token (or a "
                                                "worker token from `ladder tokens create --role worker`), or set "
                                                "LADDER_TOKEN")
                                 : Refusal(a, "Connect"));
  }
  if (coord_.read_only()) {  // a worker's registration is a write, and this coordinator runs no trial
    return new RefusedStream(grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                                          ReadOnlyRefusal("a worker's Connect", coord_.db_path()).error_message()));
  }
  return new WorkerReactor(loop_, coord_, streams_, access_, a.sha256);
}

}  // namespace ladder::server
