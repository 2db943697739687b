#include "search/samplers/tpe_history.h"

#include <algorithm>
#include <cmath>

#include "search/samplers/parzen.h"

namespace ladder::search::internal {
TpeHistory::Split TpeHistory::Make(const std::vector<const Observation*>& liars, double gamma, size_t max_good,
                                   size_t max_components, std::mt19937_64& rng) const {
  const std::vector<const Observation*>& by_number = this->by_number();
  const size_t done = by_number.size();
  const size_t n = done + liars.size();
  const size_t n_good =
      std::min({static_cast<size_t>(std::ceil(gamma * static_cast<double>(n))), max_good, done});
  Split s;
  s.good.trials = Best(n_good);
  std::sort(s.good.trials.begin(), s.good.trials.end(),
            [](const Observation* a, const Observation* b) { return a->number < b->number; });
  s.good.weights = DefaultTpeWeights(n_good);

  // The bad group, positions 0..nb-1 in trial-number order, is by_number without the good trials, merged with
  // the liars. good_index: the good trials' indices in by_number; liar_pos: the liars' positions.
  const size_t nb = n - n_good;
  s.bad_trials = nb;
  std::vector<size_t> good_index;
  std::vector<int64_t> good_numbers;
  for (const Observation* g : s.good.trials) {
    good_index.push_back(LowerBound(g->number));
    good_numbers.push_back(g->number);
  }
  std::vector<size_t> liar_pos(liars.size());
  for (size_t i = 0; i < liars.size(); ++i) {
    const size_t before = LowerBound(liars[i]->number);
    const auto good_before = static_cast<size_t>(
        std::lower_bound(good_numbers.begin(), good_numbers.end(), liars[i]->number) - good_numbers.begin());
    liar_pos[i] = i + before - good_before;
  }
  auto at = [&](size_t p) -> const Observation* {
    auto lp = std::lower_bound(liar_pos.begin(), liar_pos.end(), p);
    if (lp != liar_pos.end() && *lp == p) return liars[static_cast<size_t>(lp - liar_pos.begin())];
    size_t idx = p - static_cast<size_t>(lp - liar_pos.begin());  // index among the completed bad trials
    for (size_t g : good_index) {  // ... and in by_number, past the good ones (ascending)
      if (g > idx) break;
      ++idx;
    }
    return by_number[idx];
  };

  if (nb <= max_components) {
    for (size_t p = 0; p < nb; ++p) s.bad.trials.push_back(at(p));
    s.bad.weights = DefaultTpeWeights(nb);
    return s;
  }
  const size_t recent = max_components / 2;
  const size_t strata = max_components - recent;
  const size_t older = nb - recent;  // > strata
  std::vector<std::pair<size_t, double>> chosen;  // (position, weight)
  chosen.reserve(max_components + liars.size());
  for (size_t k = 0; k < strata; ++k) {
    const size_t a = k * older / strata, b = (k + 1) * older / strata;
    const auto l0 = std::lower_bound(liar_pos.begin(), liar_pos.end(), a);
    const auto l1 = std::lower_bound(l0, liar_pos.end(), b);
    const auto liars_in = static_cast<size_t>(l1 - l0);
    if (b - a == liars_in) continue;  // only pending trials here: they stand as themselves below
    double w = DefaultTpeWeightSum(a, b, nb);
    for (auto l = l0; l != l1; ++l) w -= DefaultTpeWeight(*l, nb);
    size_t p = a + UniformBelow(rng, b - a - liars_in);  // the k-th completed trial of the stratum
    for (auto l = l0; l != l1 && *l <= p; ++l) ++p;
    chosen.emplace_back(p, w);
  }
  for (size_t lp : liar_pos) {
    if (lp < older) chosen.emplace_back(lp, DefaultTpeWeight(lp, nb));
  }
  for (size_t p = older; p < nb; ++p) chosen.emplace_back(p, DefaultTpeWeight(p, nb));
  std::sort(chosen.begin(), chosen.end());
  for (const auto& [p, w] : chosen) {
    s.bad.trials.push_back(at(p));
    s.bad.weights.push_back(w);
  }
  return s;
}

}  // namespace ladder::search::internal
