#include "search/samplers/tpe_candidates.h"

#include <algorithm>

#include "search/samplers/parzen.h"
#include "search/samplers/sampler_internal.h"

namespace ladder::search::internal {

std::vector<double> ChooseTpeCandidate(const UnitSpace& unit, const std::vector<size_t>& joint,
                                       const std::vector<size_t>& conditional,
                                       const std::function<TpeGroups(size_t group)>& split, int candidates,
                                       std::mt19937_64& rng) {
  TpeGroups js = split(0);
  ParzenEstimator l(unit, joint, js.good, js.good_w), g(unit, joint, js.bad, js.bad_w);
  std::vector<std::vector<double>> cand(static_cast<size_t>(candidates), std::vector<double>(unit.dims(), 0.5));
  std::vector<double> score(cand.size());
  for (size_t c = 0; c < cand.size(); ++c) {
    l.Sample(rng, &cand[c]);
    score[c] = l.LogPdf(cand[c]) - g.LogPdf(cand[c]);
  }
  for (size_t i = 0; i < conditional.size(); ++i) {
    const size_t d = conditional[i];
    TpeGroups cs = split(1 + i);
    const bool any = !cs.good.empty() || !cs.bad.empty();
    ParzenEstimator lc(unit, {d}, cs.good, cs.good_w), gc(unit, {d}, cs.bad, cs.bad_w);
    for (size_t c = 0; c < cand.size(); ++c) {
      if (!unit.ActiveUnder(d, cand[c])) continue;
      if (!any) {  // never seen active: its prior
        cand[c][d] = unit.Snap(d, Uniform01(rng));
        continue;
      }
      lc.Sample(rng, &cand[c]);
      score[c] += lc.LogPdf(cand[c]) - gc.LogPdf(cand[c]);
    }
  }
  const auto best = static_cast<size_t>(std::max_element(score.begin(), score.end()) - score.begin());
  return cand[best];
}

}  // namespace ladder::search::internal
