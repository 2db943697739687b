// The best learning rate of one batch size's sweep: the vertex of a parabola in log2(lr) through the argmin and
// its neighbours (BestLrOf, for every fit and replicate), and FindBestLr.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "search/scaling/extrapolation.h"
#include "search/scaling/extrapolation_internal.h"
#include "search/scaling/scale_math.h"

namespace ladder::search {
namespace {

using extrapolation_internal::BestLrOf;
using extrapolation_internal::Group;
using extrapolation_internal::Validate;

}  // namespace

namespace extrapolation_internal {

// ---- best LR of one sweep -----------------------------------------------------------------------------------

// `lr_lo` / `lr_hi`: the smallest and largest LR swept at this batch, diverged trials included.
std::optional<BestLr> BestLrOf(const Group& sweep, int neighbours, double lr_lo, double lr_hi) {
  std::map<double, std::vector<double>> by_lr;  // log2 lr -> losses
  for (const ScaleTrial* t : sweep) {
    if (Convergent(*t)) by_lr[std::log2(t->peak_lr)].push_back(t->final_loss);
  }
  if (by_lr.empty()) return std::nullopt;
  std::vector<double> xs, means;
  for (const auto& [x, losses] : by_lr) {
    xs.push_back(x);
    double s = 0;
    for (double l : losses) s += l;
    means.push_back(s / static_cast<double>(losses.size()));
  }
  const size_t best = static_cast<size_t>(std::min_element(means.begin(), means.end()) - means.begin());
  BestLr out;
  out.global_batch = sweep.front()->global_batch;
  out.trials = 0;
  for (const auto& kv : by_lr) out.trials += static_cast<int>(kv.second.size());
  out.lr.value = std::exp2(xs[best]);
  out.loss = means[best];
  const double eps = 1e-9;
  out.at_edge = xs[best] <= std::log2(lr_lo) + eps || xs[best] >= std::log2(lr_hi) - eps;
  // Quadratic in x around the argmin: loss ≈ c0 + c1 (x − x*) + c2 (x − x*)², every trial a point, over
  // `neighbours` swept LRs each side. A cliff among them (the loss doubling one step above the best LR) bends it
  // under the trials: a minimum that lies below every trial by more than the parabola dips between two
  // neighbouring swept LRs (c2 (step/2)², a vertex halfway between them) does not describe the sweep, and the
  // window narrows by one LR each side; with none left, the argmin stands. (Any loss scale: no sign assumed.)
  for (int n = neighbours; n >= 1 && !out.parabola; --n) {  // neighbours >= 1 (FindBestLr, FitScaling check)
    const size_t lo = best >= static_cast<size_t>(n) ? best - n : 0;
    const size_t hi = std::min(xs.size() - 1, best + n);
    if (hi - lo + 1 < 3) break;
    std::vector<double> design, y;
    double half_step = std::numeric_limits<double>::infinity();
    for (size_t i = lo; i <= hi; ++i) {
      if (i > lo) half_step = std::min(half_step, (xs[i] - xs[i - 1]) / 2);
      for (double l : by_lr[xs[i]]) {
        const double d = xs[i] - xs[best];
        design.insert(design.end(), {1.0, d, d * d});
        y.push_back(l);
      }
    }
    auto c = internal::LeastSquares(design, y, {}, 3);
    if (!c || !((*c)[2] > 0)) continue;
    const double d = std::clamp(-(*c)[1] / (2 * (*c)[2]), xs[lo] - xs[best], xs[hi] - xs[best]);
    const double floor = (*c)[0] + (*c)[1] * d + (*c)[2] * d * d;
    // The lowest single trial, not the lowest mean: the trials' spread is the test's allowance for noise.
    const double lowest = *std::min_element(y.begin(), y.end());
    if (floor < lowest - (*c)[2] * half_step * half_step - 1e-12) continue;
    out.lr.value = std::exp2(xs[best] + d);
    out.parabola = true;
  }
  out.lr.lo = out.lr.hi = out.lr.value;
  return out;
}

}  // namespace extrapolation_internal

Fitted<BestLr> FindBestLr(const std::vector<ScaleTrial>& sweep, int neighbours) {
  if (neighbours < 1) {
    return Fitted<BestLr>::Fail("FindBestLr: neighbours must be >= 1, got " + std::to_string(neighbours));
  }
  if (std::string e = Validate(sweep); !e.empty()) return Fitted<BestLr>::Fail(e);
  Group g;
  double lo = sweep.front().peak_lr, hi = lo;
  for (const ScaleTrial& t : sweep) {
    if (t.global_batch != sweep.front().global_batch) {
      return Fitted<BestLr>::Fail("FindBestLr: trials at several global batch sizes (" +
                                  std::to_string(sweep.front().global_batch) + " and " +
                                  std::to_string(t.global_batch) + "); pass one sweep");
    }
    g.push_back(&t);
    lo = std::min(lo, t.peak_lr), hi = std::max(hi, t.peak_lr);
  }
  auto b = BestLrOf(g, neighbours, lo, hi);
  if (!b) {
    return Fitted<BestLr>::Fail("global batch " + std::to_string(sweep.front().global_batch) +
                                ": no convergent trial (every one diverged or has no finite final loss)");
  }
  return Fitted<BestLr>{b, ""};
}

}  // namespace ladder::search
