// SearchManager: what a search decides about its running trials from their reports — the stopping rule
// (ASHA, Hyperband, median stopping, PBT), node count as the fidelity, its replay after a restart, and the hero
// run's band.
#include <algorithm>
#include <cstdio>
#include <optional>

#include "common/log.h"
#include "server/search_manager.h"
#include "common/wall_clock.h"
#include "server/log_component.h"

namespace ladder::server {

namespace {

// A metric value for a message: 6 significant digits.
std::string FormatValue(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// The stopping rule's resource in a point: a metric, or the point's own step (`resource: step`, which the
// metrics line carries as "step", not among its values).
std::optional<double> ResourceOf(const std::string& resource, const v1::MetricPoint& point) {
  if (resource == "step") return static_cast<double>(point.step());
  auto it = point.values().find(resource);
  return it == point.values().end() ? std::nullopt : std::optional<double>(it->second);
}

}  // namespace

bool SearchManager::JudgesPoints(int64_t search_id) const {
  const SearchRecord& s = searches_.at(search_id);
  return (s.stopping_rule && !search::ScalesNodes(s.spec.scheduler)) || !s.band.empty();
}

void SearchManager::OnPoint(int64_t trial_id, const v1::MetricPoint& point) {
  SearchRecord& s = searches_.at(trials_.Get(trial_id).proto.search_id());
  // With node count as the fidelity, a stage is reported when its run ends (EndStage), not per point.
  if (s.stopping_rule && !search::ScalesNodes(s.spec.scheduler) && trials_.Get(trial_id).Sampled()) {
    ConsultStoppingRule(s, trial_id, point);
  }
  if (!s.band.empty()) WatchBand(s, trial_id, point);
}

void SearchManager::OnRunSucceeded(int64_t trial_id) {
  EndStage(searches_.at(trials_.Get(trial_id).proto.search_id()), trial_id);
}

void SearchManager::ConsultStoppingRule(SearchRecord& s, int64_t trial_id, const v1::MetricPoint& point) {
  const TrialRecord& t = trials_.Get(trial_id);
  if (t.proto.state() != v1::TRIAL_RUNNING || t.preempting || t.exploit || !t.early_stop.empty()) return;
  const std::optional<double> r = ResourceOf(s.spec.scheduler.resource, point);
  auto v = point.values().find(s.proto.objective_metric());
  if (!r || v == point.values().end()) return;
  if (!s.levels.empty()) trials_.SetRung(trial_id, std::max(t.proto.rung(), RungOf(s, t.proto.number(), *r)));
  search::TrialDecision d = s.stopping_rule->Report(t.proto.number(), *r, v->second);
  if (d.kind == search::TrialDecision::Kind::kContinue) return;
  if (d.exploit()) {
    if (!trials_.ByNumber(s.proto.id(), d.source_trial)) {
      LogError(kLog, "trial " + std::to_string(trial_id) + ": pbt chose trial number " +
                         std::to_string(d.source_trial) + ", which this search does not have; ignored");
      return;
    }
    hub_.Record("trial_exploit", s.proto.id(), trial_id, d.reason);
    LogInfo(kLog, "trial " + std::to_string(trial_id) + ": " + d.reason);
    trials_.StopToExploit(trial_id, std::move(d));
  } else {
    hub_.Record("trial_stopped_early", s.proto.id(), trial_id, d.reason);
    LogInfo(kLog, "trial " + std::to_string(trial_id) + " stopped early: " + d.reason);
    trials_.StopEarly(trial_id, d.reason);
  }
}

void SearchManager::EndStage(SearchRecord& s, int64_t trial_id) {
  const TrialRecord& t = trials_.Get(trial_id);
  if (!s.stopping_rule || !search::ScalesNodes(s.spec.scheduler) || !t.Sampled()) {
    return trials_.CompleteFromExit(trial_id);
  }
  const std::vector<int> levels = search::NodeLevels(s.spec.scheduler, t.proto.number());
  const int nodes = trials_.Nodes(t);
  auto next = std::upper_bound(levels.begin(), levels.end(), nodes);
  auto objective = t.Objective(s.spec.objective.scope == search::Objective::Scope::kBest);
  if (next == levels.end() || !objective) return trials_.CompleteFromExit(trial_id);  // the last stage, or nothing
  // The stage's report, stored as one of the trial's metrics points: a restarted coordinator replays it.
  v1::MetricPoint point;
  point.set_step(t.proto.last_metrics().step());
  point.set_time_unix(WallNow());
  (*point.mutable_values())[search::kNodesResource] = nodes;
  (*point.mutable_values())[s.proto.objective_metric()] = *objective;
  store_.AppendMetrics(trial_id, point);
  ConsultStoppingRule(s, trial_id, point);  // a stop completes the trial with its value
  if (t.proto.state() != v1::TRIAL_RUNNING || !t.early_stop.empty()) return;
  trials_.Promote(trial_id, *next,
                  std::string(search::StoppingRuleName(s.spec.scheduler.type)) + ": promoted from " +
                      std::to_string(nodes) + " to " + std::to_string(*next) + " nodes (" +
                      s.proto.objective_metric() + " " + FormatValue(*objective) + ")");
}

void SearchManager::ReplayStoppingRule(SearchRecord& s) {
  // AddTrial for every trial, every stored report in stored order, then how each finished trial ended. Exact
  // for asha, hyperband and median; for pbt approximate: its population drops finished trials at the end
  // instead of at their place among the reports, and points a run sent after its exploit decision (ignored
  // live) are replayed (search/stopping/stopping_rule.h).
  std::map<int64_t, const TrialRecord*> by_id;
  for (int64_t id : trials_.Of(s.proto.id()).ids) {
    const TrialRecord& t = trials_.Get(id);
    if (!t.Sampled()) continue;
    by_id[id] = &t;
    s.stopping_rule->AddTrial(t.proto.number(), t.params);
  }
  const std::string& resource = s.spec.scheduler.resource;
  const std::string& objective = s.proto.objective_metric();
  size_t replayed = 0;
  for (const auto& sp : store_.LoadSearchMetrics(s.proto.id(), {resource, objective})) {
    const std::optional<double> r = ResourceOf(resource, sp.point);
    auto v = sp.point.values().find(objective);
    auto t = by_id.find(sp.trial_id);
    if (!r || v == sp.point.values().end() || t == by_id.end()) continue;
    search::TrialDecision d = s.stopping_rule->Report(t->second->proto.number(), *r, v->second);
    ++replayed;
    // A stop or exploit decided for a trial that still runs: the previous coordinator may have sent the cancel
    // (the run's exit is on its way) or crashed before. Either way the decision holds again, and the cancel goes
    // (again) to each member as its worker re-attaches it, so its exit ends the trial as decided, not as a
    // cancellation nobody asked for. Only a decision on a point of the run now going counts: the stored points
    // of a trial span all its runs, and an exploit (or a stop before a requeue) on an earlier run was carried
    // out then.
    const TrialRecord& live = *t->second;
    if (d.kind == search::TrialDecision::Kind::kContinue || live.proto.state() != v1::TRIAL_RUNNING ||
        live.exploit || !live.early_stop.empty() || sp.point.time_unix() <= live.proto.started_unix()) {
      continue;
    }
    trials_.RestoreDecision(sp.trial_id, std::move(d));
  }
  for (const auto& [id, t] : by_id) {
    switch (t->proto.state()) {
      case v1::TRIAL_CANCELLED: s.stopping_rule->Forget(t->proto.number()); break;
      case v1::TRIAL_COMPLETED:
        s.stopping_rule->Complete(t->proto.number(),
                                t->proto.has_objective() ? std::optional<double>(t->proto.objective()) : std::nullopt);
        break;
      case v1::TRIAL_FAILED: s.stopping_rule->Complete(t->proto.number(), std::nullopt); break;
      default: break;
    }
  }
  // pbt keeps each trial's parameters; the store has the current ones (after any exploit).
  for (const auto& [id, t] : by_id) s.stopping_rule->AddTrial(t->proto.number(), t->params);
  LogInfo(kLog, "search " + std::to_string(s.proto.id()) + ": " +
                    search::StoppingRuleName(s.spec.scheduler.type) + " rebuilt from " +
                    std::to_string(replayed) + " stored reports");
}

void SearchManager::WatchBand(SearchRecord& s, int64_t trial_id, const v1::MetricPoint& point) {
  if (trials_.Get(trial_id).proto.state() != v1::TRIAL_RUNNING) return;
  auto verdict = s.band.Check(trial_id, point);
  if (!verdict) return;
  hub_.Record(verdict->outside ? "hero_outside_band" : "hero_inside_band", s.proto.id(), trial_id,
              verdict->message);
  if (!verdict->outside) {
    LogInfo(kLog, "trial " + std::to_string(trial_id) + ": " + verdict->message);
    return;
  }
  LogWarning(kLog, "trial " + std::to_string(trial_id) + ": " + verdict->message);
  if (verdict->stop) trials_.StopToFail(trial_id, verdict->message + ": stopped (ladder promote --stop-outside-band)");
}

// ------------------------------------------------------------------------------------------------------------
// Rungs, as the dashboards show them
// ------------------------------------------------------------------------------------------------------------

void SearchManager::SetRungs(SearchRecord& s) {
  const search::StoppingOptions& o = s.spec.scheduler;
  s.proto.clear_rungs();
  s.levels.clear();
  s.bracket_cycle.clear();
  if (o.type != search::StoppingRuleType::kAsha && o.type != search::StoppingRuleType::kHyperband) return;
  for (double r : search::AshaRungs(o, 0)) s.proto.add_rungs(r);
  s.proto.set_rung_metric(o.resource);
  const int brackets = o.type == search::StoppingRuleType::kHyperband ? search::MaxBrackets(o) : 1;
  for (int b = 0; b < brackets; ++b) {
    s.levels.push_back(search::AshaRungs(o, b));
    s.levels.back().push_back(o.max_resource);
  }
  if (brackets > 1) s.bracket_cycle = search::HyperbandCycle(o, brackets);
}

int SearchManager::RungOf(const SearchRecord& s, int64_t number, double resource) {
  if (s.levels.empty()) return 0;
  size_t bracket = 0;
  if (!s.bracket_cycle.empty()) {
    bracket = static_cast<size_t>(s.bracket_cycle[static_cast<size_t>(number) % s.bracket_cycle.size()]);
  }
  const auto& levels = s.levels[std::min(bracket, s.levels.size() - 1)];
  // The same tolerance as the stopping rules': a resource computed in floating point still lands on its rung.
  const double eps = 1e-9 * std::max(1.0, std::abs(resource));
  return static_cast<int>(std::count_if(levels.begin(), levels.end(), [&](double l) { return l <= resource + eps; }));
}

}  // namespace ladder::server
