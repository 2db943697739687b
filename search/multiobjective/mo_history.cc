#include "search/multiobjective/mo_history.h"

#include <algorithm>
#include <cmath>

#include "search/samplers/sampler_internal.h"
#include "search/samplers/sobol.h"

namespace ladder::search::internal {

MoHistorySampler::MoHistorySampler(const SearchSpec& spec, const MultiObjectiveOptions& options)
    : unit_(spec.space), seed_(spec.seed), maximize_(options.maximize) {}

MoObservation MoHistorySampler::Make(int64_t number, const Params& params,
                                     const std::optional<std::vector<double>>& values,
                                     const std::vector<double>& constraints) const {
  MoObservation o;
  o.number = number;
  o.violation = Violation(constraints);
  for (size_t i = 0; i < constraints.size(); ++i) {
    o.constraint = i == 0 ? constraints[i] : std::max(o.constraint, constraints[i]);
  }
  o.u = unit_.Encode(params, &o.active);
  if (values && values->size() == maximize_.size()) {
    ObjectiveVector loss(values->size());
    bool finite = true;
    for (size_t i = 0; i < loss.size(); ++i) {
      finite = finite && std::isfinite((*values)[i]);
      loss[i] = maximize_[i] ? -(*values)[i] : (*values)[i];
    }
    if (finite) o.loss = std::move(loss);
  }
  return o;
}

std::optional<Params> MoHistorySampler::Ask(int64_t trial_number) {
  if (trial_number < 0) return std::nullopt;
  if (auto it = pending_params_.find(trial_number); it != pending_params_.end()) return it->second;
  if (auto it = told_.find(trial_number); it != told_.end()) return unit_.Decode(it->second.u);
  std::vector<const MoObservation*> pending;
  pending.reserve(pending_.size());
  for (const auto& [n, o] : pending_) pending.push_back(&o);
  Params params = unit_.Decode(Suggest(trial_number, told_order_, pending));
  AddPending(trial_number, params);
  return params;
}

void MoHistorySampler::Tell(int64_t trial_number, const Params& params, std::optional<std::vector<double>> objectives) {
  TellConstrained(trial_number, params, std::move(objectives), {});
}

void MoHistorySampler::TellConstrained(int64_t trial_number, const Params& params,
                                       std::optional<std::vector<double>> objectives,
                                       const std::vector<double>& constraints) {
  pending_.erase(trial_number);
  pending_params_.erase(trial_number);
  auto it = told_.find(trial_number);
  if (it != told_.end()) {
    OnForget(it->second);
    completed_ -= it->second.loss ? 1 : 0;
    it->second = Make(trial_number, params, objectives, constraints);
  } else {
    it = told_.emplace(trial_number, Make(trial_number, params, objectives, constraints)).first;
    auto by_number = [](const MoObservation* o, int64_t n) { return o->number < n; };
    told_order_.insert(std::lower_bound(told_order_.begin(), told_order_.end(), trial_number, by_number),
                       &it->second);
  }
  completed_ += it->second.loss ? 1 : 0;
  OnTold(it->second);
}

void MoHistorySampler::AddPending(int64_t trial_number, const Params& params) {
  if (told_.count(trial_number) != 0) return;
  pending_[trial_number] = Make(trial_number, params, std::nullopt);
  pending_params_[trial_number] = params;
}

std::vector<double> MoHistorySampler::SobolPoint(uint64_t index) const {
  SobolSequence s(static_cast<int>(unit_.dims()), true, seed_);
  std::vector<double> u = s.Point(index);
  SnapAll(&u);
  return u;
}

void MoHistorySampler::SnapAll(std::vector<double>* u) const {
  for (size_t i = 0; i < u->size(); ++i) (*u)[i] = unit_.Snap(i, (*u)[i]);
}

}  // namespace ladder::search::internal
