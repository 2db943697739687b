#include "server/grpc_services.h"
#include "server/store/sqlite_db.h"

#include <boost/asio/post.hpp>
#include <deque>
#include <mutex>

#include "common/log.h"

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

// The refusal says whether a token came at all: a wrong one is not fixed by "pass --token".
grpc::Status Unauthenticated(const grpc::CallbackServerContext* ctx) {
  if (ctx->client_metadata().count("authorization") > 0) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "the token was rejected: it is not this server's (the server's is in <db>.token next to its "
                        "database, or its --token-file)");
  }
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                      "this call needs the server's token: pass --token or set LADDER_TOKEN "
                      "(ladder up writes it next to the database, in <db>.token)");
}

// Streams events to one Watch caller. The coordinator pushes from its loop; gRPC completes writes on its own
// threads; a mutex orders the two. Under overload, metric events are dropped (state events never are), so
// memory stays bounded.
class WatchReactor final : public grpc::ServerWriteReactor<v1::Event> {
 public:
  static constexpr size_t kMaxQueued = 10000;

  WatchReactor(boost::asio::io_context& loop, Coordinator& coord, const v1::WatchRequest& req)
      : loop_(loop), coord_(coord) {
    // Runs on the loop. The reactor cannot be freed meanwhile: OnDone frees it from a handler posted later.
    boost::asio::post(loop_, [this, req] {
      {
        std::lock_guard<std::mutex> g(mu_);
        if (done_) return;  // the call ended before it was registered
      }
      // AddWatcher calls the sink at once with the snapshot (Push takes mu_ itself).
      watcher_id_ = coord_.AddWatcher(req, [this](const v1::Event& ev) { Push(ev); });
    });
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> g(mu_);
    writing_ = false;
    if (!queue_.empty()) queue_.pop_front();
    if (!ok) FinishLocked(grpc::Status::OK);
    if (finished_) {
      if (!status_sent_) {
        status_sent_ = true;
        Finish(final_status_);
      }
      return;
    }
    WriteNextLocked();
  }

  void OnCancel() override {
    std::lock_guard<std::mutex> g(mu_);
    FinishLocked(grpc::Status::CANCELLED);
  }

  void OnDone() override {
    {
      std::lock_guard<std::mutex> g(mu_);
      done_ = true;
    }
    // Unregister on the loop, then free: the sink is never called after RemoveWatcher.
    boost::asio::post(loop_, [this] {
      if (watcher_id_) coord_.RemoveWatcher(watcher_id_);
      delete this;
    });
  }

 private:
  void Push(const v1::Event& ev) {
    std::lock_guard<std::mutex> g(mu_);
    if (finished_) return;
    if (queue_.size() >= kMaxQueued && ev.kind() == v1::Event::TRIAL_METRICS) return;
    queue_.push_back(ev);
    if (!writing_) WriteNextLocked();
  }
  void WriteNextLocked() {
    if (finished_ || writing_ || queue_.empty()) return;
    writing_ = true;
    StartWrite(&queue_.front());
  }
  // Finishes now, or when the write in flight completes (OnWriteDone).
  void FinishLocked(const grpc::Status& st) {
    if (finished_) return;
    finished_ = true;
    final_status_ = st;
    if (!writing_ && !status_sent_) {
      status_sent_ = true;
      Finish(st);
    }
  }

  boost::asio::io_context& loop_;
  Coordinator& coord_;
  std::mutex mu_;
  std::deque<v1::Event> queue_;
  grpc::Status final_status_;
  bool writing_ = false, finished_ = false, done_ = false, status_sent_ = false;
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
  // Starts the next read (after the loop handled the last message).
  void ReadNext();
  void Detach() {
    std::lock_guard<std::mutex> g(mu_);
    reactor_ = nullptr;
  }

 private:
  std::mutex mu_;
  WorkerReactor* reactor_;
};

class WorkerReactor final : public grpc::ServerBidiReactor<v1::WorkerMessage, v1::CoordinatorMessage> {
 public:
  WorkerReactor(boost::asio::io_context& loop, Coordinator& coord)
      : loop_(loop), coord_(coord), link_(std::make_shared<ReactorLink>(this)) {
    StartRead(&in_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      boost::asio::post(loop_, [coord = &coord_, link = link_] { coord->OnWorkerGone(link, "stream closed"); });
      std::lock_guard<std::mutex> g(mu_);
      FinishLocked(grpc::Status::OK);
      return;
    }
    boost::asio::post(loop_, [coord = &coord_, link = link_, msg = std::move(in_)] {
      coord->OnWorkerMessage(link, msg);
      link->ReadNext();
    });
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> g(mu_);
    writing_ = false;
    if (!out_.empty()) out_.pop_front();
    if (!ok) FinishLocked(grpc::Status::OK);
    if (finish_requested_) {
      if (!finished_) {
        finished_ = true;
        Finish(pending_status_);
      }
      return;
    }
    WriteNextLocked();
  }

  void OnCancel() override {
    std::lock_guard<std::mutex> g(mu_);
    FinishLocked(grpc::Status::CANCELLED);
  }

  void OnDone() override {
    link_->Detach();
    boost::asio::post(loop_, [coord = &coord_, link = link_] { coord->OnWorkerGone(link, "stream ended"); });
    delete this;
  }

  // Called through ReactorLink, under its mutex, so the reactor is alive.
  void Send(const v1::CoordinatorMessage& msg) {
    std::lock_guard<std::mutex> g(mu_);
    if (finish_requested_) return;
    out_.push_back(msg);
    WriteNextLocked();
  }
  void Close(const grpc::Status& st) {
    std::lock_guard<std::mutex> g(mu_);
    FinishLocked(st);
  }
  // No read is outstanding here (OnReadDone posted the message and started none).
  void ReadNext() {
    std::lock_guard<std::mutex> g(mu_);
    if (finish_requested_) return;
    in_.Clear();
    StartRead(&in_);
  }

 private:
  void WriteNextLocked() {
    if (writing_ || out_.empty() || finish_requested_) return;
    writing_ = true;
    StartWrite(&out_.front());
  }
  // Finishes once the queued writes are out (or at once if a write failed).
  void FinishLocked(const grpc::Status& st) {
    if (finish_requested_) return;
    finish_requested_ = true;
    pending_status_ = st;
    if (writing_) return;  // OnWriteDone finishes once the write in flight completes
    finished_ = true;
    Finish(st);
  }

  boost::asio::io_context& loop_;
  Coordinator& coord_;
  std::shared_ptr<ReactorLink> link_;
  v1::WorkerMessage in_;
  std::mutex mu_;
  std::deque<v1::CoordinatorMessage> out_;
  bool writing_ = false, finished_ = false, finish_requested_ = false;
  grpc::Status pending_status_;

};

void ReactorLink::Send(const v1::CoordinatorMessage& msg) {
  std::lock_guard<std::mutex> g(mu_);
  if (reactor_) reactor_->Send(msg);
}
void ReactorLink::Close(const grpc::Status& status) {
  std::lock_guard<std::mutex> g(mu_);
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

bool Authorized(const grpc::CallbackServerContext* ctx, const std::string& token) {
  if (token.empty()) return true;
  const auto& md = ctx->client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) return false;
  std::string_view v(it->second.data(), it->second.size());
  std::string expected = "Bearer " + token;
  if (v.size() != expected.size()) return false;
  unsigned diff = 0;  // constant time
  for (size_t i = 0; i < v.size(); ++i) diff |= static_cast<unsigned>(v[i] ^ expected[i]);
  return diff == 0;
}

template <typename Req, typename Resp>
grpc::ServerUnaryReactor* LadderService::Unary(grpc::CallbackServerContext* ctx, const Req* req, Resp* resp,
                                               grpc::Status (Coordinator::*method)(const Req&, Resp*),
                                               bool needs_token) {
  auto* reactor = ctx->DefaultReactor();
  if (needs_token && !Authorized(ctx, token_)) {
    reactor->Finish(Unauthenticated(ctx));
    return reactor;
  }
  boost::asio::post(loop_, [this, req, resp, reactor, method] {
    reactor->Finish(Guarded([&] {
      if (coord_.failed()) {
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the coordinator's database failed; it has stopped");
      }
      try {
        return (coord_.*method)(*req, resp);
      } catch (const store::SqliteError& e) {
        coord_.Fatal(e.what());
        return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                            std::string("the coordinator's database failed (") + e.what() + "); it has stopped");
      }
    }));
  });
  return reactor;
}

grpc::ServerUnaryReactor* LadderService::ServerInfo(grpc::CallbackServerContext* ctx,
                                                    const v1::ServerInfoRequest* req, v1::ServerInfoResponse* resp) {
  return Unary(ctx, req, resp, &Coordinator::ServerInfo, true);
}
grpc::ServerUnaryReactor* LadderService::ReleaseNode(grpc::CallbackServerContext* ctx,
                                                     const v1::ReleaseNodeRequest* req, v1::ReleaseNodeResponse* resp) {
  return Unary(ctx, req, resp, &Coordinator::ReleaseNode, true);
}
grpc::ServerUnaryReactor* LadderService::CreateSearch(grpc::CallbackServerContext* ctx,
                                                      const v1::CreateSearchRequest* req,
                                                      v1::CreateSearchResponse* resp) {
  return Unary(ctx, req, resp, &Coordinator::CreateSearch, true);
}
grpc::ServerUnaryReactor* LadderService::ListSearches(grpc::CallbackServerContext* ctx,
                                                      const v1::ListSearchesRequest* req,
                                                      v1::ListSearchesResponse* resp) {
  return Unary(ctx, req, resp, &Coordinator::ListSearches, true);
}
grpc::ServerUnaryReactor* LadderService::GetSearch(grpc::CallbackServerContext* ctx, const v1::GetSearchRequest* req,
                                                   v1::GetSearchResponse* resp) {
  return Unary(ctx, req, resp, &Coordinator::GetSearch, true);
}
grpc::ServerUnaryReactor* LadderService::CancelSearch(grpc::CallbackServerContext* ctx,
                                                      const v1::CancelSearchRequest* req,
                                                      v1::CancelSearchResponse* resp) {
  return Unary(ctx, req, resp, &Coordinator::CancelSearch, true);
}
grpc::ServerUnaryReactor* LadderService::ListTrials(grpc::CallbackServerContext* ctx,
                                                    const v1::ListTrialsRequest* req, v1::ListTrialsResponse* resp) {
  return Unary(ctx, req, resp, &Coordinator::ListTrials, true);
}
grpc::ServerUnaryReactor* LadderService::GetTrial(grpc::CallbackServerContext* ctx, const v1::GetTrialRequest* req,
                                                  v1::GetTrialResponse* resp) {
  return Unary(ctx, req, resp, &Coordinator::GetTrial, true);
}

grpc::ServerWriteReactor<v1::Event>* LadderService::Watch(grpc::CallbackServerContext* ctx,
                                                          const v1::WatchRequest* req) {
  if (!Authorized(ctx, token_)) return new RefusedWriter(Unauthenticated(ctx));
  return new WatchReactor(loop_, coord_, *req);
}

grpc::ServerBidiReactor<v1::WorkerMessage, v1::CoordinatorMessage>* WorkerServiceImpl::Connect(
    grpc::CallbackServerContext* ctx) {
  if (!Authorized(ctx, token_)) {
    return new RefusedStream(ctx->client_metadata().count("authorization") > 0
                                 ? Unauthenticated(ctx)
                                 : grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                                                "a worker needs the server's token: ladder-worker --token-file "
                                                "<db>.token, or set LADDER_TOKEN"));
  }
  return new WorkerReactor(loop_, coord_);
}

}  // namespace ladder::server
