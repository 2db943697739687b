#include "search/samplers/sampler.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "search/samplers/auto_sampler.h"
#include "search/samplers/sampler_internal.h"
#include "search/samplers/samplers.h"
#include "search/samplers/sobol.h"

namespace ladder::search {
namespace {

using internal::TrialRng;
using internal::Uniform01;
using internal::UniformBelow;

class RandomSampler : public Sampler {
 public:
  explicit RandomSampler(const SearchSpec& spec) : space_(spec.space), seed_(spec.seed) {}

  std::optional<Params> Ask(int64_t trial_number) override {
    if (trial_number < 0) return std::nullopt;
    std::mt19937_64 rng = TrialRng(seed_, trial_number);
    Params params;
    // Every parameter is drawn (so a parameter's value does not depend on which others are active).
    for (const ParamSpec& p : space_.params) params[p.name] = Sample(p, rng);
    return DropInactive(space_, std::move(params));
  }

  void Tell(int64_t, const Params&, std::optional<double>) override {}

 private:
  static Value Sample(const ParamSpec& p, std::mt19937_64& rng) {
    switch (p.kind) {
      case ParamKind::kFloat: {
        double u = Uniform01(rng);
        double v = p.log ? std::exp(std::log(p.low) + u * (std::log(p.high) - std::log(p.low)))
                         : p.low + u * (p.high - p.low);
        return std::clamp(v, p.low, p.high);
      }
      case ParamKind::kInt: {
        const auto low = static_cast<int64_t>(p.low), high = static_cast<int64_t>(p.high);
        if (!p.log) {
          return low + static_cast<int64_t>(UniformBelow(rng, static_cast<uint64_t>(high - low) + 1));
        }
        // Log-uniform over [low - 0.5, high + 0.5], rounded: every integer gets its share, endpoints included.
        double a = std::log(p.low - 0.5), b = std::log(p.high + 0.5);
        auto v = static_cast<int64_t>(std::llround(std::exp(a + Uniform01(rng) * (b - a))));
        return std::clamp(v, low, high);
      }
      case ParamKind::kCategorical:
        return p.choices[UniformBelow(rng, p.choices.size())];
    }
    return 0.0;
  }

  SearchSpace space_;
  uint64_t seed_;
};

class GridSampler : public Sampler {
 public:
  explicit GridSampler(const SearchSpec& spec) {
    for (const ParamSpec& p : spec.space.params) {
      names_.push_back(p.name);
      axes_.push_back(GridValues(p));
      size_ *= static_cast<int64_t>(axes_.back().size());
    }
  }

  std::optional<Params> Ask(int64_t trial_number) override {
    if (trial_number < 0 || trial_number >= size_) return std::nullopt;
    Params params;
    int64_t rest = trial_number;
    for (size_t i = axes_.size(); i-- > 0;) {  // the last parameter varies fastest
      const auto n = static_cast<int64_t>(axes_[i].size());
      params[names_[i]] = axes_[i][static_cast<size_t>(rest % n)];
      rest /= n;
    }
    return params;
  }

  void Tell(int64_t, const Params&, std::optional<double>) override {}
  std::optional<int64_t> Size() const override { return size_; }

 private:
  std::vector<std::string> names_;
  std::vector<std::vector<Value>> axes_;
  int64_t size_ = 1;
};

// Trial n gets Sobol point n of the unit cube of the space (Owen-scrambled by the seed unless scramble: false).
class SobolSampler : public Sampler {
 public:
  explicit SobolSampler(const SearchSpec& spec)
      : unit_(spec.space),
        sobol_(static_cast<int>(spec.space.params.size()), spec.sampler_options.scramble, spec.seed) {}

  std::optional<Params> Ask(int64_t trial_number) override {
    if (trial_number < 0 || trial_number >= (int64_t{1} << 32)) return std::nullopt;
    return unit_.Decode(sobol_.Point(static_cast<uint64_t>(trial_number)));
  }
  void Tell(int64_t, const Params&, std::optional<double>) override {}

 private:
  UnitSpace unit_;
  SobolSequence sobol_;
};

}  // namespace

namespace internal {

HistorySampler::HistorySampler(const SearchSpec& spec)
    : unit_(spec.space), seed_(spec.seed), maximize_(spec.objective.maximize) {}

Observation HistorySampler::Make(int64_t number, const Params& params, std::optional<double> loss,
                                 const std::vector<double>& constraints) const {
  Observation o;
  o.number = number;
  o.violation = Violation(constraints);
  for (size_t i = 0; i < constraints.size(); ++i) {
    o.constraint = i == 0 ? constraints[i] : std::max(o.constraint, constraints[i]);
  }
  o.u = unit_.Encode(params, &o.active);
  if (loss && std::isfinite(*loss)) o.loss = maximize_ ? -*loss : *loss;
  return o;
}

std::optional<Params> HistorySampler::Ask(int64_t trial_number) {
  if (trial_number < 0) return std::nullopt;
  if (auto it = pending_params_.find(trial_number); it != pending_params_.end()) return it->second;
  if (auto it = told_.find(trial_number); it != told_.end()) return unit_.Decode(it->second.u);
  std::vector<const Observation*> pending;
  pending.reserve(pending_.size());
  for (const auto& [n, o] : pending_) pending.push_back(&o);
  std::vector<double> u = Suggest(trial_number, told_order_, pending);
  Params params = unit_.Decode(u);
  AddPending(trial_number, params);
  return params;
}

void HistorySampler::Tell(int64_t trial_number, const Params& params, std::optional<double> objective) {
  TellConstrained(trial_number, params, objective, {});
}

void HistorySampler::TellConstrained(int64_t trial_number, const Params& params, std::optional<double> objective,
                                     const std::vector<double>& constraints) {
  pending_.erase(trial_number);
  pending_params_.erase(trial_number);
  auto it = told_.find(trial_number);
  if (it != told_.end()) {  // told again: the stored observation is replaced in place
    OnForget(it->second);
    completed_ -= it->second.loss ? 1 : 0;
    it->second = Make(trial_number, params, objective, constraints);
  } else {
    it = told_.emplace(trial_number, Make(trial_number, params, objective, constraints)).first;
    auto by_number = [](const Observation* o, int64_t n) { return o->number < n; };
    told_order_.insert(std::lower_bound(told_order_.begin(), told_order_.end(), trial_number, by_number),
                       &it->second);
  }
  completed_ += it->second.loss ? 1 : 0;
  OnTold(it->second);
}

void HistorySampler::AddPending(int64_t trial_number, const Params& params) {
  if (told_.count(trial_number) != 0) return;
  pending_[trial_number] = Make(trial_number, params, std::nullopt);
  pending_params_[trial_number] = params;
}

std::vector<double> HistorySampler::SobolPoint(uint64_t index) const {
  SobolSequence s(static_cast<int>(unit_.dims()), true, seed_);
  return s.Point(index);
}

void HistorySampler::SnapAll(std::vector<double>* u) const {
  for (size_t i = 0; i < u->size(); ++i) (*u)[i] = unit_.Snap(i, (*u)[i]);
}

}  // namespace internal

int64_t GridSize(const SearchSpace& space) {
  int64_t size = 1;
  for (const ParamSpec& p : space.params) {
    const auto n = static_cast<int64_t>(GridValues(p).size());
    if (n == 0) return 0;
    size = size > INT64_MAX / n ? INT64_MAX : size * n;
  }
  return size;
}

std::unique_ptr<Sampler> MakeSampler(const SearchSpec& spec) {
  if (spec.sampler == "auto") {
    SearchSpec resolved = spec;
    resolved.sampler = ResolveSampler(spec).sampler;
    return MakeSampler(resolved);
  }
  if (spec.sampler == "grid") return std::make_unique<GridSampler>(spec);
  if (spec.sampler == "sobol") return std::make_unique<SobolSampler>(spec);
  if (spec.sampler == "tpe") return internal::MakeTpeSampler(spec);
  if (spec.sampler == "gp") return internal::MakeGpSampler(spec);
  if (spec.sampler == "cmaes") return internal::MakeCmaEsSampler(spec);
  if (spec.sampler == "scales") return internal::MakeScalesSampler(spec);
  return std::make_unique<RandomSampler>(spec);
}

}  // namespace ladder::search
