// SearchManager: the sampler whichever its kind, and several objectives (the spec's objectives:). With several, the
// sampler is the multi-objective one (search/multiobjective/mo_sampler.h: auto resolved by its rule), told each
// trial's values; and the coordinator keeps the Pareto front of the completed trials, updated as each completes
// (a point enters unless one on the front dominates it, and pushes out those it dominates), rebuilt from the
// stored values at a restart (Recover), and served as v1::Search.pareto_front and v1::Trial.pareto. With
// constraints, the sampler (one objective or several) is told each trial's signed constraint values
// (TellConstrained), live and in a restart's replay, and the front holds feasible trials only: an infeasible trial
// never enters it nor pushes a feasible one out (a search without a feasible trial fails: MaybeFinish).
#include <algorithm>
#include <cmath>

#include "common/log.h"
#include "search/multiobjective/pareto.h"
#include "server/search_manager.h"

namespace ladder::server {

namespace {

// A completed trial's values as minimized (max objectives negated); empty when it has not one finite value per
// objective (nothing to place on the front).
std::vector<double> Minimized(const search::SearchSpec& spec, const v1::Trial& t) {
  if (t.state() != v1::TRIAL_COMPLETED || t.objectives_size() != static_cast<int>(spec.objectives.size())) return {};
  std::vector<double> v;
  for (int i = 0; i < t.objectives_size(); ++i) {
    const double x = t.objectives(i);
    if (!std::isfinite(x)) return {};
    v.push_back(spec.objectives[static_cast<size_t>(i)].maximize ? -x : x);
  }
  return v;
}

}  // namespace

std::optional<search::Params> SearchManager::AskSampler(SearchRecord& s, int number) {
  return s.mo_sampler ? s.mo_sampler->Ask(number) : s.sampler->Ask(number);
}

void SearchManager::TellSampler(SearchRecord& s, const TrialRecord& t) {
  const int number = SamplerNumber(s, t.proto.number());
  if (!s.mo_sampler) {
    const std::optional<double> objective =
        t.proto.has_objective() ? std::optional<double>(t.proto.objective()) : std::nullopt;
    if (s.spec.constraints.empty()) {
      s.sampler->Tell(number, t.params, objective);
    } else {  // the signed values the trial completed with (none for a failed trial)
      s.sampler->TellConstrained(number, t.params, objective,
                                 std::vector<double>(t.proto.constraints().begin(), t.proto.constraints().end()));
    }
    return;
  }
  std::optional<std::vector<double>> values;  // in the spec's units: the sampler negates a max one itself
  if (t.proto.state() == v1::TRIAL_COMPLETED && t.proto.objectives_size() == static_cast<int>(s.spec.objectives.size())) {
    values.emplace(t.proto.objectives().begin(), t.proto.objectives().end());
  }
  s.mo_sampler->TellConstrained(number, t.params, std::move(values),
                                std::vector<double>(t.proto.constraints().begin(), t.proto.constraints().end()));
}

void SearchManager::AddPendingToSampler(SearchRecord& s, int number, const search::Params& params) {
  if (s.mo_sampler) {
    s.mo_sampler->AddPending(number, params);
  } else {
    s.sampler->AddPending(number, params);
  }
}

std::string SearchManager::PrepareMultiObjective(SearchRecord& s) {
  search::MultiObjectiveOptions options;
  for (const search::Objective& o : s.spec.objectives) options.maximize.push_back(o.maximize);
  if (s.spec.sampler == "nsga2") options.population = s.spec.sampler_options.population;  // 0: its default
  std::string error;
  s.mo_sampler = search::MakeMultiObjectiveSampler(s.spec, options, &error);
  return s.mo_sampler ? "" : "sampler: " + error;
}

void SearchManager::SetObjectivesFromSpec(SearchRecord& s) {
  s.proto.clear_constraints();
  for (const search::Constraint& c : s.spec.constraints) {
    v1::SearchConstraint* out = s.proto.add_constraints();
    out->set_metric(c.metric);
    out->set_kind(c.max ? "max" : "min");
    out->set_bound(c.bound);
  }
  s.proto.clear_objectives();
  if (!s.spec.MultiObjective()) return;
  for (const search::Objective& o : s.spec.objectives) {
    v1::SearchObjective* out = s.proto.add_objectives();
    out->set_metric(o.metric);
    out->set_direction(o.maximize ? v1::MAXIMIZE : v1::MINIMIZE);
  }
}

void SearchManager::UpdateFront(SearchRecord& s, const TrialRecord& t) {
  if (!s.spec.MultiObjective() || t.proto.infeasible()) return;  // broke a constraint: never on the front
  std::vector<double> point = Minimized(s.spec, t.proto);
  if (point.empty()) return;
  for (const auto& [id, other] : s.front) {
    if (search::Dominates(other, point)) return;  // an equal point does not dominate: both are on the front
  }
  for (auto it = s.front.begin(); it != s.front.end();) {
    it = search::Dominates(point, it->second) ? s.front.erase(it) : std::next(it);
  }
  s.front.emplace(t.proto.id(), std::move(point));
  // The ids by the first objective (best first), then by id.
  std::vector<std::pair<double, int64_t>> order;
  for (const auto& [id, values] : s.front) order.emplace_back(values.front(), id);
  std::sort(order.begin(), order.end());
  s.proto.clear_pareto_front();
  for (const auto& [first, id] : order) s.proto.add_pareto_front(id);
}

bool SearchManager::OnFront(int64_t search_id, int64_t trial_id) const {
  auto it = searches_.find(search_id);
  return it != searches_.end() && it->second.front.count(trial_id) > 0;
}

}  // namespace ladder::server
