#include "worker/worker.h"

#include <csignal>
#include <cstdlib>

#include <grpcpp/grpcpp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <regex>
#include <thread>

#include "common/address.h"
#include "common/executable.h"
#include "common/log.h"
#include "common/loop_thread.h"
#include "worker/certificate_check.h"
#include "worker/launcher_stop.h"
#include "worker/leftovers.h"
#include "worker/log_tail.h"
#include "common/coordinator_loss_rule.h"
#include "worker/reconnect_backoff.h"
#include "worker/rendezvous_dir.h"
#include "worker/log_component.h"

namespace ladder::worker {

v1::WorkerResources DetectResources(const WorkerOptions& opt) {
  v1::WorkerResources r;
  r.set_hostname(ThisHostname());
  r.set_address(opt.address.empty() ? r.hostname() : opt.address);
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  r.set_cores(cores > 0 ? cores : 1);
  r.set_slots(opt.slots > 0 ? opt.slots : r.cores());
  int gpus = opt.gpus;
  if (gpus < 0) {
    gpus = 0;
    std::error_code ec;
    static const std::regex kNvidia("nvidia[0-9]+");
    for (const auto& e : std::filesystem::directory_iterator("/dev", ec)) {
      if (std::regex_match(e.path().filename().string(), kNvidia)) ++gpus;
    }
  }
  r.set_gpus(gpus);
  r.set_memory_bytes(static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE));
  for (const auto& [k, v] : opt.labels) (*r.mutable_labels())[k] = v;
  return r;
}

bool Worker::Session::Write(const v1::WorkerMessage& m) {
  std::lock_guard<std::mutex> g(mu);
  if (closed) return false;
  const auto began = std::chrono::steady_clock::now();  // the coordinator reads it no earlier
  if (!stream->Write(m)) return false;
  wrote_at = began;
  return true;
}

Worker::Worker(WorkerOptions options)
    : opt_(std::move(options)), flush_timer_(loop_), heartbeat_timer_(loop_), disconnected_timer_(loop_) {
  if (opt_.node_id.empty()) opt_.node_id = DetectResources(opt_).hostname();
  if (opt_.search_dirs.empty()) opt_.search_dirs.push_back(OwnBinDir());
  if (opt_.warm_starts) warm_ = std::make_unique<WarmStarter>(loop_, opt_.trial_dir);
}

Worker::~Worker() {
  Stop();
  std::error_code ec;
  if (!rendezvous_dir_.empty()) std::filesystem::remove_all(rendezvous_dir_, ec);  // its ranks are gone
}

void Worker::Start() {
  std::error_code ec;
  std::filesystem::create_directories(opt_.trial_dir, ec);
  if (ec) throw std::runtime_error("cannot create trial directory '" + opt_.trial_dir + "': " + ec.message());
  // What an earlier worker on this trial directory started and left behind when it was killed (worker/leftovers.h).
  for (const auto& p : KillLeftoverTrialProcesses(opt_.trial_dir, opt_.node_id)) {
    LogWarning(kLog, "killed " + p + ": left running by an earlier worker on " + opt_.trial_dir);
  }
  RemoveDeadRendezvousDirs(opt_.node_id);  // a killed predecessor's; this worker's own is made when first needed
  // Reconnect quickly after a coordinator restart (gRPC's own default backoff grows to minutes).
  grpc::ChannelArguments args;
  const int backoff_max = static_cast<int>(std::max<int64_t>(100, opt_.reconnect_max.count()));
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, backoff_max);
  channel_ = grpc::CreateCustomChannel(opt_.server, MakeChannelCredentials(opt_.tls), args);
  stub_ = v1::WorkerService::NewStub(channel_);
  if (opt_.rank_guard) {
    guard_ = std::make_unique<RankGuard>(loop_, [this] { return RanksMayRunUntil(); },
                                         [](const std::string& what) { LogWarning(kLog, what); });
    std::string error;
    if (!guard_->Start(&error)) {
      LogWarning(kLog, "cannot start the rank guard (" + error + "): ranks are not stopped when this worker stalls");
      guard_.reset();
    }
  }
  work_ = std::make_unique<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>>(
      loop_.get_executor());
  loop_thread_ = StartLoopThread(loop_, kLog);
  session_thread_ = std::thread([this] { SessionLoop(); });
}

void Worker::Stop() {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (stopping_ || !loop_thread_.joinable()) {
      stopping_ = true;
      return;
    }
    stopping_ = true;
  }
  // Stop the trials and wait (bounded) for their exits to be reported.
  std::promise<void> all_exited;
  auto fut = all_exited.get_future();
  boost::asio::post(loop_, [this, p = &all_exited]() mutable {
    // First the coordinator hears why the stream will end: a graceful stop, not a lost node (a trial whose group
    // holds this node without a process of this worker's, mpirun's or srun's, then keeps its attempt).
    v1::WorkerMessage stopping;
    stopping.mutable_stopping()->set_reason("the worker is shutting down");
    Send(stopping);
    for (auto& [id, r] : trials_) {
      r.cancelled = true;
      r.worker_stopping = true;  // the coordinator puts the trial back in the queue, and this node out of it
      StopRanks(r);
    }
    auto check = std::make_shared<std::function<void()>>();
    auto timer = std::make_shared<boost::asio::steady_timer>(loop_);
    // Past every rank's last stage: its grace, then the launcher's own end (kLauncherKillAfter), then SIGKILL.
    auto deadline = std::chrono::steady_clock::now() + std::max(opt_.terminate_grace, opt_.launcher_grace) +
                    kLauncherKillAfter + std::chrono::seconds(3);
    auto all_exited_at = std::make_shared<std::chrono::steady_clock::time_point>();
    *check = [this, p, check, timer, deadline, all_exited_at] {
      auto now = std::chrono::steady_clock::now();
      bool all_exited = std::all_of(trials_.begin(), trials_.end(), [](const auto& kv) {
        return kv.second.exited && !kv.second.exit_held;
      });
      if (all_exited && *all_exited_at == std::chrono::steady_clock::time_point{}) *all_exited_at = now;
      // Once every process is gone, wait a little for the acknowledgements of their exits.
      bool acked_or_given_up = all_exited && (!registered_ || now - *all_exited_at > std::chrono::seconds(1));
      if (trials_.empty() || acked_or_given_up || now > deadline) {
        p->set_value();
        *check = nullptr;  // break the self-reference
        return;
      }
      timer->expires_after(std::chrono::milliseconds(20));
      timer->async_wait([check](const boost::system::error_code&) {
        if (*check) (*check)();
      });
    };
    (*check)();
  });
  fut.wait();
  {
    std::lock_guard<std::mutex> g(mu_);
    if (current_) current_->ctx.TryCancel();
  }
  cv_.notify_all();
  if (session_thread_.joinable()) session_thread_.join();
  boost::asio::post(loop_, [this] {
    flush_timer_.cancel();
    heartbeat_timer_.cancel();
    disconnected_timer_.cancel();
    trials_.clear();
    warm_.reset();  // its zygotes exit (their children are gone with the trials)
    guard_.reset();
    session_.reset();
  });
  work_.reset();
  loop_thread_.join();
}

bool Worker::WaitRegistered(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> g(mu_);
  return cv_.wait_for(g, timeout, [this] { return registered_flag_ || stopping_; }) && registered_flag_;
}

// ------------------------------------------------------------------------------------------------------
// Session thread: connect, read until the stream ends, back off, repeat.
// ------------------------------------------------------------------------------------------------------

void Worker::SessionLoop() {
  // Jittered exponential waits that start again only after a session that stayed up (worker/reconnect_backoff.h):
  // a fleet that lost the coordinator together does not come back in one wave, nor every 100 ms.
  ReconnectBackoff backoff(kDefaultReconnectInitial, opt_.reconnect_max, kDefaultReconnectStableAfter,
                           std::hash<std::string>{}(opt_.node_id) ^ static_cast<uint64_t>(getpid()) ^
                               static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
  CertificateCheck certificate_check(opt_.server, opt_.tls);
  for (;;) {
    auto s = std::make_shared<Session>();
    if (!opt_.token.empty()) s->ctx.AddMetadata("authorization", "Bearer " + opt_.token);
    {
      std::lock_guard<std::mutex> g(mu_);
      if (stopping_) return;
      current_ = s;
    }
    // Wait for a connection first: a call made while the channel is still connecting fails at once, and a
    // stream of such calls keeps cancelling the channel's own connection attempts.
    const auto since = std::chrono::steady_clock::now();
    auto warn_at = since + opt_.unreachable_warning;
    while (!channel_->WaitForConnected(std::chrono::system_clock::now() + std::chrono::milliseconds(200))) {
      {
        std::lock_guard<std::mutex> g(mu_);
        if (stopping_) return;
      }
      // A certificate refused at the handshake (ours by the coordinator, or the coordinator's by our CA): as a
      // refused token, no retry fixes it.
      if (const std::string refusal = certificate_check.Check(); !refusal.empty() && Refused(refusal)) return;
      if (std::chrono::steady_clock::now() >= warn_at) {
        const auto waited = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - since);
        LogWarning(kLog, "cannot reach the coordinator at " + opt_.server + " for " + std::to_string(waited.count()) +
                             " s; still trying (is ladder-server running there, and is --server right?)");
        warn_at = std::chrono::steady_clock::now() + std::chrono::minutes(1);
      }
    }
    certificate_check.Connected();
    s->stream = stub_->Connect(&s->ctx);
    const auto connected_at = std::chrono::steady_clock::now();
    boost::asio::post(loop_, [this, s] { OnConnected(s); });
    v1::CoordinatorMessage msg;
    bool got_any = false;
    std::chrono::milliseconds retry_after{-1};  // the coordinator refused the registration for now: when to retry
    while (s->stream->Read(&msg)) {
      got_any = true;
      if (msg.has_retry_registration()) {
        retry_after = std::chrono::milliseconds(msg.retry_registration().retry_after_ms());
        Log(LogLevel::kDebug, kLog, "registration refused for now: " + msg.retry_registration().reason());
        continue;
      }
      boost::asio::post(loop_, [this, msg] { Handle(msg); });
    }
    grpc::Status st;
    {
      std::lock_guard<std::mutex> g(s->mu);
      s->closed = true;
      st = s->stream->Finish();
    }
    std::string why = st.ok() ? "stream closed by the coordinator" : st.error_message();
    if (!got_any) Log(LogLevel::kDebug, kLog, "cannot reach the coordinator at " + opt_.server + ": " + why);
    boost::asio::post(loop_, [this, s, why] { OnDisconnected(s, why); });
    if ((st.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
         st.error_code() == grpc::StatusCode::PERMISSION_DENIED) &&
        Refused(st.error_message())) {
      return;
    }
    auto wait = backoff.Next(got_any ? std::chrono::steady_clock::now() - connected_at
                                     : std::chrono::steady_clock::duration::zero());
    if (retry_after.count() >= 0) wait = backoff.RetryAfter(retry_after, wait);
    std::unique_lock<std::mutex> g(mu_);
    current_.reset();
    if (cv_.wait_for(g, wait, [this] { return stopping_; })) return;
  }
}

bool Worker::Refused(const std::string& why) {
  LogError(kLog, "coordinator refused the worker: " + why);
  if (!opt_.on_refused) return false;
  {
    std::lock_guard<std::mutex> g(mu_);
    current_.reset();
  }
  opt_.on_refused(why);
  return true;
}

void Worker::OnConnected(std::shared_ptr<Session> s) {
  session_ = s;
  registered_ = false;
  v1::WorkerMessage m;
  auto* reg = m.mutable_register_();
  reg->set_node_id(opt_.node_id);
  *reg->mutable_resources() = DetectResources(opt_);
  for (const auto& [id, r] : trials_) {
    auto* rt = reg->add_running();
    rt->set_trial_id(id);
    rt->set_assignment_epoch(r.epoch);
    rt->set_exited(r.exited);
  }
  s->Write(m);
}

void Worker::OnDisconnected(std::shared_ptr<Session> s, const std::string& why) {
  if (session_ != s) return;
  bool stopping;
  {
    std::lock_guard<std::mutex> g(mu_);
    stopping = stopping_;
  }
  if (registered_ && !stopping) LogWarning(kLog, "lost the coordinator: " + why + "; reconnecting");
  // The coordinator last heard this worker no earlier than its last write began.
  if (registered_ && !stopping) {
    ArmDisconnectedStop(s->wrote_at != std::chrono::steady_clock::time_point{} ? s->wrote_at
                                                                                : std::chrono::steady_clock::now());
  }
  session_.reset();
  registered_ = false;
  heartbeat_timer_.cancel();
  std::lock_guard<std::mutex> g(mu_);
  registered_flag_ = false;
}

void Worker::Handle(const v1::CoordinatorMessage& m) {
  switch (m.body_case()) {
    case v1::CoordinatorMessage::kRegistered: {
      registered_ = true;
      disconnected_timer_.cancel();  // back within the window: its runs are re-attached as they are
      heartbeat_interval_ = std::chrono::milliseconds(std::max(10, m.registered().heartbeat_interval_ms()));
      lease_ = std::chrono::milliseconds(std::max(0, m.registered().lease_ms()));
      LogInfo(kLog, "registered with " + opt_.server + " as " + m.registered().node_id() + " (epoch " +
                        std::to_string(m.registered().worker_epoch()) + ")");
      for (int64_t id : m.registered().cancel_trials()) {
        auto it = trials_.find(id);
        if (it == trials_.end()) continue;
        if (it->second.exited) {
          trials_.erase(it);  // its exit is stored already, or the run is not the coordinator's any more
        } else {
          CancelTrial(id, it->second.epoch, "the coordinator no longer owns this run");
        }
      }
      // Everything unacknowledged again, points first so that a trial's metrics precede its exit.
      for (auto& [id, r] : trials_) {
        r.sent = 0;
        r.ignored_dirty = true;
        r.tail_size_sent = -1;  // a restarted coordinator has no log tail
        FlushMetrics(r);
        if (r.exited && !r.exit_held) SendExit(r);
      }
      ArmHeartbeat();
      {
        std::lock_guard<std::mutex> g(mu_);
        registered_flag_ = true;
      }
      cv_.notify_all();
      break;
    }
    case v1::CoordinatorMessage::kStart: StartTrial(m.start()); break;
    case v1::CoordinatorMessage::kCancel:
      CancelTrial(m.cancel().trial_id(), m.cancel().assignment_epoch(), m.cancel().reason());
      break;
    case v1::CoordinatorMessage::kAck: OnAck(m.ack()); break;
    case v1::CoordinatorMessage::kHeartbeatInterval:  // the fleet grew: heartbeat less often from the next one on
      heartbeat_interval_ = std::chrono::milliseconds(std::max(10, m.heartbeat_interval().heartbeat_interval_ms()));
      if (m.heartbeat_interval().lease_ms() > 0) lease_ = std::chrono::milliseconds(m.heartbeat_interval().lease_ms());
      break;
    case v1::CoordinatorMessage::kRelease:
      LogInfo(kLog, "released by the coordinator: " + m.release().reason());
      if (opt_.on_released) opt_.on_released(m.release().reason());
      break;
    default: break;
  }
}

void Worker::ArmHeartbeat() {
  heartbeat_timer_.expires_after(heartbeat_interval_);
  heartbeat_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || !registered_) return;
    v1::WorkerMessage m;
    auto* hb = m.mutable_heartbeat();
    for (auto& [id, r] : trials_) {
      auto* rt = hb->add_running();
      rt->set_trial_id(id);
      rt->set_assignment_epoch(r.epoch);
      rt->set_exited(r.exited);
      // Global rank 0's log, when it grew: the dashboards show its end.
      if (!r.exited && r.first_rank == 0 && !r.stderr_paths.empty()) {
        const int64_t size = FileSize(r.stderr_paths[0]);
        if (size != r.tail_size_sent) {
          rt->set_log_tail(LogTail(r.stderr_paths[0]));
          r.tail_size_sent = size;
        }
      }
    }
    Send(m);
    ArmHeartbeat();
  });
}

std::optional<std::chrono::steady_clock::time_point> Worker::RanksMayRunUntil() const {
  if (lease_.count() <= 0) return std::nullopt;
  const auto from = registered_ && session_ ? session_->wrote_at : std::chrono::steady_clock::now();
  return from + lease_ - RankStopMargin(lease_);
}

void Worker::Send(const v1::WorkerMessage& m) {
  if (registered_ && session_) session_->Write(m);
}

}  // namespace ladder::worker
