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
#include "common/metrics_line.h"
#include "common/printable.h"
#include "worker/certificate_check.h"
#include "worker/launcher_stop.h"
#include "worker/leftovers.h"
#include "worker/log_tail.h"
#include "common/coordinator_loss_rule.h"
#include "worker/reconnect_backoff.h"

namespace ladder::worker {

namespace {
constexpr const char* kLog = "worker";

double WallNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}
}  // namespace

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

Worker::~Worker() { Stop(); }

void Worker::Start() {
  std::error_code ec;
  std::filesystem::create_directories(opt_.trial_dir, ec);
  if (ec) throw std::runtime_error("cannot create trial directory '" + opt_.trial_dir + "': " + ec.message());
  // What an earlier worker on this trial directory started and left behind when it was killed (worker/leftovers.h).
  for (const auto& p : KillLeftoverTrialProcesses(opt_.trial_dir, opt_.node_id)) {
    LogWarning(kLog, "killed " + p + ": left running by an earlier worker on " + opt_.trial_dir);
  }
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
  loop_thread_ = std::thread([this] {
    for (;;) {
      try {
        loop_.run();
        return;
      } catch (const std::exception& e) {
        LogError(kLog, std::string("event loop handler threw: ") + e.what());
      }
    }
  });
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
      bool all_exited = std::all_of(trials_.begin(), trials_.end(), [](const auto& kv) { return kv.second.exited; });
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
        if (r.exited) SendExit(r);
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

// ------------------------------------------------------------------------------------------------------
// Trials
// ------------------------------------------------------------------------------------------------------

void Worker::StartTrial(const v1::StartTrial& m) {
  if (auto old = trials_.find(m.trial_id()); old != trials_.end()) {
    if (!old->second.exited) {
      LogWarning(kLog, "asked to start trial " + std::to_string(m.trial_id()) + " which is already running here");
      return;
    }
    trials_.erase(old);  // a new assignment supersedes an earlier run's unacknowledged exit
  }
  const int64_t id = m.trial_id();
  bool stopping;
  {
    std::lock_guard<std::mutex> g(mu_);
    stopping = stopping_;
  }
  // A start read after this worker was silent past its lease (it was paused with the start in its stream): the
  // run may be another node's by now, so it is not started; the coordinator requeues it if it still owns it.
  const auto may_run_until = RanksMayRunUntil();
  const bool lapsed = may_run_until && *may_run_until < std::chrono::steady_clock::now();
  if (stopping || lapsed) {  // a start that crossed the stop: not run; the coordinator gives it to another node
    Running& r = trials_[id];
    r.trial_id = id;
    r.search_id = m.search_id();
    r.epoch = m.assignment_epoch();
    auto* ex = r.exit.mutable_exited();
    ex->set_trial_id(id);
    ex->set_assignment_epoch(r.epoch);
    ex->set_exit_code(-1);
    ex->set_error(stopping ? "not started: the worker is stopping"
                           : "not started: the worker was silent past its lease less the margin");
    ex->set_cancelled(true);
    ex->set_worker_stopping(stopping);
    r.exited = true;
    SendExit(r);
    return;
  }
  std::string dir = opt_.trial_dir + "/trial-" + std::to_string(id);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  LaunchSpec spec;
  spec.argv.assign(m.argv().begin(), m.argv().end());
  for (const auto& [k, v] : m.env()) spec.env[k] = v;
  spec.env["LADDER_TRIAL_DIR"] = std::filesystem::absolute(dir, ec).string();
  spec.env["LADDER_NODE_ID"] = opt_.node_id;  // with LADDER_TRIAL_DIR: what a restarted worker kills (leftovers.h)
  // The ranks this worker may run on the node at once, other trials' included: a rank's share of the node's cores
  // counts them (trainer/overlap_rule.h).
  spec.env["LADDER_WORKER_SLOTS"] =
      std::to_string(opt_.slots > 0 ? opt_.slots : std::max(1, static_cast<int>(std::thread::hardware_concurrency())));
  if (!m.checkpoint_dir().empty()) {
    std::error_code cec;
    std::filesystem::create_directories(m.checkpoint_dir(), cec);
    if (cec) LogWarning(kLog, "cannot create checkpoint directory '" + m.checkpoint_dir() + "': " + cec.message());
    spec.env["LADDER_CHECKPOINT_DIR"] = m.checkpoint_dir();
  }
  spec.workdir = m.workdir();
  spec.stderr_path = dir + "/stderr.log";
  spec.search_dirs = opt_.search_dirs;

  Running& r = trials_[id];
  r.trial_id = id;
  r.search_id = m.search_id();
  r.epoch = m.assignment_epoch();
  r.first_rank = m.first_rank();
  r.checkpoint_dir = m.checkpoint_dir();
  if (const auto l = m.env().find("LADDER_LAUNCHER"); l != m.env().end()) r.launcher = LauncherNamed(l->second);
  if (const auto n = m.env().find("LADDER_STEP_NAME"); n != m.env().end()) r.step_name = n->second;
  const int nranks = std::max(1, m.local_ranks());
  // Every rank of the trial is here: they meet through a c10d FileStore in the trial's directory (a new file for
  // each run: a killed run's keys must not be read by the next one), so no rendezvous port is opened at all; and
  // ladder-train's --comm auto then reduces over shared memory (shm).
  if (const auto world = m.env().find("WORLD_SIZE"); nranks > 1 && world != m.env().end() &&
                                                    world->second == std::to_string(nranks)) {
    const std::string file = spec.env["LADDER_TRIAL_DIR"] + "/rendezvous-" + std::to_string(m.assignment_epoch());
    std::filesystem::remove(file, ec);
    spec.env["LADDER_RENDEZVOUS_FILE"] = file;
  }
  std::string error;
  for (int k = 0; k < nranks && error.empty(); ++k) {
    if (nranks > 1) {
      spec.env["RANK"] = std::to_string(m.first_rank() + k);
      spec.env["LOCAL_RANK"] = std::to_string(k);
      spec.env["LOCAL_WORLD_SIZE"] = std::to_string(nranks);
      if (k > 0) spec.stderr_path = dir + "/stderr-rank" + std::to_string(m.first_rank() + k) + ".log";
    }
    TrialProcess::LineFn on_line = [](const std::string&, bool) {};  // other ranks' stdout is drained
    if (k == 0 && m.first_rank() == 0) {
      on_line = [this, id](const std::string& line, bool truncated) { OnLine(id, line, truncated); };
    }
    if (k == 0) r.stderr_start = std::max<int64_t>(0, FileSize(spec.stderr_path));
    TrialProcess::ExitFn on_exit = [this, id, k](int code, const std::string& desc) { OnRankExit(id, k, code, desc); };
    // ladder-train forks from a warm process when one is ready; anything else, or no warm process, starts cold.
    std::shared_ptr<TrialProcess> p;
    std::string cold_because;
    if (warm_) p = warm_->Launch(spec, on_line, on_exit, &cold_because);
    if (!p) p = TrialProcess::Launch(loop_, spec, std::move(on_line), std::move(on_exit), &error);
    if (!p) break;
    if (guard_) guard_->Watch(p->pid());
    r.ranks.push_back(std::move(p));
    r.stderr_paths.push_back(std::filesystem::absolute(spec.stderr_path, ec).string());
    ++r.live_ranks;
  }
  if (!error.empty() && !r.ranks.empty()) {
    // Some ranks started: stop them; the trial ends when they are gone, with this error.
    LogWarning(kLog, "trial " + std::to_string(id) + ": rank " + std::to_string(m.first_rank() + r.ranks.size()) +
                         " could not start: " + error);
    r.exit_code = 127;
    r.exit_error = "rank " + std::to_string(m.first_rank() + r.ranks.size()) + ": " + error;
    StopRanks(r);
    return;
  }
  if (r.ranks.empty()) {
    LogWarning(kLog, "trial " + std::to_string(id) + " could not start: " + error);
    auto* ex = r.exit.mutable_exited();
    ex->set_trial_id(id);
    ex->set_assignment_epoch(r.epoch);
    ex->set_exit_code(127);
    ex->set_error(error);
    r.exited = true;
    SendExit(r);
    return;
  }
  v1::WorkerMessage out;
  out.mutable_started()->set_trial_id(id);
  out.mutable_started()->set_assignment_epoch(r.epoch);
  out.mutable_started()->set_pid(r.ranks[0]->pid());
  Send(out);
}

void Worker::CancelTrial(int64_t trial_id, int64_t epoch, const std::string& reason) {
  auto it = trials_.find(trial_id);
  if (it == trials_.end() || it->second.epoch != epoch) return;
  it->second.cancelled = true;
  LogInfo(kLog, "stopping trial " + std::to_string(trial_id) + ": " + reason);
  StopRanks(it->second);
}

void Worker::StopRanks(Running& r, std::chrono::milliseconds grace) {
  if (r.stop_sent || r.exited) return;
  r.stop_sent = true;
  if (StartsEveryRank(r.launcher) && r.ranks.size() == 1) {
    const char* job = std::getenv("SLURM_JOB_ID");  // the job whose steps the trial's srun runs in
    StopThroughLauncher(loop_, r.ranks[0], r.launcher, r.step_name, job ? job : "",
                        std::min(opt_.launcher_grace, grace), "trial " + std::to_string(r.trial_id));
    return;
  }
  for (auto& p : r.ranks) p->Terminate(std::min(opt_.terminate_grace, grace));
}

void Worker::ArmDisconnectedStop(std::chrono::steady_clock::time_point last_heard) {
  if (lease_.count() <= 0) return;  // never granted a lease: never registered, nothing of the coordinator's runs
  const auto after = DisconnectedStopAfter(lease_);
  disconnected_timer_.expires_at(last_heard + after);
  disconnected_timer_.async_wait([this, after](const boost::system::error_code& ec) {
    if (ec || registered_) return;
    StopRunsOfLostCoordinator(after);
  });
}

void Worker::StopRunsOfLostCoordinator(std::chrono::milliseconds silent) {
  // A restarted coordinator gives these runs away ReattachWindow(lease) after its start: they stop before that,
  // killed at the latest DisconnectedStopGrace(lease) after the SIGTERM. Their exits are kept and reported (as
  // stopped, cancelled) once the worker registers again.
  const std::string why = "stopped: the coordinator had not heard from this worker for " +
                          std::to_string(silent.count()) + " ms (its lease)";
  for (auto& [id, r] : trials_) {
    if (r.exited || r.stop_sent) continue;
    LogWarning(kLog, "trial " + std::to_string(id) + " " + why);
    r.cancelled = true;
    r.stop_reason = why;
    StopRanks(r, DisconnectedStopGrace(lease_));
  }
}

void Worker::OnLine(int64_t trial_id, const std::string& line, bool truncated) {
  auto it = trials_.find(trial_id);
  if (it == trials_.end() || it->second.exited) return;
  Running& r = it->second;
  MetricsLineResult parsed;
  if (!truncated) parsed = ParseMetricsLine(line);
  // A trial can print anything, as much as it likes: the warnings name it and come at the 1st, 10th, 100th, ...
  // occurrence, so that a flood of bad lines costs the log a few lines.
  auto warn_at = [](int64_t n) {
    while (n % 10 == 0) n /= 10;
    return n == 1;
  };
  if (!parsed.metrics) {
    if (!truncated && parsed.error.empty()) return;  // blank line
    ++r.ignored;
    r.last_ignored = Printable(line, 200);
    r.ignored_dirty = true;
    if (warn_at(r.ignored)) {
      LogWarning(kLog, "trial " + std::to_string(trial_id) + ": stdout line ignored (" +
                           (truncated ? "longer than 64 KiB" : parsed.error) + "; " + std::to_string(r.ignored) +
                           " so far): " + r.last_ignored);
    }
    ArmFlush();
    return;
  }
  if (!parsed.metrics->non_finite.empty() && warn_at(++r.non_finite)) {
    LogWarning(kLog, "trial " + std::to_string(trial_id) + ": '" + Printable(parsed.metrics->non_finite.front(), 64) +
                         "' is NaN or infinite, skipped (" + std::to_string(r.non_finite) + " lines so far)");
  }
  v1::MetricPoint p;
  r.last_step = parsed.metrics->step ? *parsed.metrics->step : r.last_step + 1;
  p.set_step(r.last_step);
  p.set_time_unix(WallNow());
  for (const auto& [k, v] : parsed.metrics->values) (*p.mutable_values())[k] = v;
  r.points.push_back(std::move(p));
  if (r.points.size() >= opt_.max_unacked_points && r.metrics_rank() && !r.metrics_rank()->paused()) {
    r.metrics_rank()->PauseReading();  // backpressure: resumed by OnAck
  }
  ArmFlush();
}

void Worker::OnRankExit(int64_t trial_id, int local_rank, int exit_code, const std::string& description) {
  auto it = trials_.find(trial_id);
  if (it == trials_.end() || it->second.exited) return;
  Running& r = it->second;
  --r.live_ranks;
  const bool group = r.ranks.size() > 1;
  // Killed by the rank guard (this worker was silent past its lease): not the trial's failure.
  const std::string guard_stop = guard_ ? guard_->Ended(r.ranks[static_cast<size_t>(local_rank)]->pid()) : "";
  if (!guard_stop.empty() && r.exit_error.empty()) {
    r.cancelled = true;
    r.exit_code = exit_code;
    r.exit_error = guard_stop;
  }
  if (!r.stop_reason.empty() && r.exit_error.empty()) {  // stopped because the coordinator was gone too long
    r.exit_code = exit_code;
    r.exit_error = r.stop_reason;
  }
  if (exit_code != 0 && r.exit_error.empty()) {
    r.exit_code = exit_code;
    r.exit_error = group ? "rank " + std::to_string(r.first_rank + local_rank) + ": " + description : description;
    if (!r.cancelled && static_cast<size_t>(local_rank) < r.stderr_paths.size()) {
      // What the run said last is usually why it failed ("unknown option '--bogus'"); the log has the rest.
      const std::string& log = r.stderr_paths[static_cast<size_t>(local_rank)];
      const std::string last = LastLine(log);
      r.exit_error += (last.empty() ? "" : ": " + last) + " (stderr: " + log + ")";
    }
    if (r.live_ranks > 0) {
      LogWarning(kLog, "trial " + std::to_string(trial_id) + ": " + r.exit_error + "; stopping its other " +
                           std::to_string(r.live_ranks) + " ranks");
      r.exit_error += " (the other ranks were stopped)";
      StopRanks(r);
    }
  }
  if (r.live_ranks > 0) return;
  OnExit(trial_id, r.exit_code, r.exit_error);
}

void Worker::OnExit(int64_t trial_id, int exit_code, const std::string& description) {
  auto it = trials_.find(trial_id);
  if (it == trials_.end() || it->second.exited) return;
  Running& r = it->second;
  r.exited = true;
  if (!r.checkpoint_dir.empty()) {
    std::error_code ec;
    std::filesystem::remove(r.checkpoint_dir, ec);  // only if empty: a checkpoint stays for a requeued attempt
  }
  auto* ex = r.exit.mutable_exited();
  ex->set_trial_id(trial_id);
  ex->set_assignment_epoch(r.epoch);
  ex->set_exit_code(exit_code);
  ex->set_cancelled(r.cancelled);
  ex->set_worker_stopping(r.worker_stopping);
  if (exit_code != 0) ex->set_error(description);
  // Stopped from outside ladder (TrialExited.step_cancelled): a SIGTERM this worker did not send (Slurm signals every
  // process of a job it cancels or preempts, the trials too; an administrator), or, in srun's stderr of this run,
  // Slurm ending the step (scancel, a node failure): "srun: Job step aborted: Waiting up to 4 seconds ..." — srun
  // may even exit 0 then (a step cancelled while it launched). Not when a task failed on its own first ("srun:
  // error: n2: task 1: Exited with exit code 3", after which --kill-on-bad-exit ends the step, srun exits 143 and
  // says "Force Terminated"). Only this run's lines count: an earlier attempt's are in the same file.
  bool from_outside = !r.cancelled && exit_code == 128 + SIGTERM;
  if (r.first_rank == 0 && !r.stderr_paths.empty()) {
    ex->set_log_tail(LogTail(r.stderr_paths[0]));
    const std::string run = LogTail(r.stderr_paths[0], kLogTailBytes, nullptr, r.stderr_start);
    from_outside = !r.cancelled && run.find(": Exited with exit code ") == std::string::npos &&
                   (from_outside || run.find("srun: Job step aborted") != std::string::npos);
  }
  ex->set_step_cancelled(from_outside);
  LogInfo(kLog, "trial " + std::to_string(trial_id) + " ended" + (description.empty() ? "" : ": " + description));
  // The last points go first; both stay kept until acknowledged.
  FlushMetrics(r);
  SendExit(r);
}

void Worker::SendExit(Running& r) {
  if (registered_ && session_) session_->Write(r.exit);
}

void Worker::OnAck(const v1::Acknowledged& ack) {
  for (const auto& a : ack.trials()) {
    // LADDER_LOG=debug: what the coordinator acknowledged (bench/chaos checks these points against its database).
    Log(LogLevel::kDebug, kLog,
        "ack trial " + std::to_string(a.trial_id()) + " epoch " + std::to_string(a.assignment_epoch()) +
            " durable_seq " + std::to_string(a.durable_seq()) + " exit_durable " + (a.exit_durable() ? "1" : "0"));
    auto it = trials_.find(a.trial_id());
    if (it == trials_.end() || it->second.epoch != a.assignment_epoch()) continue;
    Running& r = it->second;
    while (!r.points.empty() && r.base_seq < a.durable_seq()) {
      r.points.pop_front();
      ++r.base_seq;
      if (r.sent > 0) --r.sent;
    }
    if (a.exit_durable() && r.exited) {
      trials_.erase(it);
      continue;
    }
    if (r.metrics_rank() && r.metrics_rank()->paused() && r.points.size() < opt_.max_unacked_points / 2) {
      r.metrics_rank()->ResumeReading();
    }
  }
}

void Worker::FlushMetrics(Running& r) {
  if (!registered_ || !session_) return;
  if (r.sent >= r.points.size() && !r.ignored_dirty) return;
  do {
    v1::WorkerMessage out;
    auto* mr = out.mutable_metrics();
    mr->set_trial_id(r.trial_id);
    mr->set_assignment_epoch(r.epoch);
    mr->set_first_seq(r.base_seq + static_cast<int64_t>(r.sent));
    size_t end = std::min(r.points.size(), r.sent + kMaxPointsPerReport);
    for (size_t i = r.sent; i < end; ++i) *mr->add_points() = r.points[i];
    mr->set_ignored_lines(r.ignored);
    mr->set_last_ignored_line(r.last_ignored);
    // The coordinator may hold metric acknowledgements for a while; past half the window it is asked not to.
    mr->set_ack_wanted(r.points.size() >= opt_.max_unacked_points / 2);
    if (!session_->Write(out)) return;  // disconnected: everything is resent after the next registration
    r.sent = end;
    r.ignored_dirty = false;
  } while (r.sent < r.points.size());
}

void Worker::ArmFlush() {
  if (flush_armed_) return;
  flush_armed_ = true;
  flush_timer_.expires_after(opt_.metrics_flush);
  flush_timer_.async_wait([this](const boost::system::error_code& ec) {
    flush_armed_ = false;
    if (ec) return;
    for (auto& [id, r] : trials_) FlushMetrics(r);
  });
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
