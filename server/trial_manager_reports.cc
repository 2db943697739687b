// TrialManager: what workers report about runs — started, metric points, exits — and what happens to runs when a
// worker re-registers or its node is lost; the watchdog and the re-attach deadline after a restart.
#include <csignal>
#include <cstdio>

#include "common/log.h"
#include "common/trial_exit_codes.h"
#include "server/rendezvous_port.h"
#include "server/trial_manager.h"
#include "common/wall_clock.h"
#include "server/log_component.h"

namespace ladder::server {

void TrialManager::OnStarted(const std::string& node, const v1::TrialStarted& m) {
  auto it = trials_.find(m.trial_id());
  if (it == trials_.end() || it->second.epoch != m.assignment_epoch()) return;
  launcher_.StartHeard(m.trial_id(), m.assignment_epoch());
  hub_.Record("trial_started", it->second.proto.search_id(), m.trial_id(), node + " pid " + std::to_string(m.pid()));
}

void TrialManager::OnMetrics(const std::string& node, const std::shared_ptr<WorkerLink>& link,
                             const v1::MetricReport& m) {
  auto it = trials_.find(m.trial_id());
  TrialRecord::Member* mem = it == trials_.end() ? nullptr : MemberOn(it->second, node, m.assignment_epoch());
  const bool current = mem && mem->live && it->second.epoch == m.assignment_epoch();
  // A member without rank 0 has no points to store; a worker still reports its state (after every registration,
  // for each run it holds): that is no stale run.
  if (current && mem->first_rank != 0 && m.points_size() == 0) return;
  if (!current || mem->first_rank != 0) {
    // Fencing: a run the coordinator no longer owns.
    v1::CoordinatorMessage cancel;
    cancel.mutable_cancel()->set_trial_id(m.trial_id());
    cancel.mutable_cancel()->set_assignment_epoch(m.assignment_epoch());
    cancel.mutable_cancel()->set_reason("stale assignment");
    link->Send(cancel);
    return;
  }
  TrialRecord& t = it->second;
  launcher_.StartHeard(t.proto.id(), t.epoch);  // its TrialStarted may have been lost with a connection
  const v1::Search& s = owner_->Search(t.proto.search_id());
  const bool judged = owner_->JudgesPoints(t.proto.search_id());
  // metric_count is the number of this run's points stored so far, i.e. the next sequence number.
  int64_t seq = m.has_first_seq() ? m.first_seq() : t.proto.metric_count();
  const v1::MetricPoint* last = nullptr;
  const search::SearchSpec& spec = owner_->Spec(t.proto.search_id());
  for (const auto& point : m.points()) {
    if (seq++ < t.proto.metric_count()) continue;  // already stored: a resend after a reconnect
    if (point.time_unix() > 0) {
      store_.AppendMetrics(t.proto.id(), point);
    } else {  // a point without its time gets its arrival's (a restart tells runs apart by it)
      v1::MetricPoint stamped = point;
      stamped.set_time_unix(WallNow());
      store_.AppendMetrics(t.proto.id(), stamped);
    }
    t.proto.set_metric_count(t.proto.metric_count() + 1);
    last = &point;
    auto vit = point.values().find(s.objective_metric());
    if (vit != point.values().end()) {
      t.last_objective = vit->second;
      bool better = !t.best_objective || (s.direction() == v1::MAXIMIZE ? vit->second > *t.best_objective
                                                                        : vit->second < *t.best_objective);
      if (better) t.best_objective = vit->second;
    }
    t.NoteObjectives(spec, point);
    if (judged) owner_->OnPoint(t.proto.id(), point);  // the stopping rule's and the hero band's judgement
  }
  if (last) {
    hub_.Metrics(t.proto, *last);  // watchers get a report's newest point (EventHub coalesces per trial)
    *t.proto.mutable_last_metrics() = *last;
    t.last_progress = Clock::now();
  }
  t.proto.set_ignored_lines(m.ignored_lines());
  if (!m.last_ignored_line().empty()) t.proto.set_last_ignored_line(m.last_ignored_line());
  progress_dirty_.insert(t.proto.id());
  outbox_.OweAck(link, t.proto.id(), t.epoch, t.proto.metric_count(), false, m.ack_wanted());
}

void TrialManager::OnExited(const std::string& node, const std::shared_ptr<WorkerLink>& link,
                            const v1::TrialExited& m) {
  auto it = trials_.find(m.trial_id());
  TrialRecord::Member* mem = it == trials_.end() ? nullptr : MemberOn(it->second, node, m.assignment_epoch());
  if (!mem || !mem->live) {
    // A stale run (its resources were already given back), or an exit already stored whose acknowledgement was
    // lost: the worker may forget it.
    outbox_.OweAck(link, m.trial_id(), m.assignment_epoch(), 0, true);
    return;
  }
  TrialRecord& t = it->second;
  const bool current = mem->epoch == t.epoch;
  const bool metrics_member = mem->first_rank == 0;
  if (current && metrics_member && m.has_log_tail()) {
    t.log_tail.clear();  // from now on read from the store
    store_.SetLogTail(t.proto.id(), m.log_tail());
  }
  outbox_.OweAck(link, t.proto.id(), mem->epoch, current && metrics_member ? t.proto.metric_count() : 0, true);
  mem->live = false;
  nodes_.RemoveRun(node, t.proto.id());
  const bool any_live = t.AnyLive();
  if (current && t.proto.state() == v1::TRIAL_RUNNING) {
    EndRun(t, node, m, any_live);
  } else if (current && t.proto.state() == v1::TRIAL_CANCELLED && metrics_member) {
    t.proto.set_exit_code(m.exit_code());
    Save(t);
  }
  if (current && !any_live && t.proto.state() == v1::TRIAL_CANCELLED) CloseAllocation(t, "cancelled");
  MaybeReleaseGroup(t);  // updates the nodes' busy slots once the group is given back
}

void TrialManager::OnHeartbeat(const std::string& node, const v1::Heartbeat& m) {
  for (const auto& run : m.running()) {
    if (!run.has_log_tail()) continue;
    auto it = trials_.find(run.trial_id());
    if (it == trials_.end() || it->second.epoch != run.assignment_epoch()) continue;
    const TrialRecord::Member* mem = MemberOn(it->second, node, run.assignment_epoch());
    if (mem && mem->first_rank == 0) it->second.log_tail = run.log_tail();
  }
}

void TrialManager::EndRun(TrialRecord& t, const std::string& node, const v1::TrialExited& m, bool any_live) {
  const std::string where = t.members.size() > 1 ? "node " + node + ": " : "";
  const bool failed = m.exit_code() != 0 || !m.error().empty();
  if (!t.watchdog_error.empty()) {
    CloseAllocation(t, "failed");
    Finish(t, v1::TRIAL_FAILED, m.exit_code(), t.watchdog_error);
  } else if (t.exploit && (m.cancelled() || !failed || m.step_cancelled())) {
    // A rank that stopped with its group before its own worker got the cancel exits 143 unasked (step_cancelled):
    // the stop this coordinator asked for, not one from outside.
    if (!any_live) FinishExploit(t);
  } else if (!t.early_stop.empty() && (m.cancelled() || !failed || m.step_cancelled())) {
    // Stopped by the stopping rule: it completes with the value it reached.
    if (!any_live) CompleteFromExit(t.proto.id());
  } else if (t.preempting && (m.cancelled() || failed)) {
    // Stopped for a higher-priority trial: it resumes once every member has stopped.
    if (!any_live) FinishPreemption(t);
  } else if (t.port_taken && (m.cancelled() || failed)) {
    // The rest of a group whose rank 0 found its port taken: it runs again once every member has stopped.
    if (!any_live) BackToQueue(t, "rendezvous port in use");
  } else if (m.worker_stopping()) {
    // The node's worker is shutting down: no new trials there, and this one waits for another node (from its
    // checkpoint, as after a preemption; no attempt is used up).
    nodes_.Drain(node, "its worker is stopping");
    WaitForAnotherNode(t, "node " + node + "'s worker stopped");
  } else if (!t.outside_stop.empty()) {
    // The rest of a group one member of which was stopped from outside ladder (below): requeued once all stopped.
    if (!any_live) RequeueOrFail(t, t.outside_stop);
  } else if (m.step_cancelled()) {
    // Stopped from outside ladder: Slurm cancelled the run's step (scancel, a node failure), or a SIGTERM its worker
    // did not send ended it (scancel or preemption of its job, an administrator): as a lost node, not a failure.
    const std::string why =
        where + (m.exit_code() == 128 + SIGTERM && m.log_tail().find("srun: Job step aborted") == std::string::npos
                     ? "ended by a SIGTERM from outside ladder (scancel, a preempted job, an administrator)"
                     : "its Slurm step was cancelled (scancel or a node failure)");
    if (any_live) {
      // The group's ranks stop together: a rank that stopped because another asked exits 143 too (ladder-train), with
      // no signal of its own. The other members' exits say why (a stopping worker: no attempt counted); they are
      // told to stop meanwhile.
      t.outside_stop = why;
      Save(t);  // stored with the cancels: a restart before the other exits remembers it (Load)
      StopMembers(t, why + "; the group's other ranks stop");
    } else {
      RequeueOrFail(t, why);
    }
  } else if (m.cancelled()) {
    // Stopped without a request of this coordinator (a preemption decided before a restart is remembered: see
    // Load). Not what anyone cancelled: it runs again.
    RequeueOrFail(t, where + "stopped by its worker without a request from this coordinator" +
                         (m.error().empty() ? std::string() : " (" + m.error() + ")"));
  } else if (failed && RendezvousPortTakenOn(t, node, m)) {
    RendezvousPortTaken(t, node, any_live);
  } else if (failed) {
    // A rank failed: the whole group stops (Finish stops the other members).
    std::string err = m.error().empty() ? "exited with code " + std::to_string(m.exit_code()) : m.error();
    CloseAllocation(t, "failed");
    Finish(t, v1::TRIAL_FAILED, m.exit_code(), where + err);
  } else if (!any_live) {
    owner_->OnRunSucceeded(t.proto.id());
  }
  // else: exit 0 on one node while others still run; the trial ends with the last of them.
}

bool TrialManager::RendezvousPortTakenOn(const TrialRecord& t, const std::string& node,
                                         const v1::TrialExited& m) const {
  if (m.exit_code() != kExitRendezvousPortInUse || t.members.size() < 2) return false;
  if (owner_->Spec(t.proto.search_id()).group.launcher == search::Launcher::kMpirun) return false;  // no MASTER_PORT
  for (const auto& mem : t.members) {
    if (mem.node_id == node && mem.epoch == m.assignment_epoch()) return mem.first_rank == 0;
  }
  return false;
}

void TrialManager::RendezvousPortTaken(TrialRecord& t, const std::string& node, bool any_live) {
  const int64_t id = t.proto.id();
  const int port = RendezvousPort(opt_.rendezvous_port_base, opt_.rendezvous_port_span, id, t.port_collisions);
  const std::string what = "rank 0 on node " + node + " could not listen on its rendezvous port " +
                           std::to_string(port) + ": another process holds it";
  if (t.port_collisions >= kMaxRendezvousPortCollisions) {
    RequeueOrFail(t, what + " (the trial's " + std::to_string(t.port_collisions + 1) +
                         "th taken port: give ladder-server a range of free ports with --rendezvous-port-base and "
                         "--rendezvous-port-span)");
    return;
  }
  ++t.port_collisions;
  const int next = RendezvousPort(opt_.rendezvous_port_base, opt_.rendezvous_port_span, id, t.port_collisions);
  const std::string reason = what + "; the trial runs again on port " + std::to_string(next) + " (no attempt used)";
  hub_.Record("trial_port_in_use", t.proto.search_id(), id, reason);
  LogWarning(kLog, "trial " + std::to_string(id) + ": " + reason);
  t.port_taken = true;
  t.proto.set_error(reason);
  StopMembers(t, reason);
  if (!any_live) BackToQueue(t, "rendezvous port in use");
}

bool TrialManager::Reattach(const std::string& node, const std::shared_ptr<WorkerLink>& link,
                            const v1::RunningTrial& run) {
  auto it = trials_.find(run.trial_id());
  TrialRecord::Member* m = it == trials_.end() ? nullptr : MemberOn(it->second, node, run.assignment_epoch());
  bool ours = m && m->live && it->second.epoch == run.assignment_epoch() &&
              it->second.proto.state() == v1::TRIAL_RUNNING;
  if (!ours) {
    if (m && m->live && !m->attached) {
      // A run stopped (requeued, ended) while its group waited for this worker after a restart: the worker is told
      // to stop it, and its exit (or the node's loss) frees the group; one that has exited it forgets at once.
      if (run.exited()) {
        MemberGone(it->second, *m);
        MaybeReleaseGroup(it->second);
      } else {
        m->attached = true;
        nodes_.AddRun(node, run.trial_id());
      }
    }
    return false;
  }
  TrialRecord& t = it->second;
  m->attached = true;
  t.last_progress = Clock::now();
  nodes_.AddRun(node, t.proto.id());
  hub_.Record("trial_reattached", t.proto.search_id(), t.proto.id(), node);
  LogInfo(kLog, "worker " + node + " re-attached trial " + std::to_string(t.proto.id()));
  // Decided before the restart (the search's replay; a preemption's or an outside stop's stored intent): the cancel
  // may not have reached the worker before the crash, so it goes again.
  if (t.exploit || !t.early_stop.empty() || t.preempting || !t.outside_stop.empty()) {
    v1::CoordinatorMessage cancel;
    cancel.mutable_cancel()->set_trial_id(t.proto.id());
    cancel.mutable_cancel()->set_assignment_epoch(m->epoch);
    cancel.mutable_cancel()->set_reason(t.exploit             ? t.exploit->reason
                                        : !t.early_stop.empty() ? "stopped early by " + t.early_stop
                                        : t.preempting          ? "preempted before the coordinator restarted; it "
                                                                  "resumes from its checkpoint later"
                                                                : t.outside_stop + "; the group's other ranks stop");
    outbox_.SendAfterCommit(link, std::move(cancel));
  }
  return true;
}

void TrialManager::RunsLost(const std::string& node, const std::set<int64_t>& trials, const std::string& reason,
                            NodeLoss loss) {
  for (int64_t id : trials) {
    auto it = trials_.find(id);
    if (it == trials_.end()) continue;
    TrialRecord& t = it->second;
    bool ran_here = false, lost_here = false;  // a process of the current run was started there; one still ran
    const bool one_launch = owner_->Spec(t.proto.search_id()).group.launcher != search::Launcher::kPerNode;
    for (auto& m : t.members) {
      if (m.node_id != node || m.epoch != t.epoch) continue;
      ran_here |= !one_launch || m.first_rank == 0;  // mpirun/srun: the other members only hold slots
      if (m.live) {
        lost_here = true;
        MemberGone(t, m);
      }
    }
    if (t.proto.state() == v1::TRIAL_RUNNING && ran_here && !lost_here && t.AnyLive()) {
      // The run's part on that node had ended and been reported (a stopping worker reports its ranks' exits, then
      // closes its stream) while the group's other members stop: nothing was lost there. Their exits end the run as
      // already decided (a preemption or a stopping worker: requeued from the checkpoint with no attempt counted).
      continue;
    }
    if (t.proto.state() == v1::TRIAL_RUNNING && loss != NodeLoss::kFault) {
      WaitForAnotherNode(t, reason);  // stops the group's members on the other nodes
    } else if (t.proto.state() == v1::TRIAL_RUNNING) {
      RequeueOrFail(t, reason);  // stops the group's members on the other nodes
    } else {
      MaybeReleaseGroup(t);
    }
  }
}

void TrialManager::RegisteredWithout(const std::string& node, const std::set<int64_t>& reported) {
  for (auto& [id, t] : trials_) {
    if (reported.count(id) || t.reattach_deadline == Clock::time_point{}) continue;
    bool gone = false;
    for (auto& m : t.members) {
      if (m.node_id == node && m.live && !m.attached) MemberGone(t, m), gone = true;
    }
    if (!gone) continue;
    if (t.proto.state() != v1::TRIAL_RUNNING) {
      MaybeReleaseGroup(t);
      continue;
    }
    const std::string reason = "worker " + node + " came back after the coordinator restarted without it";
    if (t.proto.metric_count() > 0) {
      RequeueOrFail(t, reason);  // the run did work there, now lost
      continue;
    }
    // Not one point of this run was stored: its start most likely never reached the worker (the coordinator
    // died between committing the start and sending it). Nothing ran that could be lost: the trial goes back to
    // the queue with its attempt, as after a preemption, once the group's other members have stopped.
    LogInfo(kLog, "trial " + std::to_string(id) + ": " + reason + " (it had reported nothing): it waits in the queue");
    t.preempting = true;
    StopMembers(t, reason);
    if (!t.AnyLive()) {
      BackToQueue(t, "never started");
      request_schedule_();
    }
  }
}

void TrialManager::CheckWatchdog(Clock::time_point now) {
  for (auto& [sid, s] : by_search_) {
    const search::SearchSpec& spec = owner_->Spec(sid);
    if (owner_->Search(sid).state() != v1::SEARCH_RUNNING || spec.progress_timeout_s <= 0) continue;
    const auto limit =
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(spec.progress_timeout_s));
    std::vector<int64_t> running(s.running.begin(), s.running.end());
    for (int64_t id : running) {
      TrialRecord& t = At(id);
      if (t.members.empty() || t.preempting || !t.watchdog_error.empty() || now - t.last_progress < limit) continue;
      char buf[160];
      std::snprintf(buf, sizeof buf,
                    "no metrics line for %.1f s (trial.progress_timeout is %g s): stopped by the watchdog",
                    std::chrono::duration<double>(now - t.last_progress).count(), spec.progress_timeout_s);
      t.watchdog_error = buf;
      LogWarning(kLog, "trial " + std::to_string(id) + ": " + t.watchdog_error);
      hub_.Record("trial_watchdog", sid, id, t.watchdog_error);
      StopMembers(t, t.watchdog_error);
      if (!t.AnyLive()) {
        CloseAllocation(t, "failed");
        Finish(t, v1::TRIAL_FAILED, -1, t.watchdog_error);
      }
    }
  }
}

void TrialManager::CheckReattachDeadlines(Clock::time_point now) {
  for (auto& [id, t] : trials_) {
    if (t.reattach_deadline == Clock::time_point{} || now <= t.reattach_deadline) continue;
    t.reattach_deadline = {};
    bool lost = false;
    for (auto& m : t.members) {
      if (m.live && !m.attached) {
        lost = true;
        MemberGone(t, m);
      }
    }
    if (lost && t.proto.state() == v1::TRIAL_RUNNING) {
      RequeueOrFail(t, "no worker re-attached it after the coordinator restarted");
    } else if (lost) {
      MaybeReleaseGroup(t);  // stopped meanwhile (requeued, ended): its group waited for these members
    }
  }
}

}  // namespace ladder::server
