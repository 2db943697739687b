// TrialManager: after a coordinator restart — the stored trials come back, running ones wait one lease for their
// workers to re-attach them, and the scheduler takes back every group where it runs; a search that no node up can
// hold is said only once the workers have had their registration window.
#include <algorithm>
#include <utility>

#include "common/log.h"
#include "server/params_codec.h"
#include "server/trial_manager.h"
#include "server/log_component.h"

namespace ladder::server {

namespace {

// A RUNNING trial's members, as its stored placement says; none is attached until its worker re-registers.
void RestoreMembers(TrialRecord& t, v1::Launcher launcher) {
  for (const auto& p : t.proto.placement()) {
    TrialRecord::Member m;
    m.node_id = p.node_id();
    m.epoch = t.epoch;
    m.slots.assign(p.slots().begin(), p.slots().end());
    m.gpus.assign(p.gpus().begin(), p.gpus().end());
    m.first_rank = p.first_rank();
    // mpirun launches: only the first node runs a process the workers know of.
    m.live = (launcher != v1::LAUNCHER_MPIRUN && launcher != v1::LAUNCHER_SRUN) || p.first_rank() == 0;
    m.attached = !m.live;
    t.members.push_back(std::move(m));
  }
}

// Whether the trial's current run was told to stop to wait in the queue (a preemption, the coordinator's pause)
// before a crash. The decision's journal entry (trial_preempted) is committed with it, before the cancel goes out,
// so it is the stored intent: one after the run's trial_assigned entry means the run is stopping to wait.
bool StoppingToWait(const std::vector<v1::JournalEntry>& journal) {
  for (auto it = journal.rbegin(); it != journal.rend(); ++it) {
    if (it->kind() == "trial_preempted") return true;
    if (it->kind() == "trial_assigned") return false;
  }
  return false;
}

constexpr int kJournalLookback = 200;  // entries of a running trial read back for its intent (newest first)

}  // namespace

void TrialManager::Load(Clock::time_point reattach_deadline) {
  std::vector<int64_t> epochs;
  std::vector<std::string> outside_stops;
  auto loaded = store_.LoadTrials(&epochs, &outside_stops);
  const std::map<int64_t, double> ended_node_seconds = store_.LoadEndedNodeSeconds();
  std::map<int64_t, std::vector<double>> constraints = store_.LoadTrialConstraints();  // schema 17
  int64_t max_epoch = store_.MaxAssignmentEpoch();
  for (size_t i = 0; i < loaded.size(); ++i) {
    TrialRecord t;
    t.proto = std::move(loaded[i]);
    t.epoch = epochs[i];
    max_epoch = std::max(max_epoch, t.epoch);
    for (const auto& [k, v] : t.proto.params()) t.params[k] = FromProto(v);
    t.proto.set_checkpoint_dir(CheckpointDir(t));
    const int64_t sid = t.proto.search_id();
    if (!owner_->Has(sid)) continue;
    const v1::Search& s = owner_->Search(sid);
    const search::SearchSpec& spec = owner_->Spec(sid);
    const int stored_nodes = t.proto.group().nodes();
    *t.proto.mutable_group() = s.group();
    if (stored_nodes > 0) {
      t.proto.mutable_group()->set_nodes(stored_nodes);
    } else if (search::ScalesNodes(spec.scheduler) && !t.proto.workflow_step() && !t.proto.probe()) {
      t.proto.mutable_group()->set_nodes(search::NodeLevels(spec.scheduler, t.proto.number()).front());
    }
    SearchTrials& index = by_search_[sid];
    index.ids.push_back(t.proto.id());
    if (auto ns = ended_node_seconds.find(t.proto.id()); ns != ended_node_seconds.end()) {
      t.proto.set_node_seconds(ns->second);
      index.ended_node_seconds += ns->second;
    }
    if (t.proto.has_objective()) t.last_objective = t.best_objective = t.proto.objective();
    if (auto c = constraints.find(t.proto.id()); c != constraints.end()) {
      t.proto.mutable_constraints()->Assign(c->second.begin(), c->second.end());
      t.proto.set_infeasible(search::Infeasible(c->second));
    }
    switch (t.proto.state()) {
      case v1::TRIAL_PENDING: index.pending.insert(t.proto.id()); break;
      case v1::TRIAL_RUNNING:
        index.running.insert(t.proto.id());
        RestoreMembers(t, s.group().launcher());
        // A preemption decided before the crash holds: its cancelled exit puts the trial back in the queue with its
        // attempt (not a retry), and a re-attached run is told again to stop (Reattach).
        t.preempting = StoppingToWait(store_.LoadTrialJournal(t.proto.id(), kJournalLookback));
        // A member stopped from outside ladder before the crash holds too (stored with the trial, schema 11): the
        // others' exits requeue it as that stop, and a re-attached member is told again to stop (Reattach).
        t.outside_stop = outside_stops[i];
        OpenRun(t, t.proto.started_unix(), static_cast<int>(t.members.size()));  // counts on from its start
        t.reattach_deadline = reattach_deadline;
        t.last_progress = Clock::now();
        // Rebuild the objective seen so far from the stored points.
        for (const auto& point : store_.LoadMetrics(t.proto.id())) {
          t.NoteObjectives(spec, point);
          auto it = point.values().find(s.objective_metric());
          if (it == point.values().end()) continue;
          t.last_objective = it->second;
          bool better = !t.best_objective || (s.direction() == v1::MAXIMIZE ? it->second > *t.best_objective
                                                                            : it->second < *t.best_objective);
          if (better) t.best_objective = it->second;
        }
        break;
      case v1::TRIAL_COMPLETED: ++index.completed; break;
      case v1::TRIAL_FAILED: ++index.failed; break;
      case v1::TRIAL_CANCELLED: ++index.cancelled; break;
      default: break;
    }
    t.workflow_step = s.ensemble().retrain_trial_id() == t.proto.id();
    t.proto.set_workflow_step(t.workflow_step);
    int64_t id = t.proto.id();
    trials_.emplace(id, std::move(t));
  }
  next_assignment_epoch_ = max_epoch + 1;
}

void TrialManager::AttachToScheduler() {
  for (auto& [id, t] : trials_) {
    if (owner_->Search(t.proto.search_id()).state() != v1::SEARCH_RUNNING) continue;
    if (t.proto.state() == v1::TRIAL_PENDING) {
      Submit(id);
    } else if (t.proto.state() == v1::TRIAL_RUNNING) {
      scheduler::NodeGroup group;
      for (const auto& m : t.members) {
        auto idx = sched_.cluster().IndexOf(m.node_id);
        if (!idx) break;
        group.slices.push_back({*idx, m.slots, m.gpus, m.first_rank});
      }
      auto st = group.size() == static_cast<int>(t.members.size())
                    ? sched_.Attach(GroupRequestFor(t), group, SchedNow())
                    : scheduler::Status::NotFound("a node of its placement is unknown");
      if (st.ok()) {
        t.sched = TrialRecord::Sched::kRunning;
      } else {
        // It cannot hold its nodes; it is requeued if its workers do not re-attach it in time.
        LogWarning(kLog, "trial " + std::to_string(id) + ": cannot re-attach its node group: " + st.message());
      }
    }
  }
}

void TrialManager::WarnIfInfeasible(const scheduler::GroupRequest& req, int64_t search_id, int64_t trial_id) {
  if (infeasible_logged_.count(search_id)) return;
  if (Clock::now() < sched_epoch_ + opt_.RegistrationWindow()) {  // its nodes may be registering still
    infeasible_deferred_.try_emplace(search_id, trial_id);
    return;
  }
  if (auto f = sched_.Feasible(req); !f.ok()) {
    infeasible_logged_.insert(search_id);
    LogWarning(kLog, "search " + std::to_string(search_id) + ": its trials wait: " + f.message());
  }
}

void TrialManager::WarnInfeasibleAfterRegistration(Clock::time_point now) {
  if (infeasible_deferred_.empty() || now < sched_epoch_ + opt_.RegistrationWindow()) return;
  for (const auto& [sid, tid] : std::exchange(infeasible_deferred_, {})) {
    auto it = trials_.find(tid);
    if (it == trials_.end() || it->second.sched != TrialRecord::Sched::kQueued) continue;  // it started, or ended
    WarnIfInfeasible(GroupRequestFor(it->second), sid, tid);
  }
}

}  // namespace ladder::server
