#include "search/stopping/stopping_rule.h"

#include <algorithm>
#include <cmath>

#include "search/core/spec.h"
#include "search/stopping/stopping_rules.h"

namespace ladder::search {

std::vector<double> AshaRungs(const StoppingOptions& o, int bracket) {
  std::vector<double> rungs;
  double rung = o.min_resource;
  for (int s = 0; s < bracket; ++s) rung *= o.reduction_factor;
  // Rungs strictly below R: a trial that reaches R is done, there is nothing left to decide.
  while (!internal::Reached(rung, o.max_resource) && rungs.size() < 64) {
    rungs.push_back(rung);
    rung *= o.reduction_factor;
  }
  return rungs;
}

int MaxBrackets(const StoppingOptions& o) {
  // One bracket per rung of bracket 0, plus the bracket without rungs (every trial runs to R).
  return static_cast<int>(AshaRungs(o, 0).size()) + 1;
}

// Hyperband's bracket sizes for brackets 0..b-1 (bracket s has k = K - s rungs, K = MaxBrackets - 1), spread
// over one cycle by smooth weighted round-robin: each step every bracket gains its weight, the one with the
// most credit (lowest index on ties) is chosen and pays the total. Deterministic, evenly interleaved.
std::vector<int> HyperbandCycle(const StoppingOptions& o, int brackets) {
  if (brackets < 1) return {0};
  const int max_b = MaxBrackets(o);
  const int s_max = max_b - 1;
  std::vector<double> size(static_cast<size_t>(brackets));
  for (int s = 0; s < brackets; ++s) {
    const int k = s_max - s;  // rungs of bracket s
    size[static_cast<size_t>(s)] =
        std::ceil(static_cast<double>(s_max + 1) / (k + 1) * std::pow(o.reduction_factor, k) - 1e-9);
  }
  // Very wide ranges (R / r = eta^20 and more) are scaled down so the cycle stays at most ~kMaxCycle long.
  constexpr double kMaxCycle = 10000;
  const double largest = *std::max_element(size.begin(), size.end());
  const double scale = largest > kMaxCycle ? kMaxCycle / largest : 1.0;
  std::vector<int64_t> weight(size.size());
  int64_t total = 0;
  for (size_t s = 0; s < size.size(); ++s) {
    weight[s] = std::max<int64_t>(1, std::llround(size[s] * scale));
    total += weight[s];
  }
  std::vector<int> cycle;
  std::vector<int64_t> credit(weight.size(), 0);
  cycle.reserve(static_cast<size_t>(total));
  for (int64_t step = 0; step < total; ++step) {
    size_t best = 0;
    for (size_t s = 0; s < weight.size(); ++s) {
      credit[s] += weight[s];
      if (credit[s] > credit[best]) best = s;
    }
    credit[best] -= total;
    cycle.push_back(static_cast<int>(best));
  }
  return cycle;
}

int HyperbandBracket(const StoppingOptions& o, int brackets, int64_t trial_number) {
  std::vector<int> cycle = HyperbandCycle(o, brackets);
  const auto w = static_cast<int64_t>(cycle.size());
  return cycle[static_cast<size_t>(((trial_number % w) + w) % w)];
}

std::vector<int> NodeLevels(const StoppingOptions& o, int64_t trial_number) {
  int bracket = 0;
  if (o.type == StoppingRuleType::kHyperband) {
    bracket = HyperbandBracket(o, o.brackets > 0 ? o.brackets : MaxBrackets(o), trial_number);
  }
  std::vector<int> levels;
  for (double r : AshaRungs(o, bracket)) levels.push_back(static_cast<int>(std::llround(r)));
  levels.push_back(static_cast<int>(std::llround(o.max_resource)));
  return levels;
}

std::unique_ptr<StoppingRule> MakeStoppingRule(const StoppingOptions& o, bool maximize,
                                                   const SearchSpace& space) {
  switch (o.type) {
    case StoppingRuleType::kNone: return nullptr;
    case StoppingRuleType::kAsha: return internal::MakeAshaRule(o, maximize, 1);
    case StoppingRuleType::kHyperband:
      return internal::MakeAshaRule(o, maximize, o.brackets > 0 ? o.brackets : MaxBrackets(o));
    case StoppingRuleType::kMedian: return internal::MakeMedianStopping(o, maximize);
    case StoppingRuleType::kPbt: return internal::MakePbtRule(o, maximize, space);
  }
  return nullptr;
}

std::unique_ptr<StoppingRule> MakeStoppingRule(const SearchSpec& spec) {
  return MakeStoppingRule(spec.scheduler, spec.objective.maximize, spec.space);
}

}  // namespace ladder::search
