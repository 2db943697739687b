// Population-based training and its explore step (Perturb); the contract is in stopping_rule.h.
#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "search/samplers/sampler_internal.h"
#include "search/stopping/stopping_rules.h"
#include "search/core/unit_space.h"

namespace ladder::search {
namespace {

double AsDouble(const Value& v) {
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  return std::nan("");
}

}  // namespace

Params Perturb(const SearchSpace& space, const Params& source, double resample_probability, uint64_t rng_seed) {
  UnitSpace unit(space);
  std::mt19937_64 rng(internal::SplitMix64(rng_seed));
  Params out;
  for (size_t i = 0; i < unit.dims(); ++i) {
    const ParamSpec& p = unit.param(i);
    // Two draws per parameter whatever happens, so one parameter's fate does not shift the others'.
    const double coin = internal::Uniform01(rng);
    const double u = internal::Uniform01(rng);
    if (!IsActive(p, out)) continue;
    auto it = source.find(p.name);
    const bool usable = it != source.end() && unit.ToUnit(i, it->second).has_value();
    if (!usable || coin < resample_probability) {
      out[p.name] = unit.FromUnit(i, u);
      continue;
    }
    if (p.kind == ParamKind::kCategorical) {
      out[p.name] = it->second;
      continue;
    }
    const double factor = u < 0.5 ? 0.8 : 1.2;
    const double v = AsDouble(it->second);
    if (p.kind == ParamKind::kFloat) {
      out[p.name] = std::clamp(v * factor, p.low, p.high);
    } else {
      const auto old = static_cast<int64_t>(std::llround(v));
      auto moved = static_cast<int64_t>(std::llround(v * factor));
      // ×0.8 of a negative number moves up: "up" and "down" follow the factor's effect on the value.
      if (moved == old) moved = old + ((v * factor > v) ? 1 : -1);
      out[p.name] = std::clamp(moved, static_cast<int64_t>(p.low), static_cast<int64_t>(p.high));
    }
  }
  return out;
}

namespace internal {
namespace {

class PbtRule : public StoppingRule {
 public:
  PbtRule(const StoppingOptions& o, bool maximize, SearchSpace space)
      : o_(o), maximize_(maximize), space_(std::move(space)) {}

  void AddTrial(int64_t n, const Params& params) override {
    trials_[n].params = params;
  }

  TrialDecision Report(int64_t n, double resource, double value) override {
    Trial& t = trials_[n];
    TrialDecision d;
    if (t.has_value && resource <= t.resource) {
      // Went back (resumed from an older checkpoint): perturbation points count from here.
      t.last_perturbation = std::min(t.last_perturbation, resource);
    }
    t.has_value = true;
    t.loss = AsLoss(value, maximize_);
    t.resource = resource;
    if (!Reached(resource - t.last_perturbation, o_.perturbation_interval)) return d;
    t.last_perturbation = resource;

    // The population: live trials with a value, best first (ties: lower trial number first).
    std::vector<int64_t> ranked;
    for (const auto& [m, other] : trials_) {
      if (!other.completed && other.has_value) ranked.push_back(m);
    }
    if (t.completed) return d;  // a report after Complete: recorded, but the trial is out of the population
    std::stable_sort(ranked.begin(), ranked.end(),
                     [&](int64_t a, int64_t b) { return trials_[a].loss < trials_[b].loss; });
    const auto size = static_cast<int>(ranked.size());
    int q = static_cast<int>(std::ceil(size * o_.quantile - 1e-9));
    q = std::min(q, size / 2);
    if (q < 1) return d;
    const auto pos = static_cast<int>(std::find(ranked.begin(), ranked.end(), n) - ranked.begin());
    if (pos < size - q) return d;  // not in the bottom quantile

    // A salt of its own: the random sampler draws trial n from TrialRng(seed, n, small salts), and a pbt resample
    // must not repeat the trial's original draw.
    std::mt19937_64 rng = TrialRng(o_.seed, n, 0x9b7000 + static_cast<uint64_t>(t.exploits) + 1);
    const int64_t source = ranked[static_cast<size_t>(UniformBelow(rng, static_cast<uint64_t>(q)))];
    Trial& s = trials_[source];
    d.kind = TrialDecision::Kind::kExploit;
    d.source_trial = source;
    d.source_resource = s.resource;
    d.params = Perturb(space_, s.params, o_.resample_probability, rng());
    auto shown = [&](double l) { return Fmt(maximize_ ? -l : l); };
    d.reason = "pbt: at " + o_.resource + " " + Fmt(resource) + " " + shown(t.loss) + " is in the bottom " +
               std::to_string(q) + " of " + std::to_string(size) + "; exploit trial " + std::to_string(source) +
               " (" + shown(s.loss) + " at " + o_.resource + " " + Fmt(s.resource) + ") and explore";
    // From now on this trial is the source's model with the new parameters.
    t.params = d.params;
    t.loss = s.loss;
    t.resource = s.resource;
    t.last_perturbation = s.resource;
    ++t.exploits;
    return d;
  }

  void Complete(int64_t n, std::optional<double>) override { trials_[n].completed = true; }
  void Forget(int64_t n) override { trials_.erase(n); }

 private:
  struct Trial {
    Params params;
    bool completed = false;  // the population is the trials not completed
    bool has_value = false;
    double loss = 0;         // latest reported value, as a loss
    double resource = 0;     // latest reported resource
    double last_perturbation = 0;
    int exploits = 0;
  };

  StoppingOptions o_;
  bool maximize_;
  SearchSpace space_;
  std::map<int64_t, Trial> trials_;
};

}  // namespace

std::unique_ptr<StoppingRule> MakePbtRule(const StoppingOptions& options, bool maximize,
                                                 const SearchSpace& space) {
  return std::make_unique<PbtRule>(options, maximize, space);
}

}  // namespace internal
}  // namespace ladder::search
