// TrialManager: creation, the queue and the node group — new trials, their requests to the node-group scheduler,
// its passes, a run's record at launch (its epoch, members, command and allocation) and the group's release once
// every member has stopped. The starts themselves go out through the TrialLauncher (trial_launcher.h).
#include <algorithm>
#include <utility>

#include "common/id_set.h"
#include "common/log.h"
#include "server/params_codec.h"
#include "server/trial_manager.h"
#include "common/wall_clock.h"
#include "server/log_component.h"

namespace ladder::server {

namespace {

scheduler::Priority SchedPriority(v1::Priority p) {
  switch (p) {
    case v1::PRIORITY_HERO: return scheduler::Priority::kHero;
    case v1::PRIORITY_PROMOTED: return scheduler::Priority::kPromoted;
    default: return scheduler::Priority::kSearch;
  }
}

// The trial's command: the spec's (or, for the ensemble's retrain step, ensemble.retrain) with its placeholders.
search::Substituted CommandOf(const search::SearchSpec& spec, const TrialRecord& t,
                              std::map<std::string, std::string> builtins) {
  if (!t.workflow_step) return search::SubstituteCommand(spec, t.params, builtins);
  search::SearchSpec step = spec;
  step.command = spec.ensemble.retrain;
  builtins["ensemble_file"] = t.proto.checkpoint_dir() + "/ensemble.json";
  search::Substituted sub = search::SubstituteCommand(step, t.params, builtins);
  sub.env["LADDER_ENSEMBLE_FILE"] = builtins["ensemble_file"];
  return sub;
}

}  // namespace

const TrialRecord& TrialManager::Create(int64_t search_id, int number, search::Params params, bool workflow_step,
                                       int probe_micro_batches, bool enqueued) {
  const search::SearchSpec& spec = owner_->Spec(search_id);
  TrialRecord fresh;
  fresh.params = std::move(params);
  fresh.workflow_step = workflow_step;
  auto& p = fresh.proto;
  p.set_search_id(search_id);
  p.set_number(number);
  p.set_state(v1::TRIAL_PENDING);
  p.set_workflow_step(workflow_step);
  p.set_probe(probe_micro_batches > 0);
  p.set_micro_batches(probe_micro_batches);
  p.set_enqueued(enqueued);
  *p.mutable_group() = owner_->Search(search_id).group();
  if (search::ScalesNodes(spec.scheduler) && fresh.Sampled()) {
    p.mutable_group()->set_nodes(search::NodeLevels(spec.scheduler, p.number()).front());
  }
  p.set_created_unix(WallNow());
  for (const auto& [k, v] : fresh.params) (*p.mutable_params())[k] = ToProto(v);
  store_.InsertTrial(&p);
  const int64_t id = p.id();
  if (workflow_step) p.set_checkpoint_dir(CheckpointDir(fresh));  // its ensemble file is written there before it runs
  SearchTrials& s = by_search_[search_id];
  s.ids.push_back(id);
  s.pending.insert(id);
  return trials_.emplace(id, std::move(fresh)).first->second;
}

scheduler::GroupRequest TrialManager::GroupRequestFor(const TrialRecord& t) const {
  const search::SearchSpec& spec = owner_->Spec(t.proto.search_id());
  scheduler::GroupRequest r;
  r.trial_id = t.proto.id();
  r.nodes = Nodes(t);
  r.ranks_per_node = spec.group.ranks_per_node;
  r.gpus_per_rank = spec.group.gpus_per_rank;
  r.pool = spec.group.pool;
  r.priority = SchedPriority(owner_->Search(t.proto.search_id()).priority());
  // Node count as the fidelity: a trial past its first stage was promoted by the stopping rule.
  if (search::ScalesNodes(spec.scheduler) && t.Sampled() &&
      r.nodes > search::NodeLevels(spec.scheduler, t.proto.number()).front()) {
    r.priority = std::max(r.priority, scheduler::Priority::kPromoted);
  }
  return r;
}

double TrialManager::SchedNow() const {
  return std::chrono::duration<double>(Clock::now() - sched_epoch_).count();
}

void TrialManager::Submit(int64_t trial_id) {
  TrialRecord& t = At(trial_id);
  auto req = GroupRequestFor(t);
  auto st = sched_.Submit(req, SchedNow());
  if (!st.ok()) {
    LogError(kLog, "trial " + std::to_string(t.proto.id()) + ": scheduler: " + st.message());
    return;
  }
  t.sched = TrialRecord::Sched::kQueued;
  WarnIfInfeasible(req, t.proto.search_id(), trial_id);
}

void TrialManager::RunScheduler() {
  const size_t budget = launcher_.OpenStarts();
  if (budget == 0) {  // hearing of a start asks for the next pass
    launcher_.PassEnded(0, 0, sched_.queued() > 0);
    return;
  }
  size_t started = 0;
  for (const auto& d : sched_.Schedule(SchedNow(), budget)) {
    auto it = trials_.find(d.trial_id);
    if (it == trials_.end()) continue;
    TrialRecord& t = it->second;
    if (d.kind == scheduler::Decision::Kind::kPreempt) {
      Preempt(t, d.for_trial_id);
    } else {
      t.sched = TrialRecord::Sched::kRunning;
      ++started;
      Launch(t, d.group);
      launcher_.AfterLaunch(t, started);
    }
  }
  launcher_.PassEnded(started, budget, sched_.queued() > 0);
}

void TrialManager::MaybeReleaseGroup(TrialRecord& t) {
  if (t.AnyLive()) return;
  std::vector<std::string> nodes;
  for (const auto& m : t.members) nodes.push_back(m.node_id);
  t.members.clear();
  const bool pending = t.proto.state() == v1::TRIAL_PENDING;
  // A trial promoted to another node count (node count as the fidelity) is a new request, not a requeue.
  const bool reshaped = Nodes(t) != static_cast<int>(nodes.size());
  if (t.sched == TrialRecord::Sched::kRunning) {
    auto st = pending && !reshaped ? sched_.Requeue(t.proto.id()) : sched_.Finish(t.proto.id());
    if (!st.ok()) LogError(kLog, "trial " + std::to_string(t.proto.id()) + ": scheduler: " + st.message());
    t.sched = pending && !reshaped && st.ok() ? TrialRecord::Sched::kQueued : TrialRecord::Sched::kNone;
  }
  if (pending && t.sched == TrialRecord::Sched::kNone) Submit(t.proto.id());
  for (const auto& n : nodes) nodes_.UpdateBusy(n);
  request_schedule_();
}

void TrialManager::AssignMembers(TrialRecord& t, const scheduler::NodeGroup& group) {
  t.members.clear();
  t.proto.clear_placement();
  const auto& cluster = sched_.cluster();
  for (const auto& slice : group.slices) {
    TrialRecord::Member m;
    m.node_id = cluster.spec(slice.node).id;
    m.epoch = t.epoch;
    m.slots = slice.slots;
    m.gpus = slice.gpus;
    m.first_rank = slice.first_rank;
    auto* pl = t.proto.add_placement();
    pl->set_node_id(m.node_id);
    std::string hostname = nodes_.Hostname(m.node_id);
    if (!hostname.empty()) pl->set_hostname(hostname);
    for (int sl : m.slots) pl->add_slots(sl);
    for (int g : m.gpus) pl->add_gpus(g);
    pl->set_first_rank(m.first_rank);
    t.members.push_back(std::move(m));
  }
}

void TrialManager::Launch(TrialRecord& t, const scheduler::NodeGroup& group) {
  const search::SearchSpec& spec = owner_->Spec(t.proto.search_id());
  const auto& p = t.proto;
  t.proto.set_checkpoint_dir(CheckpointDir(t));
  t.epoch = next_assignment_epoch_++;
  AssignMembers(t, group);
  search::Substituted sub = CommandOf(spec, t, Builtins(t));
  if (!sub.error.empty()) {
    SetState(t, v1::TRIAL_RUNNING);
    Finish(t, v1::TRIAL_FAILED, -1, std::string(t.workflow_step ? "ensemble.retrain: " : "command: ") + sub.error);
    return;
  }
  t.last_progress = Clock::now();
  t.watchdog_error.clear();
  t.preempting = false;
  t.port_taken = false;
  t.early_stop.clear();
  t.exploit.reset();
  t.proto.clear_command();
  for (const auto& a : sub.argv) t.proto.add_command(a);
  t.proto.set_started_unix(WallNow());
  t.proto.clear_last_metrics();
  t.proto.set_metric_count(0);
  t.proto.set_ignored_lines(0);
  t.proto.clear_last_ignored_line();
  SetState(t, v1::TRIAL_RUNNING);
  std::string nodes, where;
  for (const auto& m : t.members) {
    nodes += (nodes.empty() ? "" : ",") + m.node_id;
    where += (where.empty() ? "" : " ") + m.node_id + ":s[" + FormatIdSet(m.slots) + "]";
  }
  // The same instant as the stored run's start: node-seconds agree after a restart.
  OpenRun(t, WallNow(), static_cast<int>(t.members.size()));
  store_.OpenAllocation(p.id(), p.attempt(), nodes, group.ToString(), t.epoch, t.run_since);
  t.log_tail.clear();
  Save(t);
  hub_.Record("trial_assigned", p.search_id(), p.id(), where + " epoch " + std::to_string(t.epoch));

  launcher_.Start(t, spec, Nodes(t), sub);
  for (auto& m : t.members) nodes_.UpdateBusy(m.node_id);  // mpirun's other nodes are held too
  if (!t.AnyLive()) {
    RequeueOrFail(t, "no worker stream to start it on");
    return;
  }
  hub_.Trial(t.proto);
  owner_->OnCountsChanged(p.search_id());
}

}  // namespace ladder::server
