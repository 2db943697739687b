// SearchManager: creation, the samplers, the best trial, the failure budget and the search's end. The stopping
// rules and the hero band are in search_manager_decisions.cc, ensembles in search_manager_ensemble.cc.
#include "server/search_manager.h"

#include <cctype>

#include "common/log.h"
#include "search/spec/spec_reader.h"
#include "common/wall_clock.h"
#include "server/log_component.h"

namespace ladder::server {

namespace {

bool IsTerminal(v1::TrialState s) {
  return s == v1::TRIAL_COMPLETED || s == v1::TRIAL_FAILED || s == v1::TRIAL_CANCELLED;
}

// "completed", "cancelled", "failed", "running": how users say a search's state.
std::string SearchStateWord(v1::SearchState st) {
  std::string name = v1::SearchState_Name(st);
  if (name.rfind("SEARCH_", 0) == 0) name = name.substr(7);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

std::optional<double> ObjectiveOf(const v1::Trial& t) {
  return t.has_objective() ? std::optional<double>(t.objective()) : std::nullopt;
}

}  // namespace

SearchManager::SearchManager(store::Store& store, TrialManager& trials, CommitOutbox& outbox, EventHub& hub,
                             std::function<void()> request_schedule)
    : store_(store), trials_(trials), outbox_(outbox), hub_(hub), request_schedule_(std::move(request_schedule)) {}

std::string SearchManager::Prepare(SearchRecord& s) {
  if (s.spec.MultiObjective()) {
    if (std::string err = PrepareMultiObjective(s); !err.empty()) return err;
  } else {
    s.sampler = search::MakeSampler(s.spec);
  }
  s.stopping_rule = search::MakeStoppingRule(s.spec);
  SetRungs(s);
  SetGroupFromSpec(s);
  SetObjectivesFromSpec(s);
  std::string err = s.band.Load(s.proto.plan_json());
  return err.empty() ? err : "plan_json: " + err;
}

void SearchManager::SetGroupFromSpec(SearchRecord& s) {
  switch (s.spec.group.launcher) {
    case search::Launcher::kMpirun: s.proto.mutable_group()->set_launcher(v1::LAUNCHER_MPIRUN); break;
    case search::Launcher::kSrun: s.proto.mutable_group()->set_launcher(v1::LAUNCHER_SRUN); break;
    default: s.proto.mutable_group()->set_launcher(v1::LAUNCHER_PER_NODE); break;
  }
  s.proto.mutable_group()->set_pool(s.spec.group.pool);
}

// ------------------------------------------------------------------------------------------------------------
// Recovery
// ------------------------------------------------------------------------------------------------------------

void SearchManager::Load() {
  for (auto& proto : store_.LoadSearches()) {
    SearchRecord s;
    s.proto = std::move(proto);
    if (s.proto.state() == v1::SEARCH_RUNNING) {
      auto parsed = search::ParseSpec(s.proto.spec_yaml(), s.proto.name());
      if (!parsed.ok()) {
        // The spec was valid when accepted; a newer parser may disagree. Fail it visibly, don't guess.
        s.proto.set_state(v1::SEARCH_FAILED);
        s.proto.set_error("stored spec no longer parses: " + parsed.errors.front().ToString());
        if (!store_.read_only()) store_.UpdateSearch(s.proto);
      } else {
        s.spec = std::move(*parsed.spec);
        if (std::string err = Prepare(s); !err.empty()) {
          LogWarning(kLog, "search " + std::to_string(s.proto.id()) + ": " + err);
        }
      }
    } else if (auto parsed = search::ParseSpec(s.proto.spec_yaml(), s.proto.name()); parsed.ok()) {
      s.spec = std::move(*parsed.spec);  // an ended search: only what the dashboards show of it
      SetRungs(s);
      SetGroupFromSpec(s);  // its launcher, pool and objectives are not stored: the spec says them
      SetObjectivesFromSpec(s);
    }
    int64_t id = s.proto.id();
    searches_.emplace(id, std::move(s));
  }
  LoadQueues();
  LoadWarmStarts();
}

void SearchManager::Recover() {
  const auto reopened = store_.LoadReopened();
  for (auto& [id, s] : searches_) {
    for (int64_t tid : trials_.Of(id).ids) {
      const TrialRecord& t = trials_.Get(tid);
      s.next_number = std::max(s.next_number, t.proto.number() + 1);
      if (t.proto.probe()) s.probe_numbers.insert(t.proto.number());
    }
    for (int64_t tid : trials_.Of(id).ids) {
      const TrialRecord& t = trials_.Get(tid);
      // The retrain step and the probes are no configuration of the space.
      if (!t.Sampled() || !HasSampler(s)) continue;
      if (IsTerminal(t.proto.state())) {
        TellSampler(s, t);
      } else {
        // Pending or running: a model-based sampler spreads new suggestions away from it, as before the restart.
        AddPendingToSampler(s, SamplerNumber(s, t.proto.number()), t.params);
      }
    }
    for (int64_t tid : trials_.Of(id).ids) {
      const TrialRecord& t = trials_.Get(tid);
      // As on the live path: the retrain step and the probes are no configuration, so never the best trial.
      if (t.proto.state() == v1::TRIAL_COMPLETED && t.proto.has_objective() && t.Sampled()) {
        ConsiderBest(s, t);
        UpdateFront(s, t);  // the Pareto front again from the stored values (an ended search's too)
      }
    }
    if (s.stopping_rule) ReplayStoppingRule(s);
    // Reopened by a probe: it samples nothing and ends as it had once its probes have ended (the state is stored
    // with the search, schema 10).
    if (auto r = reopened.find(id); s.proto.state() == v1::SEARCH_RUNNING && r != reopened.end()) {
      s.reopened = SearchRecord::Ended{static_cast<v1::SearchState>(r->second.state), r->second.error};
      continue;
    }
    // A database from before schema 10 does not say: running although over its failure budget, only a probe
    // reopened it (reaching the budget ends a search at once), and it fails again once its probes have ended.
    const int failed = BudgetFailures(s);
    if (s.proto.state() == v1::SEARCH_RUNNING && !s.probe_numbers.empty() && failed >= s.spec.max_failed_trials) {
      s.reopened = SearchRecord::Ended{v1::SEARCH_FAILED, std::to_string(failed) +
                                                              " trials failed (budget.max_failed_trials is " +
                                                              std::to_string(s.spec.max_failed_trials) + ")"};
    }
  }
}

// ------------------------------------------------------------------------------------------------------------
// Requests
// ------------------------------------------------------------------------------------------------------------

grpc::Status SearchManager::Create(const v1::CreateSearchRequest& req, v1::Search* out) {
  std::string path = req.spec_path().empty() ? "<spec>" : req.spec_path();
  auto parsed = search::ParseSpec(req.spec_yaml(), path);
  if (!parsed.ok()) {
    std::string msg;
    for (const auto& e : parsed.errors) msg += (msg.empty() ? "" : "\n") + e.ToString();
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, msg);
  }
  if (!v1::Priority_IsValid(req.priority())) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "priority: unknown value " + std::to_string(req.priority()));
  }
  SearchRecord s;
  s.spec = std::move(*parsed.spec);
  WarmStart warm;
  if (s.spec.warm_start.search_id != 0) {
    if (std::string err = GatherWarmStart(s.spec, &warm); !err.empty()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, path + ": " + err);
    }
  }
  auto& p = s.proto;
  p.set_name(s.spec.name);
  p.set_state(v1::SEARCH_RUNNING);
  p.set_spec_yaml(req.spec_yaml());
  p.set_objective_metric(s.spec.objective.metric);
  p.set_direction(s.spec.objective.maximize ? v1::MAXIMIZE : v1::MINIMIZE);
  p.set_max_trials(s.spec.max_trials);
  p.set_parallelism(s.spec.parallelism);
  p.mutable_group()->set_nodes(s.spec.group.nodes);
  p.mutable_group()->set_ranks_per_node(s.spec.group.ranks_per_node);
  p.mutable_group()->set_gpus_per_rank(s.spec.group.gpus_per_rank);
  p.set_priority(req.priority() == v1::PRIORITY_UNSPECIFIED ? v1::PRIORITY_SEARCH : req.priority());
  p.set_plan_json(req.plan_json());
  p.set_slurm_job_id(req.slurm_job_id());
  if (std::string err = Prepare(s); !err.empty()) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, err);
  p.set_created_unix(WallNow());
  store_.InsertSearch(&p);
  hub_.Record("search_created", p.id(), 0, p.name());
  if (s.spec.warm_start.search_id != 0) {
    TellWarmStart(s, warm);  // before the first Ask: the scheduling pass below
    store_.InsertWarmStart(p.id(), warm);  // in the batch that creates the search
    AnnounceWarmStart(s);
  }
  outbox_.Commit();
  int64_t id = p.id();
  LogInfo(kLog, "search " + std::to_string(id) + " '" + p.name() + "' created: " + std::to_string(p.max_trials()) +
                    " trials, " + std::to_string(p.parallelism()) + " at a time");
  auto& stored = searches_.emplace(id, std::move(s)).first->second;
  *out = stored.proto;
  Publish(stored);
  request_schedule_();
  return grpc::Status::OK;
}

grpc::Status SearchManager::Cancel(int64_t search_id, v1::Search* out) {
  auto it = searches_.find(search_id);
  if (it == searches_.end()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "no search with id " + std::to_string(search_id));
  }
  SearchRecord& s = it->second;
  if (s.proto.state() != v1::SEARCH_RUNNING) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "search " + std::to_string(search_id) +
                                                                  " has already ended (" +
                                                                  SearchStateWord(s.proto.state()) + ")");
  }
  SetState(s, v1::SEARCH_CANCELLED, "cancelled by request");
  outbox_.Commit();
  RefreshCounts(s);
  *out = s.proto;
  return grpc::Status::OK;
}

const v1::Search* SearchManager::Get(int64_t search_id) {
  auto it = searches_.find(search_id);
  if (it == searches_.end()) return nullptr;
  RefreshCounts(it->second);
  return &it->second.proto;
}

std::vector<int64_t> SearchManager::Ids() const {
  std::vector<int64_t> ids;
  ids.reserve(searches_.size());
  for (const auto& [id, s] : searches_) ids.push_back(id);
  return ids;
}

void SearchManager::RefreshCounts(SearchRecord& s) {
  const SearchTrials& idx = trials_.Of(s.proto.id());
  s.proto.set_pending(static_cast<int32_t>(idx.pending.size()));
  s.proto.set_running(static_cast<int32_t>(idx.running.size()));
  s.proto.set_completed(idx.completed);
  s.proto.set_failed(idx.failed);
  s.proto.set_cancelled(idx.cancelled);
  s.proto.set_infeasible(s.infeasible);
  s.proto.set_probes(static_cast<int32_t>(s.probe_numbers.size()));
  s.proto.set_enqueued(KnownPointsLeft(s, s.next_number - static_cast<int>(s.probe_numbers.size())));
  s.proto.set_node_seconds(trials_.NodeSeconds(s.proto.id(), WallNow()));
}

void SearchManager::Publish(SearchRecord& s) {
  RefreshCounts(s);
  hub_.Search(s.proto);
}

// ------------------------------------------------------------------------------------------------------------
// Trials: creation, results, the search's end
// ------------------------------------------------------------------------------------------------------------

void SearchManager::CreateTrials() {
  for (auto& [id, s] : searches_) {
    if (s.proto.state() != v1::SEARCH_RUNNING) continue;
    while (CreateOne(s)) {
    }
  }
}

void SearchManager::FinishEnded() {
  for (auto& [id, s] : searches_) MaybeFinish(s);
}

bool SearchManager::CreateOne(SearchRecord& s) {
  const SearchTrials& idx = trials_.Of(s.proto.id());
  if (static_cast<int>(idx.running.size() + idx.pending.size()) >= s.proto.parallelism()) return false;
  const int sampled = s.next_number - static_cast<int>(s.probe_numbers.size());  // probes are not counted
  if (s.reopened || s.exhausted || sampled >= s.proto.max_trials()) return false;  // Enqueue clears exhausted
  // Known points first (the spec's enqueue:, then ladder search enqueue's): the sampler is not asked for them
  // but holds each as pending (a model spreads its suggestions away from it) until its result is told.
  std::optional<search::Params> params = NextKnownPoint(s, sampled);
  const bool known = params.has_value();
  if (known) {
    AddPendingToSampler(s, sampled, *params);
  } else {
    params = AskSampler(s, sampled);
  }
  if (!params) {
    // A sampler that waits for results is asked again after the next trial ends (MaybeFinish does not end a
    // search that is not exhausted); with nothing left to wait for it is done.
    s.exhausted = !SamplerWaiting(s) || (idx.running.empty() && idx.pending.empty());
    return false;
  }
  const TrialRecord& t =
      trials_.Create(s.proto.id(), s.next_number++, std::move(*params), /*workflow_step=*/false, 0, known);
  if (s.stopping_rule) s.stopping_rule->AddTrial(t.proto.number(), t.params);
  trials_.Submit(t.proto.id());
  hub_.Trial(t.proto);
  return true;
}

void SearchManager::OnTrialEnded(int64_t trial_id) {
  const TrialRecord& t = trials_.Get(trial_id);
  SearchRecord& s = searches_.at(t.proto.search_id());
  const v1::TrialState state = t.proto.state();
  if (HasSampler(s) && t.Sampled()) TellSampler(s, t);
  if (s.stopping_rule && t.Sampled()) {
    if (state == v1::TRIAL_CANCELLED) {
      s.stopping_rule->Forget(t.proto.number());
    } else {
      s.stopping_rule->Complete(t.proto.number(), state == v1::TRIAL_COMPLETED ? ObjectiveOf(t.proto) : std::nullopt);
    }
  }
  if (state == v1::TRIAL_COMPLETED && t.Sampled()) {
    ConsiderBest(s, t);
    UpdateFront(s, t);
  }
  const int failed = BudgetFailures(s);  // a probe's LR may diverge: probes do not count
  if (state == v1::TRIAL_FAILED && !t.proto.probe() && s.proto.state() == v1::SEARCH_RUNNING &&
      failed >= s.spec.max_failed_trials) {
    SetState(s, v1::SEARCH_FAILED,
             std::to_string(failed) + " trials failed (budget.max_failed_trials is " +
                 std::to_string(s.spec.max_failed_trials) + "); last error: trial " +
                 std::to_string(t.proto.number()) + ": " + t.proto.error());
  }
  MaybeFinish(s);
  Publish(s);
  request_schedule_();
}

void SearchManager::ConsiderBest(SearchRecord& s, const TrialRecord& t) {
  if (t.proto.infeasible()) {  // broke a constraint: never the best trial
    ++s.infeasible;
    return;
  }
  bool better = s.proto.best_trial_id() == 0 ||
                (s.proto.direction() == v1::MAXIMIZE ? t.proto.objective() > s.proto.best_objective()
                                                     : t.proto.objective() < s.proto.best_objective());
  if (better) {
    s.proto.set_best_trial_id(t.proto.id());
    s.proto.set_best_trial_number(t.proto.number());
    s.proto.set_best_objective(t.proto.objective());
  }
}

void SearchManager::MaybeFinish(SearchRecord& s) {
  if (s.proto.state() != v1::SEARCH_RUNNING) return;
  const SearchTrials& idx = trials_.Of(s.proto.id());
  if (!idx.running.empty() || !idx.pending.empty()) return;
  if (s.reopened) {  // a probe reopened it: it ends as it had
    const SearchRecord::Ended was = *s.reopened;
    s.reopened.reset();
    store_.SetSearchReopened(s.proto.id(), {});  // in the batch of its end
    SetState(s, was.state, was.error);
    return;
  }
  if (!s.exhausted && s.next_number - static_cast<int>(s.probe_numbers.size()) < s.proto.max_trials()) return;
  if (s.spec.ensemble.enabled && !s.proto.has_ensemble()) {
    BuildEnsemble(s);
    if (!s.spec.ensemble.retrain.empty() && s.proto.ensemble().error().empty()) {
      CreateRetrainStep(s);  // the search completes once the step has ended
      return;
    }
  }
  if (idx.completed == 0 && idx.failed > 0) {
    // Under budget.max_failed_trials, yet nothing succeeded: that is no completed search (a 1-trial search whose
    // command is wrong must not end "completed" with exit 0).
    std::string last;
    for (auto it = idx.ids.rbegin(); it != idx.ids.rend() && last.empty(); ++it) {
      const TrialRecord& t = trials_.Get(*it);
      if (t.proto.state() == v1::TRIAL_FAILED) {
        last = "trial " + std::to_string(t.proto.number()) + ": " + t.proto.error();
      }
    }
    SetState(s, v1::SEARCH_FAILED,
             "no trial completed (" + std::to_string(idx.failed) + " failed); last error: " + last);
    return;
  }
  if (!s.spec.constraints.empty() && s.proto.best_trial_id() == 0 && s.infeasible > 0) {
    // Constraints: completed trials, yet none usable (each broke one): no completed search either.
    SetState(s, v1::SEARCH_FAILED,
             "no feasible trial: each of the " + std::to_string(s.infeasible) + " completed trials broke a constraint");
    return;
  }
  SetState(s, v1::SEARCH_COMPLETED, "");
}

void SearchManager::SetState(SearchRecord& s, v1::SearchState state, const std::string& error) {
  s.proto.set_state(state);
  s.proto.set_error(error);
  if (state != v1::SEARCH_RUNNING) s.proto.set_finished_unix(WallNow());
  if (state == v1::SEARCH_CANCELLED || state == v1::SEARCH_FAILED) {
    trials_.CancelAll(s.proto.id(), "search " + SearchStateWord(state));
  }
  store_.UpdateSearch(s.proto);
  hub_.Record("search_" + SearchStateWord(state), s.proto.id(), 0, error);
  LogInfo(kLog, "search " + std::to_string(s.proto.id()) + " " + v1::SearchState_Name(state) +
                    (error.empty() ? "" : ": " + error));
  // A search's end is durable before anyone hears of it.
  outbox_.Commit();
  Publish(s);
  if (state != v1::SEARCH_RUNNING && on_ended_) on_ended_(s.proto);
}

bool SearchManager::PoolInUse(const std::string& pool) const {
  for (const auto& [id, s] : searches_) {
    if (s.proto.state() == v1::SEARCH_RUNNING && s.spec.group.pool == pool) return true;
  }
  return false;
}

}  // namespace ladder::server
