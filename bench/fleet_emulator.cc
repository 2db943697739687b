#include "bench/fleet_emulator.h"

#include <boost/asio/post.hpp>
#include <cstdio>
#include <deque>
#include <future>
#include <mutex>

#include "common/wall_clock.h"
#include "worker/reconnect_backoff.h"

namespace ladder::bench {

namespace v1 = ::ladder::v1;

// One stream of one worker: the gRPC callback reactor. Reads are posted to the loop; writes are queued (any
// thread). Alive until OnDone has been handled on the loop (the worker holds it; `self_` holds it until then).
class WorkerSession final : public grpc::ClientBidiReactor<v1::WorkerMessage, v1::CoordinatorMessage> {
 public:
  WorkerSession(Fleet& fleet, EmulatedWorker* worker) : fleet_(fleet), worker_(worker) {}
  void Begin(v1::WorkerService::Stub& stub, std::shared_ptr<WorkerSession> self, const v1::WorkerMessage& reg);
  void Write(const v1::WorkerMessage& m) {
    std::lock_guard<std::mutex> g(mu_);
    if (done_) return;
    out_.push_back(m);
    if (!writing_) {
      writing_ = true;
      StartWrite(&out_.front());
    }
  }
  void Cancel() { ctx_.TryCancel(); }
  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> g(mu_);
    out_.pop_front();
    writing_ = false;
    if (!ok) {
      done_ = true;  // the stream is broken: the read fails too, and OnDone follows
      return;
    }
    if (!out_.empty() && !done_) {
      writing_ = true;
      StartWrite(&out_.front());
    }
  }
  void OnReadDone(bool ok) override;
  void OnDone(const grpc::Status& st) override;
  bool got_any = false;  // loop only

 private:
  Fleet& fleet_;
  EmulatedWorker* worker_;
  grpc::ClientContext ctx_;
  v1::CoordinatorMessage in_;
  std::mutex mu_;
  std::deque<v1::WorkerMessage> out_;
  bool writing_ = false, done_ = false;
  std::shared_ptr<WorkerSession> self_;
};

// One emulated node. Loop only.
class EmulatedWorker {
 public:
  EmulatedWorker(Fleet& fleet, int index)
      : fleet_(fleet),
        heartbeat_(fleet.loop_),
        reconnect_(fleet.loop_),
        backoff_(fleet.opt_.reconnect_initial, fleet.opt_.reconnect_max, worker::kDefaultReconnectStableAfter,
                 static_cast<uint64_t>(index) * 0x9e3779b97f4a7c15ull + 1) {
    char name[32];
    std::snprintf(name, sizeof name, "f%05d", index);
    node_ = name;
    std::snprintf(name, sizeof name, "r%03d", index / std::max(1, fleet.opt_.nodes_per_rack));
    rack_ = name;
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection of its own, as a worker on its own node
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, static_cast<int>(fleet.opt_.reconnect_max.count()));
    channel_ = grpc::CreateCustomChannel(fleet.opt_.address, grpc::InsecureChannelCredentials(), args);
    stub_ = v1::WorkerService::NewStub(channel_);
  }

  void Connect() {
    if (fleet_.stopping_) return;
    v1::WorkerMessage m;
    auto* reg = m.mutable_register_();
    reg->set_node_id(node_);
    auto* r = reg->mutable_resources();
    r->set_hostname(node_);
    r->set_address("127.0.0.1");
    r->set_cores(1);
    r->set_slots(1);
    r->set_memory_bytes(int64_t{1} << 30);
    (*r->mutable_labels())["rack"] = rack_;
    for (const auto& [id, run] : runs_) {
      auto* rt = reg->add_running();
      rt->set_trial_id(id);
      rt->set_assignment_epoch(run.epoch);
      rt->set_exited(run.exited);
    }
    session_ = std::make_shared<WorkerSession>(fleet_, this);
    session_since_ = std::chrono::steady_clock::now();
    ++fleet_.live_sessions_;
    session_->Begin(*stub_, session_, m);
  }

  void Cancel() {
    heartbeat_.cancel();
    reconnect_.cancel();
    for (auto& [id, run] : runs_) run.timer->cancel();
    if (session_) session_->Cancel();
  }

  void Handle(WorkerSession* s, const v1::CoordinatorMessage& m, double received_unix) {
    if (s != session_.get()) return;
    s->got_any = true;
    switch (m.body_case()) {
      case v1::CoordinatorMessage::kRegistered: {
        registered_ = true;
        ++fleet_.counters_.registered;
        ++fleet_.counters_.registrations;
        interval_ = std::chrono::milliseconds(std::max(10, m.registered().heartbeat_interval_ms()));
        for (int64_t id : m.registered().cancel_trials()) {
          auto it = runs_.find(id);
          if (it == runs_.end()) continue;
          it->second.timer->cancel();
          runs_.erase(it);
        }
        for (auto& [id, run] : runs_) {  // everything unacknowledged again, points first
          for (int k = 0; k < run.sent; ++k) SendPoint(id, run, k);
          if (run.exited) SendExit(id, run, false);
        }
        ArmHeartbeat();
        break;
      }
      case v1::CoordinatorMessage::kStart: OnStart(m.start(), received_unix); break;
      case v1::CoordinatorMessage::kCancel: {
        auto it = runs_.find(m.cancel().trial_id());
        if (it == runs_.end() || it->second.exited || it->second.epoch != m.cancel().assignment_epoch()) break;
        it->second.timer->cancel();
        it->second.exited = true;
        SendExit(it->first, it->second, true);
        break;
      }
      case v1::CoordinatorMessage::kRetryRegistration:  // refused for now: the stream ends next
        retry_after_ = std::chrono::milliseconds(m.retry_registration().retry_after_ms());
        ++fleet_.counters_.retries_told;
        break;
      case v1::CoordinatorMessage::kHeartbeatInterval:
        interval_ = std::chrono::milliseconds(std::max(10, m.heartbeat_interval().heartbeat_interval_ms()));
        ++fleet_.counters_.interval_changes;
        break;
      case v1::CoordinatorMessage::kAck:
        for (const auto& a : m.ack().trials()) {
          auto it = runs_.find(a.trial_id());
          if (it != runs_.end() && it->second.epoch == a.assignment_epoch() && a.exit_durable()) runs_.erase(it);
        }
        break;
      default: break;
    }
  }

  void Ended(WorkerSession* s, const grpc::Status& st) {
    --fleet_.live_sessions_;
    if (s != session_.get()) return;
    const bool got_any = s->got_any;
    session_.reset();
    if (registered_) --fleet_.counters_.registered;
    registered_ = false;
    heartbeat_.cancel();
    if (fleet_.stopping_) return;
    ++fleet_.counters_.stream_ends;
    if (st.error_message().find("lease expired") != std::string::npos) ++fleet_.counters_.lease_closes;
    // ladder-worker's policy (worker/reconnect_backoff.h).
    auto wait = backoff_.Next(got_any ? std::chrono::steady_clock::now() - session_since_
                                      : std::chrono::steady_clock::duration::zero());
    if (retry_after_.count() >= 0) wait = backoff_.RetryAfter(retry_after_, wait);
    retry_after_ = std::chrono::milliseconds(-1);
    reconnect_.expires_after(wait);
    reconnect_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) Connect();
    });
  }

 private:
  struct Run {
    int64_t epoch = 0;
    int sent = 0;  // points made so far (sequence numbers 0..sent-1)
    bool exited = false;
    double score = 0;
    std::unique_ptr<boost::asio::steady_timer> timer;
  };

  void Send(const v1::WorkerMessage& m) {
    if (registered_ && session_) session_->Write(m);
  }

  void OnStart(const v1::StartTrial& st, double received_unix) {
    ++fleet_.counters_.starts;
    fleet_.receipts_.push_back({st.trial_id(), received_unix});
    const int64_t id = st.trial_id();
    if (auto old = runs_.find(id); old != runs_.end()) {
      if (!old->second.exited) return;
      old->second.timer->cancel();
      runs_.erase(old);
    }
    Run& run = runs_[id];
    run.epoch = st.assignment_epoch();
    run.score = static_cast<double>((id * 2654435761u) % 1000) / 1000.0;
    run.timer = std::make_unique<boost::asio::steady_timer>(fleet_.loop_);
    v1::WorkerMessage m;
    auto* s = m.mutable_started();
    s->set_trial_id(id);
    s->set_assignment_epoch(run.epoch);
    s->set_pid(100000 + static_cast<int>(id % 100000));
    Send(m);
    Step(id, run.epoch);
  }

  // The trial's next point (or its exit once all are out), `point_interval` after the last.
  void Step(int64_t id, int64_t epoch) {
    auto it = runs_.find(id);
    if (it == runs_.end() || it->second.epoch != epoch) return;
    it->second.timer->expires_after(fleet_.opt_.point_interval);
    it->second.timer->async_wait([this, id, epoch](const boost::system::error_code& ec) {
      if (ec) return;
      auto it = runs_.find(id);
      if (it == runs_.end() || it->second.epoch != epoch || it->second.exited) return;
      Run& run = it->second;
      if (run.sent < fleet_.opt_.points) {
        SendPoint(id, run, run.sent++);
        Step(id, epoch);
      } else {
        run.exited = true;
        SendExit(id, run, false);
      }
    });
  }

  void SendPoint(int64_t id, const Run& run, int k) {
    v1::WorkerMessage m;
    auto* r = m.mutable_metrics();
    r->set_trial_id(id);
    r->set_assignment_epoch(run.epoch);
    r->set_first_seq(k);
    auto* p = r->add_points();
    p->set_step(k + 1);
    p->set_time_unix(WallNow());
    (*p->mutable_values())["score"] = run.score * (k + 1) / fleet_.opt_.points;
    Send(m);
  }

  void SendExit(int64_t id, const Run& run, bool cancelled) {
    v1::WorkerMessage m;
    auto* e = m.mutable_exited();
    e->set_trial_id(id);
    e->set_assignment_epoch(run.epoch);
    e->set_exit_code(cancelled ? 143 : 0);
    e->set_cancelled(cancelled);
    if (cancelled) e->set_error("SIGTERM");
    ++fleet_.counters_.exits_sent;
    Send(m);
  }

  void ArmHeartbeat() {
    heartbeat_.expires_after(interval_);
    heartbeat_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || !registered_) return;
      v1::WorkerMessage m;
      auto* hb = m.mutable_heartbeat();
      for (const auto& [id, run] : runs_) {
        auto* rt = hb->add_running();
        rt->set_trial_id(id);
        rt->set_assignment_epoch(run.epoch);
        rt->set_exited(run.exited);
      }
      Send(m);
      ArmHeartbeat();
    });
  }

  Fleet& fleet_;
  std::string node_, rack_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::WorkerService::Stub> stub_;
  std::shared_ptr<WorkerSession> session_;
  bool registered_ = false;
  std::chrono::milliseconds interval_{1000};
  std::chrono::milliseconds retry_after_{-1};  // told by a RetryRegistration on this session
  boost::asio::steady_timer heartbeat_, reconnect_;
  worker::ReconnectBackoff backoff_;
  std::chrono::steady_clock::time_point session_since_;
  std::map<int64_t, Run> runs_;
};

void WorkerSession::Begin(v1::WorkerService::Stub& stub, std::shared_ptr<WorkerSession> self,
                          const v1::WorkerMessage& reg) {
  self_ = std::move(self);
  ctx_.set_wait_for_ready(true);  // a call made while the channel connects waits for it, as ladder-worker does
  stub.async()->Connect(&ctx_, this);
  Write(reg);
  StartRead(&in_);
  StartCall();
}

void WorkerSession::OnReadDone(bool ok) {
  if (!ok) return;  // OnDone follows with the status
  // A start's receipt is stamped here, as gRPC hands it over, not when the emulator's loop gets to it: the
  // emulator's own queue (4,608 workers on one thread) is no part of the coordinator's latency.
  const double received = in_.has_start() ? WallNow() : 0;
  boost::asio::post(fleet_.loop_, [this, m = in_, received] { worker_->Handle(this, m, received); });
  in_.Clear();
  StartRead(&in_);
}

void WorkerSession::OnDone(const grpc::Status& st) {
  {
    std::lock_guard<std::mutex> g(mu_);
    done_ = true;
  }
  // The session stays alive until the loop has handled everything posted before this.
  boost::asio::post(fleet_.loop_, [this, st, self = std::move(self_)] { worker_->Ended(this, st); });
}

Fleet::Fleet(FleetOptions options) : opt_(std::move(options)) {
  work_ = std::make_unique<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>>(
      loop_.get_executor());
  for (int i = 0; i < opt_.workers; ++i) workers_.push_back(std::make_unique<EmulatedWorker>(*this, i));
  thread_ = std::thread([this] { loop_.run(); });
}

Fleet::~Fleet() {
  stopping_ = true;
  std::promise<void> cancelled;
  boost::asio::post(loop_, [this, &cancelled] {
    for (auto& w : workers_) w->Cancel();
    cancelled.set_value();
  });
  cancelled.get_future().wait();
  // Every stream's OnDone posts to the loop: wait for them all before the workers go.
  for (int i = 0; i < 3000 && live_sessions_ > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::promise<void> drained;
  boost::asio::post(loop_, [&drained] { drained.set_value(); });
  drained.get_future().wait();
  work_.reset();
  loop_.stop();
  thread_.join();
  workers_.clear();
}

void Fleet::ConnectAll(std::chrono::milliseconds spread) {
  const int n = static_cast<int>(workers_.size());
  auto t0 = std::chrono::steady_clock::now();
  boost::asio::post(loop_, [this, n, t0, spread] {
    for (int i = 0; i < n; ++i) {
      auto timer = std::make_shared<boost::asio::steady_timer>(loop_, t0 + spread * i / std::max(1, n));
      timer->async_wait([this, i, timer](const boost::system::error_code& ec) {
        if (!ec) workers_[i]->Connect();
      });
    }
  });
}

std::vector<StartReceipt> Fleet::Collect() {
  std::promise<std::vector<StartReceipt>> p;
  boost::asio::post(loop_, [this, &p] { p.set_value(receipts_); });
  return p.get_future().get();
}

}  // namespace ladder::bench
