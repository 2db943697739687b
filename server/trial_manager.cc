// TrialManager: the trial state machine — state changes, stops, requeues, the end of a trial, preemption, and what
// searches decide for a trial. Creation, the queue and launch, worker reports, PBT's hand-over and recovery are in
// trial_manager_queue.cc, trial_manager_reports.cc, trial_manager_exploit.cc and trial_manager_recovery.cc.
#include <algorithm>

#include "common/log.h"
#include "server/params_codec.h"
#include "server/trial_manager.h"
#include "common/wall_clock.h"
#include "server/log_component.h"

namespace ladder::server {

namespace {

const char* EndWord(v1::TrialState state) {
  return state == v1::TRIAL_COMPLETED ? "completed" : state == v1::TRIAL_FAILED ? "failed" : "cancelled";
}

// The seconds a trial's runs ran, summed (a run still open counts none).
double RunSeconds(const std::vector<v1::Attempt>& runs) {
  double total = 0;
  for (const auto& r : runs) total += std::max(0.0, r.ended_unix() - r.started_unix());
  return total;
}

// A metric of a trial whose last run exited 0: one it prints at its last reported value, node_hours and wall_time
// (search/core/spec.h) measured here (`run_seconds`: its runs' seconds, summed); nullopt when it never reported it.
std::optional<double> MeasureMetric(const std::string& metric, const TrialRecord& t, double run_seconds) {
  if (metric == search::kNodeHoursMetric) return t.proto.node_seconds() / 3600;
  if (metric == search::kWallTimeMetric) return run_seconds;
  auto it = t.last_values.find(metric);
  return it != t.last_values.end() ? std::optional<double>(it->second) : std::nullopt;
}

// Several objectives: each one's value, in the spec's order; empty with *missing set to the first metric it never
// reported.
std::vector<double> MeasureObjectives(const search::SearchSpec& spec, const TrialRecord& t, double run_seconds,
                                      std::string* missing) {
  std::vector<double> values;
  for (const search::Objective& o : spec.objectives) {
    std::optional<double> v = MeasureMetric(o.metric, t, run_seconds);
    if (!v) {
      *missing = o.metric;
      return {};
    }
    values.push_back(*v);
  }
  return values;
}

// Constraints: each one's signed value (search::Constraint::Signed) for a trial whose last run exited 0, in the
// spec's order, its metric read as an objective's is; empty with *missing set to the first metric it never
// reported (no value says it held: the trial fails, as for a missing objective metric).
std::vector<double> MeasureConstraints(const search::SearchSpec& spec, const TrialRecord& t, double run_seconds,
                                       std::string* missing) {
  std::vector<double> values;
  for (const search::Constraint& c : spec.constraints) {
    std::optional<double> v = MeasureMetric(c.metric, t, run_seconds);
    if (!v) {
      *missing = c.metric;
      return {};
    }
    values.push_back(c.Signed(*v));
  }
  return values;
}

}  // namespace

TrialManager::TrialManager(store::Store& store, scheduler::NodeGroupScheduler& sched, NodeManager& nodes,
                           CommitOutbox& outbox, EventHub& hub, const CoordinatorOptions& options,
                           std::function<void()> request_schedule)
    : store_(store),
      sched_(sched),
      nodes_(nodes),
      outbox_(outbox),
      hub_(hub),
      opt_(options),
      request_schedule_(request_schedule),
      launcher_(nodes, outbox, options, std::move(request_schedule), [this](int64_t trial_id, int64_t epoch) {
        const TrialRecord* t = Find(trial_id);
        return t && t->epoch == epoch && t->AnyLive();
      }) {}

// ------------------------------------------------------------------------------------------------------------
// Reads
// ------------------------------------------------------------------------------------------------------------

const TrialRecord* TrialManager::Find(int64_t trial_id) const {
  auto it = trials_.find(trial_id);
  return it == trials_.end() ? nullptr : &it->second;
}

const SearchTrials& TrialManager::Of(int64_t search_id) const {
  static const SearchTrials kNone;
  auto it = by_search_.find(search_id);
  return it == by_search_.end() ? kNone : it->second;
}

const TrialRecord* TrialManager::ByNumber(int64_t search_id, int64_t number) const {
  for (int64_t id : Of(search_id).ids) {
    const TrialRecord& t = trials_.at(id);
    if (t.proto.number() == number) return &t;
  }
  return nullptr;
}

std::string TrialManager::CheckpointDir(const TrialRecord& t) const {
  return opt_.checkpoint_root + "/search-" + std::to_string(t.proto.search_id()) + "/trial-" +
         std::to_string(t.proto.id());
}

int TrialManager::Nodes(const TrialRecord& t) const {
  return t.proto.group().nodes() > 0 ? t.proto.group().nodes() : owner_->Spec(t.proto.search_id()).group.nodes;
}

std::map<std::string, std::string> TrialManager::Builtins(const TrialRecord& t) const {
  return {{"trial_id", std::to_string(t.proto.id())},
          {"trial_number", std::to_string(t.proto.number())},
          {"search_id", std::to_string(t.proto.search_id())},
          {"checkpoint_dir", CheckpointDir(t)},
          {"nodes", std::to_string(Nodes(t))},
          {"micro_batches", std::to_string(std::max(1, t.proto.micro_batches()))}};
}

void TrialManager::WriteProgress() {
  for (int64_t id : progress_dirty_) {
    auto it = trials_.find(id);
    if (it != trials_.end()) store_.UpdateTrialProgress(it->second.proto);
  }
  progress_dirty_.clear();
}

// ------------------------------------------------------------------------------------------------------------
// State and records
// ------------------------------------------------------------------------------------------------------------

void TrialManager::SetState(TrialRecord& t, v1::TrialState state) {
  SearchTrials& s = by_search_[t.proto.search_id()];
  auto bucket = [&](v1::TrialState st, int delta) {
    switch (st) {
      case v1::TRIAL_PENDING:
        if (delta > 0) s.pending.insert(t.proto.id()); else s.pending.erase(t.proto.id());
        break;
      case v1::TRIAL_RUNNING:
        if (delta > 0) s.running.insert(t.proto.id()); else s.running.erase(t.proto.id());
        break;
      case v1::TRIAL_COMPLETED: s.completed += delta; break;
      case v1::TRIAL_FAILED: s.failed += delta; break;
      case v1::TRIAL_CANCELLED: s.cancelled += delta; break;
      default: break;
    }
  };
  bucket(t.proto.state(), -1);
  t.proto.set_state(state);
  bucket(state, +1);
}

void TrialManager::Save(TrialRecord& t) {
  store_.UpdateTrial(t.proto, t.epoch, t.outside_stop);
  progress_dirty_.erase(t.proto.id());
}

void TrialManager::CloseAllocation(TrialRecord& t, const std::string& outcome) {
  const double now = WallNow();
  if (t.epoch != 0) store_.CloseAllocation(t.proto.id(), t.epoch, outcome, now);
  if (t.run_since > 0) {
    const double used = t.OpenNodeSeconds(now);
    t.proto.set_node_seconds(t.proto.node_seconds() + used);
    by_search_[t.proto.search_id()].ended_node_seconds += used;
    OpenRun(t, 0, 0);
  }
}

void TrialManager::OpenRun(TrialRecord& t, double since, int nodes) {
  SearchTrials& idx = by_search_[t.proto.search_id()];
  if (t.run_since > 0) {
    idx.open_nodes -= t.run_nodes;
    idx.open_node_starts -= (t.run_since - idx.open_origin) * t.run_nodes;
  }
  if (idx.open_nodes == 0) idx.open_node_starts = 0;  // no rounding carried past the last open run
  t.run_since = since;
  t.run_nodes = since > 0 ? nodes : 0;
  if (since <= 0) return;
  if (idx.open_nodes == 0) idx.open_origin = since;
  idx.open_nodes += t.run_nodes;
  idx.open_node_starts += (since - idx.open_origin) * t.run_nodes;
}

v1::Trial TrialManager::View(const TrialRecord& t, double now) const {
  v1::Trial out = t.proto;
  out.set_node_seconds(out.node_seconds() + t.OpenNodeSeconds(now));
  return out;
}

double TrialManager::NodeSeconds(int64_t search_id, double now) const {
  const SearchTrials& idx = Of(search_id);
  double total = idx.ended_node_seconds;
  // Sum over the open runs of nodes x (now - start), from the sums OpenRun keeps.
  if (idx.open_nodes > 0) total += std::max(0.0, (now - idx.open_origin) * idx.open_nodes - idx.open_node_starts);
  return total;
}

void TrialManager::AddHistory(const TrialRecord& t, v1::Trial* out) {
  out->set_log_tail(t.log_tail.empty() ? store_.LoadLogTail(t.proto.id()) : t.log_tail);
  for (auto& a : store_.LoadAttempts(t.proto.id())) *out->add_attempts() = std::move(a);
  for (auto& j : store_.LoadTrialJournal(t.proto.id(), 200)) *out->add_history() = std::move(j);
}

void TrialManager::SetRung(int64_t trial_id, int rung) {
  TrialRecord& t = At(trial_id);
  if (t.proto.rung() == rung) return;
  t.proto.set_rung(rung);
  progress_dirty_.insert(trial_id);
}

TrialRecord::Member* TrialManager::MemberOn(TrialRecord& t, const std::string& node, int64_t epoch) {
  for (auto& m : t.members) {
    if (m.node_id == node && m.epoch == epoch) return &m;
  }
  return nullptr;
}

void TrialManager::MemberGone(TrialRecord& t, TrialRecord::Member& m) {
  m.live = false;
  nodes_.RemoveRun(m.node_id, t.proto.id());
}

void TrialManager::StopMembers(TrialRecord& t, const std::string& reason) {
  for (auto& m : t.members) {
    if (!m.live) continue;
    // After a restart, a member whose worker has not re-attached it may still run: its worker's registration (the
    // run stopped, or told to stop) or the re-attach deadline ends it (Reattach, OnExited, CheckReattachDeadlines).
    if (!m.attached && t.reattach_deadline != Clock::time_point{}) continue;
    auto link = nodes_.Link(m.node_id);
    if (!link || !m.attached) {
      MemberGone(t, m);  // nothing runs there that anyone could stop or hear from
      continue;
    }
    v1::CoordinatorMessage cancel;
    cancel.mutable_cancel()->set_trial_id(t.proto.id());
    cancel.mutable_cancel()->set_assignment_epoch(m.epoch);
    cancel.mutable_cancel()->set_reason(reason);
    outbox_.SendAfterCommit(link, std::move(cancel));
  }
}

// ------------------------------------------------------------------------------------------------------------
// Requeue, end, preemption
// ------------------------------------------------------------------------------------------------------------

void TrialManager::RequeueOrFail(TrialRecord& t, const std::string& reason) {
  CloseAllocation(t, "lost");
  if (t.proto.state() != v1::TRIAL_RUNNING) {
    Save(t);
    MaybeReleaseGroup(t);
    return;
  }
  const int64_t sid = t.proto.search_id();
  if (owner_->Search(sid).state() == v1::SEARCH_RUNNING && t.proto.attempt() < owner_->Spec(sid).max_retries) {
    StopMembers(t, reason + "; the trial is requeued");
    t.proto.set_attempt(t.proto.attempt() + 1);
    t.proto.set_error(reason + "; requeued (attempt " + std::to_string(t.proto.attempt()) + ")");
    t.proto.clear_placement();
    t.proto.set_started_unix(0);
    t.epoch = 0;
    t.preempting = false;
    t.port_taken = false;
    t.early_stop.clear();
    t.exploit.reset();
    t.last_objective.reset();
    t.best_objective.reset();
    t.last_values.clear();
    t.watchdog_error.clear();
    t.outside_stop.clear();
    SetState(t, v1::TRIAL_PENDING);
    Save(t);
    hub_.Record("trial_requeued", sid, t.proto.id(), reason);
    LogWarning(kLog, "trial " + std::to_string(t.proto.id()) + " requeued: " + reason);
    hub_.Trial(t.proto);
    owner_->OnCountsChanged(sid);
    MaybeReleaseGroup(t);
    request_schedule_();
    return;
  }
  Finish(t, v1::TRIAL_FAILED, -1, reason + " (no retries left)");
}

void TrialManager::WaitForAnotherNode(TrialRecord& t, const std::string& reason) {
  t.preempting = true;
  t.proto.set_error(reason + "; the trial waits for another node");
  StopMembers(t, t.proto.error());
  if (!t.AnyLive()) FinishPreemption(t);
}

void TrialManager::Finish(TrialRecord& t, v1::TrialState state, int exit_code, const std::string& error) {
  t.proto.set_exit_code(exit_code);
  t.proto.set_error(error);
  t.proto.set_finished_unix(WallNow());
  t.preempting = false;
  SetState(t, state);
  Save(t);
  // Whatever still runs of the group stops now; its nodes go back to the scheduler once it has.
  StopMembers(t, "trial " + std::string(state == v1::TRIAL_COMPLETED ? "completed" : "ended") +
                     (error.empty() ? "" : ": " + error));
  hub_.Record(std::string("trial_") + EndWord(state), t.proto.search_id(), t.proto.id(), error);
  t.exploit.reset();
  hub_.Trial(t.proto);
  if (state == v1::TRIAL_FAILED) LogWarning(kLog, "trial " + std::to_string(t.proto.id()) + " failed: " + error);
  MaybeReleaseGroup(t);
  owner_->OnTrialEnded(t.proto.id());
}

void TrialManager::Preempt(TrialRecord& t, int64_t for_trial) {
  std::string reason = "preempted by trial " + std::to_string(for_trial);
  if (const TrialRecord* f = Find(for_trial)) {
    reason += " (" + std::string(scheduler::PriorityName(GroupRequestFor(*f).priority)) + " priority)";
  }
  LogInfo(kLog, "trial " + std::to_string(t.proto.id()) + " " + reason + "; it resumes from its checkpoint later");
  StopToWait(t, reason);
}

void TrialManager::StopToWait(TrialRecord& t, const std::string& reason) {
  t.preempting = true;
  hub_.Record("trial_preempted", t.proto.search_id(), t.proto.id(), reason);
  t.proto.set_error(reason);
  StopMembers(t, reason + "; it resumes from its checkpoint later");
  if (!t.AnyLive()) FinishPreemption(t);
}

void TrialManager::PreemptAll(const std::string& reason) {
  std::vector<int64_t> running;
  for (const auto& [sid, st] : by_search_) running.insert(running.end(), st.running.begin(), st.running.end());
  for (int64_t id : running) {
    TrialRecord& t = At(id);
    if (t.preempting || !t.early_stop.empty() || t.exploit || !t.watchdog_error.empty()) continue;
    StopToWait(t, reason);
  }
}

int TrialManager::Running() const {
  int n = 0;  // a live run belongs to a RUNNING trial: only those are looked at
  for (const auto& [sid, st] : by_search_) {
    for (int64_t id : st.running) n += trials_.at(id).AnyLive() ? 1 : 0;
  }
  return n;
}

void TrialManager::FinishPreemption(TrialRecord& t) {
  if (t.proto.state() != v1::TRIAL_RUNNING) return;
  t.proto.set_preemptions(t.proto.preemptions() + 1);
  BackToQueue(t, "preempted");
}

void TrialManager::BackToQueue(TrialRecord& t, const std::string& outcome) {
  CloseAllocation(t, outcome);
  t.preempting = false;
  t.port_taken = false;
  t.early_stop.clear();
  t.exploit.reset();
  t.proto.clear_placement();
  t.proto.set_started_unix(0);
  t.epoch = 0;
  t.last_objective.reset();
  t.best_objective.reset();
  t.last_values.clear();
  t.watchdog_error.clear();
  t.outside_stop.clear();
  SetState(t, v1::TRIAL_PENDING);
  Save(t);
  hub_.Trial(t.proto);
  owner_->OnCountsChanged(t.proto.search_id());
  MaybeReleaseGroup(t);
}

// ------------------------------------------------------------------------------------------------------------
// What searches decide
// ------------------------------------------------------------------------------------------------------------

void TrialManager::StopEarly(int64_t trial_id, const std::string& reason) {
  TrialRecord& t = At(trial_id);
  t.early_stop = reason;  // names the scheduler: "asha: rung 1 (epoch 3): ..."
  StopMembers(t, "stopped early by " + t.early_stop);
  AfterStopDecision(t);
}

void TrialManager::StopToExploit(int64_t trial_id, search::TrialDecision decision) {
  TrialRecord& t = At(trial_id);
  t.exploit = std::move(decision);
  StopMembers(t, t.exploit->reason);
  AfterStopDecision(t);
}

void TrialManager::AfterStopDecision(TrialRecord& t) {
  if (t.AnyLive()) return;  // its exits end it (trial_manager_reports.cc)
  if (t.exploit) {
    FinishExploit(t);
  } else {
    CompleteFromExit(t.proto.id());
  }
}

void TrialManager::StopToFail(int64_t trial_id, const std::string& why) {
  TrialRecord& t = At(trial_id);
  if (!t.watchdog_error.empty()) return;
  t.watchdog_error = why;
  StopMembers(t, t.watchdog_error);
}

void TrialManager::RestoreDecision(int64_t trial_id, search::TrialDecision decision) {
  TrialRecord& t = At(trial_id);
  if (decision.exploit()) {
    if (ByNumber(t.proto.search_id(), decision.source_trial)) t.exploit = std::move(decision);
  } else {
    t.early_stop = decision.reason;
  }
}

void TrialManager::Promote(int64_t trial_id, int nodes, const std::string& why) {
  TrialRecord& t = At(trial_id);
  hub_.Record("trial_promoted", t.proto.search_id(), t.proto.id(), why);
  LogInfo(kLog, "trial " + std::to_string(t.proto.id()) + ": " + why);
  t.proto.mutable_group()->set_nodes(nodes);
  t.proto.set_error(why);
  BackToQueue(t, "promoted");
}

void TrialManager::CompleteFromExit(int64_t trial_id) {
  TrialRecord& t = At(trial_id);
  const search::SearchSpec& spec = owner_->Spec(t.proto.search_id());
  CloseAllocation(t, t.early_stop.empty() ? "exited" : "stopped early");
  std::string missing;  // the objective (or constrained) metric the run never reported
  std::optional<double> objective;
  // The runs' seconds only when a metric is wall_time (a read of the trial's attempts from the store).
  bool wall = false;
  for (const search::Objective& o : spec.objectives) wall = wall || o.metric == search::kWallTimeMetric;
  for (const search::Constraint& c : spec.constraints) wall = wall || c.metric == search::kWallTimeMetric;
  const double run_seconds = wall ? RunSeconds(store_.LoadAttempts(t.proto.id())) : 0;
  if (spec.MultiObjective()) {
    std::vector<double> values = MeasureObjectives(spec, t, run_seconds, &missing);
    if (missing.empty()) {
      t.proto.mutable_objectives()->Assign(values.begin(), values.end());
      objective = values.front();
    }
  } else {
    objective = t.Objective(spec.objective.scope == search::Objective::Scope::kBest);
    if (!objective) missing = owner_->Search(t.proto.search_id()).objective_metric();
  }
  std::string kind = "objective";
  std::vector<double> constraints;
  if (objective && !spec.constraints.empty()) {
    constraints = MeasureConstraints(spec, t, run_seconds, &missing);
    if (!missing.empty()) {
      objective.reset();
      kind = "constrained";
    }
  }
  if (!objective) {
    Finish(t, v1::TRIAL_FAILED, 0,
           "exited 0 without reporting the " + kind + " metric '" + missing + "' (" +
               std::to_string(t.proto.metric_count()) + " metrics lines, " + std::to_string(t.proto.ignored_lines()) +
               " ignored lines)");
    return;
  }
  if (!constraints.empty()) {
    t.proto.mutable_constraints()->Assign(constraints.begin(), constraints.end());
    t.proto.set_infeasible(search::Infeasible(constraints));
    store_.SetTrialConstraints(t.proto.id(), constraints);  // in the batch that completes it
  }
  t.proto.set_has_objective(true);
  t.proto.set_objective(*objective);
  // A trial stopped early keeps the scheduler's reason as its note (it is not an error: it COMPLETED).
  Finish(t, v1::TRIAL_COMPLETED, 0, t.early_stop.empty() ? "" : "stopped early: " + t.early_stop);
}

void TrialManager::FailBeforeStart(int64_t trial_id, const std::string& error) {
  TrialRecord& t = At(trial_id);
  SetState(t, v1::TRIAL_RUNNING);
  Finish(t, v1::TRIAL_FAILED, -1, error);
}

void TrialManager::CancelAll(int64_t search_id, const std::string& error) {
  const SearchTrials& s = Of(search_id);
  std::vector<int64_t> pending(s.pending.begin(), s.pending.end());
  for (int64_t id : pending) {
    TrialRecord& t = At(id);
    t.proto.set_finished_unix(WallNow());
    t.proto.set_error(error);
    SetState(t, v1::TRIAL_CANCELLED);
    Save(t);
    if (t.sched == TrialRecord::Sched::kQueued) {
      sched_.Cancel(id);
      t.sched = TrialRecord::Sched::kNone;
    }
    MaybeReleaseGroup(t);  // a requeued trial whose old processes still stop keeps its group until then
    hub_.Trial(t.proto);
  }
  std::vector<int64_t> running(s.running.begin(), s.running.end());
  for (int64_t id : running) {
    TrialRecord& t = At(id);
    t.proto.set_finished_unix(WallNow());
    t.proto.set_error(error);
    t.preempting = false;
    SetState(t, v1::TRIAL_CANCELLED);
    Save(t);
    StopMembers(t, t.proto.error());
    if (!t.AnyLive()) CloseAllocation(t, "cancelled");
    MaybeReleaseGroup(t);
    hub_.Trial(t.proto);
  }
}

}  // namespace ladder::server
