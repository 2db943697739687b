// ε_opt(B) = ε_max / (1 + B_noise/B) fitted to the best LRs: both parameters free (lr_fit), B_noise fixed at the
// measured noise scale (noise_fit) or weighed against it (joint_fit); and LrBatchFit::Lr.
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

// ---- ε_opt(B) = ε_max / (1 + B_noise/B) --------------------------------------------------------------------
namespace {

using internal::Minimize1D;

// log ε_max minimizing the squared log residuals for a fixed B_noise, and their sum.
std::pair<double, double> LogEpsMaxFor(const std::vector<LawPoint>& pts, double b_noise) {
  double s = 0;
  for (const auto& p : pts) s += std::log(p.lr) + std::log1p(b_noise / p.batch);
  const double log_eps = s / static_cast<double>(pts.size());
  double sse = 0;
  for (const auto& p : pts) {
    const double r = std::log(p.lr) - (log_eps - std::log1p(b_noise / p.batch));
    sse += r * r;
  }
  return {log_eps, sse};
}

}  // namespace

std::optional<LawFit> FitLawFree(const std::vector<LawPoint>& pts, double max_noise_factor) {
  if (pts.size() < 2) return std::nullopt;
  double bmin = pts.front().batch, bmax = bmin;
  for (const auto& p : pts) bmin = std::min(bmin, p.batch), bmax = std::max(bmax, p.batch);
  if (!(bmax > bmin)) return std::nullopt;
  const double lo = std::log(bmin / 100), hi = std::log(bmax * max_noise_factor);
  const double u = Minimize1D([&](double v) { return LogEpsMaxFor(pts, std::exp(v)).second; }, lo, hi, 96);
  const auto [log_eps, sse] = LogEpsMaxFor(pts, std::exp(u));
  const double margin = 0.02 * (hi - lo);
  return LawFit{std::exp(log_eps), std::exp(u), std::sqrt(sse / pts.size()) / std::log(2.0),
                u - lo > margin && hi - u > margin};
}

// B_noise weighed between the best LRs (sd lr_sigma in ln) and the measurement (sd noise_sigma in ln).
LawFit FitLawJoint(const std::vector<LawPoint>& pts, double measured, double lr_sigma, double noise_sigma,
                   double max_noise_factor) {
  double bmin = pts.front().batch, bmax = bmin;
  for (const auto& p : pts) bmin = std::min(bmin, p.batch), bmax = std::max(bmax, p.batch);
  const double lo = std::min(std::log(bmin / 100), std::log(measured) - 5 * noise_sigma);
  const double hi = std::max(std::log(bmax * max_noise_factor), std::log(measured) + 5 * noise_sigma);
  const double m = std::log(measured);
  const double u = Minimize1D(
      [&](double v) {
        const double z = (v - m) / noise_sigma;
        return LogEpsMaxFor(pts, std::exp(v)).second / (lr_sigma * lr_sigma) + z * z;
      },
      lo, hi, 96);
  const auto [log_eps, sse] = LogEpsMaxFor(pts, std::exp(u));
  return LawFit{std::exp(log_eps), std::exp(u), std::sqrt(sse / pts.size()) / std::log(2.0), true};
}

LawFit FitLawFixedNoise(const std::vector<LawPoint>& pts, double b_noise) {
  const auto [log_eps, sse] = LogEpsMaxFor(pts, b_noise);
  return LawFit{std::exp(log_eps), b_noise, std::sqrt(sse / pts.size()) / std::log(2.0), true};
}

}  // namespace extrapolation_internal

double LrBatchFit::Lr(double global_batch) const { return eps_max.value / (1 + b_noise.value / global_batch); }

}  // namespace ladder::search
