// Worker: the trials it runs — a start in named steps (refused, the ranks' launch spec, the run's record, its
// ranks, a start that failed), stops, stdout's metric lines, the ranks' exits and the run's TrialExited (written in
// one place, SetExit), metric reports and the coordinator's acknowledgements. The connection, registration and
// heartbeats are in worker.cc.
#include <csignal>
#include <cstdlib>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include "common/log.h"
#include "common/metrics_line.h"
#include "common/printable.h"
#include "worker/container_trial_dir.h"
#include "worker/launcher_stop.h"
#include "worker/log_tail.h"
#include "worker/rendezvous_dir.h"
#include "worker/worker.h"

#include "common/coordinator_loss_rule.h"
#include "worker/log_component.h"

namespace ladder::worker {

namespace {

double WallNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}
}  // namespace

void Worker::StartTrial(const v1::StartTrial& m) {
  if (auto old = trials_.find(m.trial_id()); old != trials_.end()) {
    if (!old->second.exited) {
      LogWarning(kLog, "asked to start trial " + std::to_string(m.trial_id()) + " which is already running here");
      return;
    }
    trials_.erase(old);  // a new assignment supersedes an earlier run's unacknowledged exit
  }
  if (RefuseStart(m)) return;
  const std::string dir = opt_.trial_dir + "/trial-" + std::to_string(m.trial_id());
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!rendezvous_tried_ && m.local_ranks() > 1) {  // the ranks will meet in this worker's directory (RankSpec)
    rendezvous_tried_ = true;
    std::string why;
    if (auto rdv = RendezvousDir(opt_.node_id, &why)) {
      rendezvous_dir_ = *rdv;
    } else {
      LogWarning(kLog, "one-node trials meet in their trial directories: " + why);
    }
  }
  LaunchSpec spec = RankSpec(m, dir);
  Running& r = NewRun(m);
  // srun runs outside this worker's process tree: Slurm's preemption of the workers' job signals their step's
  // processes, and an srun among them would SIGKILL its tasks before their checkpoint (worker/launcher_stop.h).
  spec.detach = r.launcher == v1::LAUNCHER_SRUN;
  const std::string error = StartRanks(r, m, std::move(spec), dir);
  if (!error.empty() || r.ranks.empty()) {
    StartFailed(r, m, error);
    return;
  }
  v1::WorkerMessage out;
  out.mutable_started()->set_trial_id(r.trial_id);
  out.mutable_started()->set_assignment_epoch(r.epoch);
  out.mutable_started()->set_pid(r.ranks[0]->pid());
  Send(out);
}

bool Worker::RefuseStart(const v1::StartTrial& m) {
  bool stopping;
  {
    std::lock_guard<std::mutex> g(mu_);
    stopping = stopping_;
  }
  // A start read after this worker was silent past its lease (it was paused with the start in its stream): the
  // run may be another node's by now, so it is not started; the coordinator requeues it if it still owns it.
  const auto may_run_until = RanksMayRunUntil();
  const bool lapsed = may_run_until && *may_run_until < std::chrono::steady_clock::now();
  if (!stopping && !lapsed) return false;
  // A start that crossed the stop: not run; the coordinator gives it to another node.
  Running& r = trials_[m.trial_id()];
  r.trial_id = m.trial_id();
  r.search_id = m.search_id();
  r.epoch = m.assignment_epoch();
  SetExit(r, -1,
          stopping ? "not started: the worker is stopping"
                   : "not started: the worker was silent past its lease less the margin",
          /*cancelled=*/true, /*worker_stopping=*/stopping);
  SendExit(r);
  return true;
}

LaunchSpec Worker::RankSpec(const v1::StartTrial& m, const std::string& dir) const {
  std::error_code ec;
  LaunchSpec spec;
  spec.argv.assign(m.argv().begin(), m.argv().end());
  for (const auto& [k, v] : m.env()) spec.env[k] = v;
  spec.env["LADDER_TRIAL_DIR"] = std::filesystem::absolute(dir, ec).string();
  spec.env["LADDER_NODE_ID"] = opt_.node_id;  // with LADDER_TRIAL_DIR: what a restarted worker kills (leftovers.h)
  // In a container: the coordinator's line binds "{trial_dir}", this run's directory (common/container_trial_dir.h).
  FillContainerTrialDir(spec.env["LADDER_TRIAL_DIR"], &spec.argv, &spec.env);
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
  // Every rank of the trial is here: they meet through a c10d FileStore (a new file for each run: a killed run's
  // keys must not be read by the next one) in this worker's directory under the temporary directory, which containers share
  // (worker/rendezvous_dir.h), or else in the trial's directory; so no rendezvous port is opened at all; and
  // ladder-train's --comm auto then reduces over shared memory (shm).
  const int nranks = std::max(1, m.local_ranks());
  if (const auto world = m.env().find("WORLD_SIZE"); nranks > 1 && world != m.env().end() &&
                                                    world->second == std::to_string(nranks)) {
    const std::string file =
        rendezvous_dir_.empty()
            ? spec.env["LADDER_TRIAL_DIR"] + "/rendezvous-" + std::to_string(m.assignment_epoch())
            : RendezvousFile(rendezvous_dir_, m.trial_id(), m.assignment_epoch());
    std::filesystem::remove(file, ec);
    spec.env["LADDER_RENDEZVOUS_FILE"] = file;
  }
  return spec;
}

Worker::Running& Worker::NewRun(const v1::StartTrial& m) {
  Running& r = trials_[m.trial_id()];
  r.trial_id = m.trial_id();
  r.search_id = m.search_id();
  r.epoch = m.assignment_epoch();
  r.first_rank = m.first_rank();
  r.checkpoint_dir = m.checkpoint_dir();
  if (const auto l = m.env().find("LADDER_LAUNCHER"); l != m.env().end()) r.launcher = LauncherNamed(l->second);
  if (const auto n = m.env().find("LADDER_STEP_NAME"); n != m.env().end()) r.step_name = n->second;
  return r;
}

std::string Worker::StartRanks(Running& r, const v1::StartTrial& m, LaunchSpec spec, const std::string& dir) {
  const int64_t id = r.trial_id;
  const int nranks = std::max(1, m.local_ranks());
  std::error_code ec;
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
  return error;
}

void Worker::StartFailed(Running& r, const v1::StartTrial& m, const std::string& error) {
  const std::string id = std::to_string(r.trial_id);
  if (!r.ranks.empty()) {
    // Some ranks started: stop them; the trial ends when they are gone, with this error.
    LogWarning(kLog, "trial " + id + ": rank " + std::to_string(m.first_rank() + r.ranks.size()) +
                         " could not start: " + error);
    r.exit_code = 127;
    r.exit_error = "rank " + std::to_string(m.first_rank() + r.ranks.size()) + ": " + error;
    StopRanks(r);
    return;
  }
  LogWarning(kLog, "trial " + id + " could not start: " + error);
  SetExit(r, 127, error, /*cancelled=*/false, /*worker_stopping=*/false);
  SendExit(r);
}

v1::TrialExited& Worker::SetExit(Running& r, int exit_code, const std::string& error, bool cancelled,
                                 bool worker_stopping) {
  r.exited = true;
  v1::TrialExited& ex = *r.exit.mutable_exited();
  ex.set_trial_id(r.trial_id);
  ex.set_assignment_epoch(r.epoch);
  ex.set_exit_code(exit_code);
  ex.set_error(error);
  ex.set_cancelled(cancelled);
  ex.set_worker_stopping(worker_stopping);
  return ex;
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
  v1::TrialExited& ex =
      SetExit(r, exit_code, exit_code != 0 ? description : "", r.cancelled, r.worker_stopping);
  if (!r.checkpoint_dir.empty()) {
    std::error_code ec;
    std::filesystem::remove(r.checkpoint_dir, ec);  // only if empty: a checkpoint stays for a requeued attempt
  }
  // Stopped from outside ladder (TrialExited.step_cancelled): a SIGTERM this worker did not send (Slurm signals every
  // process of a job it cancels or preempts, the trials too; an administrator), or, in srun's stderr of this run,
  // Slurm ending the step (scancel, a node failure): "srun: Job step aborted: Waiting up to 4 seconds ..." — srun
  // may even exit 0 then (a step cancelled while it launched). Not when a task failed on its own first ("srun:
  // error: n2: task 1: Exited with exit code 3", after which --kill-on-bad-exit ends the step, srun exits 143 and
  // says "Force Terminated"). Only this run's lines count: an earlier attempt's are in the same file.
  bool from_outside = !r.cancelled && exit_code == 128 + SIGTERM;
  if (r.first_rank == 0 && !r.stderr_paths.empty()) {
    ex.set_log_tail(LogTail(r.stderr_paths[0]));
    const std::string run = LogTail(r.stderr_paths[0], kLogTailBytes, nullptr, r.stderr_start);
    from_outside = !r.cancelled && run.find(": Exited with exit code ") == std::string::npos &&
                   (from_outside || run.find("srun: Job step aborted") != std::string::npos);
  }
  ex.set_step_cancelled(from_outside);
  LogInfo(kLog, "trial " + std::to_string(trial_id) + " ended" + (description.empty() ? "" : ": " + description));
  // Slurm preempting this worker's job signals every step's tasks at once: the trial's (its ranks, and the srun or
  // mpirun a worker runs) and the workers'. The trial's exit — from outside, or a rank's 143 relayed by srun when its
  // handlers won the race with srun's own forced end — may be heard before this worker's own SIGTERM: if slurmctld
  // says the job is being preempted, the run ends as this worker's stop does (a preemption: no attempt counted).
  const char* job = std::getenv("SLURM_JOB_ID");
  if (!from_outside && (exit_code == 0 || r.cancelled || !job || !*job)) {
    // The last points go first; both stay kept until acknowledged.
    FlushMetrics(r);
    SendExit(r);
    return;
  }
  r.exit_held = true;
  AskWhetherJobIsPreempted(loop_, job ? job : "", [this, trial_id, epoch = r.epoch](bool preempting) {
    auto it = trials_.find(trial_id);
    if (it == trials_.end() || it->second.epoch != epoch || !it->second.exit_held) return;
    Running& ended = it->second;
    ended.exit_held = false;
    if (preempting) {
      LogInfo(kLog, "trial " + std::to_string(trial_id) + ": Slurm is preempting this job; reported as stopped with "
                    "the worker");
      ended.worker_stopping = true;
      ended.exit.mutable_exited()->set_worker_stopping(true);
      ended.exit.mutable_exited()->set_step_cancelled(false);
    }
    FlushMetrics(ended);
    SendExit(ended);
  });
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

}  // namespace ladder::worker
