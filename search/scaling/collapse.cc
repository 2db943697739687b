// A probe's runs that collapsed (lr_laws.h CollapsedAsDiverged): past the cliff above the best LR a network can
// fall to a plateau (predicting the label marginals, say) where every LR ends at the same loss without a NaN, and
// three such runs read as a bracketed optimum.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <vector>

#include "search/scaling/extrapolation_internal.h"
#include "search/scaling/lr_laws.h"

namespace ladder::search {
namespace {

using extrapolation_internal::Convergent;

constexpr double kFlatterThanSweep = 20;   // a plateau: this many times flatter than the sweep's own basin
constexpr double kMinFlatSpan = 0.5;       // octaves the flat LRs must span
constexpr int kMinFlatLrs = 3;

// log2 LR → mean ln(final loss) over the convergent runs at a batch.
std::map<double, double> MeanLogLoss(const std::vector<ScaleTrial>& trials, int64_t batch) {
  std::map<double, std::pair<double, int>> sum;
  for (const ScaleTrial& t : trials) {
    if (t.global_batch != batch || !Convergent(t) || !(t.final_loss > 0)) continue;
    auto& e = sum[std::log2(t.peak_lr)];
    e.first += std::log(t.final_loss), ++e.second;
  }
  std::map<double, double> out;
  for (const auto& [x, e] : sum) out[x] = e.first / e.second;
  return out;
}

// The sweep's basin at its largest batch: the rise of ln(loss) per octave² away from its best LR, the mean over
// the sides measured (each side at its farthest LR within 1 octave of the best); NaN when neither side is.
double SweepCurvature(const std::vector<ScaleTrial>& trials, int64_t batch) {
  const std::map<double, double> m = MeanLogLoss(trials, batch);
  if (m.size() < 3) return kNaN;
  auto best = std::min_element(m.begin(), m.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  double sum = 0;
  int n = 0;
  for (const auto& [x, y] : m) {
    const double d = std::abs(x - best->first);
    if (d < 0.25 || d > 1.0 + 1e-9) continue;
    sum += (y - best->second) / (d * d), ++n;
  }
  return n > 0 ? sum / n : kNaN;
}

}  // namespace

std::vector<ScaleTrial> CollapsedAsDiverged(std::vector<ScaleTrial> trials, int64_t sweep_largest) {
  if (sweep_largest <= 0) return trials;
  const double k = SweepCurvature(trials, sweep_largest);
  if (!(k > 0)) return trials;
  std::map<int64_t, bool> batches;
  for (const ScaleTrial& t : trials) {
    if (t.global_batch > sweep_largest) batches[t.global_batch] = true;
  }
  for (const auto& [batch, unused] : batches) {
    const std::map<double, double> m = MeanLogLoss(trials, batch);
    // The longest run of LRs from the top down whose losses stay within what the sweep's basin would rise over a
    // twentieth of their half-span: the LRs from `flat_from` up collapsed.
    double lo = 1e300, hi = -1e300, flat_from = kNaN;
    int count = 0;
    for (auto it = m.rbegin(); it != m.rend(); ++it) {
      lo = std::min(lo, it->second), hi = std::max(hi, it->second), ++count;
      const double half = (m.rbegin()->first - it->first) / 2;
      if (hi - lo > k * half * half / kFlatterThanSweep && count > 1) break;
      if (count >= kMinFlatLrs && 2 * half >= kMinFlatSpan) flat_from = it->first;
    }
    if (!std::isfinite(flat_from)) continue;
    for (ScaleTrial& t : trials) {
      if (t.global_batch == batch && Convergent(t) && std::log2(t.peak_lr) >= flat_from - 1e-12) t.diverged = true;
    }
  }
  return trials;
}

}  // namespace ladder::search
