// Steps to a target loss along a trial's curve, and the steps-examples trade-off S(B) = S_min (1 + B_crit/B)
// fitted to the fewest steps to the target at each batch.
#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>
#include <vector>

#include "search/scaling/extrapolation.h"
#include "search/scaling/extrapolation_internal.h"
#include "search/scaling/scale_math.h"

namespace ladder::search {
namespace extrapolation_internal {

// ---- steps to a target loss ---------------------------------------------------------------------------------
namespace {

using internal::Minimize1D;

}  // namespace

double StepsToTarget(const ScaleTrial& t, double target) {
  if (!Convergent(t)) return kNaN;
  std::vector<LossPoint> c = t.curve;
  std::sort(c.begin(), c.end(), [](const LossPoint& a, const LossPoint& b) { return a.step < b.step; });
  for (size_t i = 0; i < c.size(); ++i) {
    if (!(c[i].loss <= target)) continue;
    if (i == 0 || !std::isfinite(c[i - 1].loss)) return static_cast<double>(c[i].step);
    const double f = (c[i - 1].loss - target) / (c[i - 1].loss - c[i].loss);
    return static_cast<double>(c[i - 1].step) + f * static_cast<double>(c[i].step - c[i - 1].step);
  }
  return kNaN;
}

// S(B) = S_min (1 + B_crit/B) in log space; returns {S_min, B_crit}.
std::optional<std::pair<double, double>> FitTradeoff(const std::vector<TradeoffPoint>& pts) {
  if (pts.size() < 2) return std::nullopt;
  double bmin = pts.front().batch, bmax = bmin;
  for (const auto& p : pts) bmin = std::min(bmin, p.batch), bmax = std::max(bmax, p.batch);
  if (!(bmax > bmin)) return std::nullopt;
  auto log_smin = [&](double bc, double* sse) {
    double s = 0;
    for (const auto& p : pts) s += std::log(p.steps) - std::log1p(bc / p.batch);
    const double ls = s / static_cast<double>(pts.size());
    if (sse) {
      *sse = 0;
      for (const auto& p : pts) {
        const double r = std::log(p.steps) - ls - std::log1p(bc / p.batch);
        *sse += r * r;
      }
    }
    return ls;
  };
  const double u = Minimize1D(
      [&](double v) {
        double sse;
        log_smin(std::exp(v), &sse);
        return sse;
      },
      std::log(bmin / 1000), std::log(bmax * 1000), 96);
  return std::make_pair(std::exp(log_smin(std::exp(u), nullptr)), std::exp(u));
}

}  // namespace extrapolation_internal
}  // namespace ladder::search
