// The posterior side of lr_laws.h: the mixture of the consistent laws' draws (weighed by a censored probe's
// bound), its quantiles, a target's posterior and prediction (the decision near the stability edge), and whether
// a batch's optimum is bracketed.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <utility>

#include "search/scaling/extrapolation_internal.h"
#include "search/scaling/lr_laws.h"

namespace ladder::search {
namespace {

using extrapolation_internal::Convergent;

constexpr double kDecisionStep = 1.0 / 32;  // octaves between the LRs the edge decision weighs
constexpr double kCensorMinSd = 0.05;       // octaves: the least noise of a censoring bound

// The loss of LR 2^x relative to its optimum 2^xs under a basin a/η + b·η/(E − η), E = 2^edge: training left
// undone falls as 1/η, the noise in the sharpest direction grows without bound at the edge. Its minimum at xs
// fixes a/b = E·η*²/(E − η*)².
double EdgeBasin(double x, double xs, double edge) {
  const double e = std::exp2(edge), h = std::exp2(x), hs = std::exp2(xs);
  if (h >= e) return 1e300;
  const double ab = e * hs * hs / ((e - hs) * (e - hs));
  return (ab / h + h / (e - h)) / (ab / hs + hs / (e - hs)) - 1;
}

// The LR (log2, at most `cap`) of the least expected relative loss over the posterior draws, each draw's loss
// the larger of the measured basin k·(x − x*)² and EdgeBasin: near the edge a step too high costs more than one
// too low, and far below it the measured curvature rules.
double EdgeDecision(const std::vector<std::pair<double, double>>& draws, double edge, double cap, double k) {
  double lo = cap;
  for (const auto& d : draws) lo = std::min(lo, d.first);
  double best = cap, best_loss = 1e300;
  for (double x = cap; x >= lo - 1e-9; x -= kDecisionStep) {
    double loss = 0;
    for (const auto& [xs, w] : draws) {
      const double d = x - std::min(xs, cap);
      loss += w * std::max(k * d * d, EdgeBasin(x, std::min(xs, cap), edge));
    }
    if (loss < best_loss) best_loss = loss, best = x;
  }
  return best;
}

double WeightedMean(const std::vector<std::pair<double, double>>& vw) {
  double sum = 0, total = 0;
  for (const auto& [v, w] : vw) sum += v * w, total += w;
  return total > 0 ? sum / total : kNaN;
}

// The consistent laws' draws by law weight, before a censored anchor reweighs them (Mixture).
std::vector<MixtureDraw> MixtureUncensored(const LawSet& set) {
  std::vector<MixtureDraw> out;
  double total = 0;
  for (const LawFit& l : set.laws) total += l.consistent ? l.weight : 0;
  for (size_t i = 0; i < set.laws.size(); ++i) {
    const LawFit& l = set.laws[i];
    if (!l.consistent || !(total > 0)) continue;
    const double w = l.weight / total;
    if (l.draws.empty()) {
      out.push_back({static_cast<int>(i), l.params, w});
      continue;
    }
    for (size_t j = 0; j < l.draws.size(); ++j) {
      out.push_back({static_cast<int>(i), l.draws[j], w / static_cast<double>(l.draws.size()), static_cast<int>(j)});
    }
  }
  return out;
}

}  // namespace

int Unbracketed(const std::vector<ScaleTrial>& trials, int64_t global_batch, double* bound) {
  std::map<double, std::pair<double, int>> by_lr;  // log2 lr -> (sum of final losses, runs); diverged: +inf
  for (const ScaleTrial& t : trials) {
    if (t.global_batch != global_batch) continue;
    auto& e = by_lr[std::log2(t.peak_lr)];
    e.first += Convergent(t) ? t.final_loss : 1e300, ++e.second;
  }
  if (by_lr.size() < 2) return 0;
  auto best = by_lr.begin();
  for (auto it = by_lr.begin(); it != by_lr.end(); ++it) {
    if (it->second.first / it->second.second < best->second.first / best->second.second) best = it;
  }
  if (bound) *bound = best->first;
  if (best == by_lr.begin()) return -1;
  return std::next(best) == by_lr.end() ? 1 : 0;
}

std::vector<MixtureDraw> Mixture(const LawSet& set) {
  std::vector<MixtureDraw> out = MixtureUncensored(set);
  if (set.censored == 0 || out.empty()) return out;
  // Weighed by the chance that one probe at the censored batch saw its best LR at the bound: a draw whose optimum
  // there lies well inside the probe's LRs would have been bracketed.
  const double pb = static_cast<double>(set.censor_batch);
  const double sd = std::max(set.censor_sd, kCensorMinSd);
  double total = 0;
  std::vector<double> w(out.size());
  for (size_t i = 0; i < out.size(); ++i) {
    const double z = set.censored * (DrawLog2(set, out[i], pb) - set.censor_bound) / sd;
    w[i] = out[i].weight * 0.5 * std::erfc(-z / std::sqrt(2.0));
    total += w[i];
  }
  if (!(total > 1e-12)) return out;  // no law reaches the bound: left as it was (the target stays flagged)
  for (size_t i = 0; i < out.size(); ++i) out[i].weight = w[i] / total;
  return out;
}

double WeightedQuantile(std::vector<std::pair<double, double>> vw, double q) {
  if (vw.empty()) return kNaN;
  std::sort(vw.begin(), vw.end());
  double total = 0;
  for (const auto& e : vw) total += e.second;
  double acc = 0;
  for (const auto& [v, w] : vw) {
    acc += w;
    if (acc >= q * total) return v;
  }
  return vw.back().first;
}

LrPosterior PosteriorAt(const LawSet& set, const std::vector<MixtureDraw>& mixture, double global_batch) {
  LrPosterior out;
  out.global_batch = static_cast<int64_t>(global_batch);
  std::vector<std::pair<double, double>> vw;
  for (const MixtureDraw& d : mixture) {
    double x = DrawLog2(set, d, global_batch);
    if (std::isfinite(set.edge_log2)) x = std::min(x, set.edge_log2);  // no best LR lies above the edge
    vw.push_back({x, d.weight});
  }
  out.lo80 = WeightedQuantile(vw, 0.10), out.hi80 = WeightedQuantile(vw, 0.90);
  out.lo90 = WeightedQuantile(vw, 0.05), out.hi90 = WeightedQuantile(vw, 0.95);
  // The prediction: the weighted median of the consistent laws' full-data fits (robust to a skewed bootstrap),
  // below the cap; the intervals are widened to hold it.
  std::vector<std::pair<double, double>> fits;
  for (const LawFit& l : set.laws) {
    if (l.consistent) fits.push_back({std::min(set.FitLog2(l, global_batch), set.edge_log2), l.weight});
  }
  // (A censored anchor: the mixture the bound reweighed, its mean, the LR of least expected quadratic regret; the
  // laws' full fits ignore the bound, and the one-sided draws' median sits by it.)
  out.log2_lr = set.censored != 0 ? WeightedMean(vw)
                : fits.empty()      ? WeightedQuantile(vw, 0.5)
                                    : WeightedQuantile(fits, 0.5);
  if (std::isfinite(set.cap_log2)) out.log2_lr = std::min(out.log2_lr, set.cap_log2);  // nor is a plan at it
  if (std::isfinite(set.cap_log2)) {
    out.log2_lr = EdgeDecision(vw, set.edge_log2, set.cap_log2, set.KAt(global_batch));
  }
  out.lo80 = std::min(out.lo80, out.log2_lr), out.hi80 = std::max(out.hi80, out.log2_lr);
  out.lo90 = std::min(out.lo90, out.log2_lr), out.hi90 = std::max(out.hi90, out.log2_lr);
  out.k_rel = set.KAt(global_batch);
  std::vector<std::pair<double, double>> regret;
  double mean = 0, total = 0;
  for (const auto& [x, w] : vw) {
    const double r = out.k_rel * (x - out.log2_lr) * (x - out.log2_lr);
    regret.push_back({r, w}), mean += w * r, total += w;
  }
  out.regret_mean = total > 0 ? mean / total : kNaN;
  out.regret_p80 = WeightedQuantile(regret, 0.8);
  for (const LawFit& l : set.laws) {
    if (!l.consistent) continue;
    double x = set.FitLog2(l, global_batch);
    if (std::isfinite(set.edge_log2)) x = std::min(x, set.edge_log2);
    if (out.law_lo.empty() || x < out.law_lo_log2) out.law_lo = l.name, out.law_lo_log2 = x;
    if (out.law_hi.empty() || x > out.law_hi_log2) out.law_hi = l.name, out.law_hi_log2 = x;
  }
  out.disagreement = out.law_hi.empty() ? 0 : out.law_hi_log2 - out.law_lo_log2;
  return out;
}

}  // namespace ladder::search
