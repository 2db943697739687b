// surface_fit: the optimum line log2 ε_opt = c + α log2 B fitted to the loss surface of every convergent trial near
// each batch's best LR (L* per batch and seed, k per batch), not to the per-batch best LRs.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "search/scaling/extrapolation.h"
#include "search/scaling/extrapolation_internal.h"
#include "search/scaling/scale_math.h"

namespace ladder::search {
namespace extrapolation_internal {

// ---- the loss surface: loss(x, B) ≈ L*(B) + k(B)·(x − c − α·u(B))², x = log2 lr, u = log2 B − mean ------------
namespace {

using internal::Minimize1D;

// Sum of squares of the best per-batch (L* per seed group, one k >= 0) for a given optimum line (c, α).
double SurfaceSse(const std::vector<SurfaceBatch>& batches, double c, double alpha) {
  double total = 0;
  for (const SurfaceBatch& b : batches) total += BatchSse(b, c + alpha * b.u);
  return total;
}

}  // namespace

double BatchSse(const SurfaceBatch& b, double xs, double* k_out) {
  const size_t n = b.x.size();
  std::vector<double> mz(b.groups, 0.0), my(b.groups, 0.0), count(b.groups, 0.0), z(n);
  auto weight = [&](size_t i) { return b.w.empty() ? 1.0 : b.w[i]; };
  for (size_t i = 0; i < n; ++i) {
    z[i] = (b.x[i] - xs) * (b.x[i] - xs);
    const double w = weight(i);
    mz[b.group[i]] += w * z[i], my[b.group[i]] += w * b.y[i], count[b.group[i]] += w;
  }
  for (int g = 0; g < b.groups; ++g) {
    if (count[g] > 0) mz[g] /= count[g], my[g] /= count[g];
  }
  double szz = 0, szy = 0;
  for (size_t i = 0; i < n; ++i) {
    const double zc = z[i] - mz[b.group[i]];
    szz += weight(i) * zc * zc, szy += weight(i) * zc * (b.y[i] - my[b.group[i]]);
  }
  const double k = szz > 0 ? std::max(0.0, szy / szz) : 0.0;
  if (k_out) *k_out = k;
  double total = 0;
  for (size_t i = 0; i < n; ++i) {
    const double r = b.y[i] - my[b.group[i]] - k * (z[i] - mz[b.group[i]]);
    total += weight(i) * r * r;
  }
  return total;
}

// The trials of each batch within `window` octaves of its best LR (at least its 3 LRs nearest that), losses
// relative to the batch's best. nullopt when a batch has fewer than 3 distinct LRs or there are < 2 batches.
std::optional<std::vector<SurfaceBatch>> SurfaceData(const std::map<int64_t, Group>& by_batch,
                                                     const std::vector<BestLr>& best, double window, bool log_loss) {
  if (best.size() < 2) return std::nullopt;
  std::vector<SurfaceBatch> out;
  double mean_u = 0;
  for (const BestLr& bl : best) {
    const double xb = std::log2(bl.lr.value);
    std::map<double, std::vector<std::pair<double, int64_t>>> by_x;  // log2 lr -> (loss, seed)
    for (const ScaleTrial* t : by_batch.at(bl.global_batch)) {
      if (Convergent(*t)) by_x[std::log2(t->peak_lr)].push_back({t->final_loss, t->seed});
    }
    if (by_x.size() < 3) return std::nullopt;
    std::vector<double> dist;
    for (const auto& kv : by_x) dist.push_back(std::abs(kv.first - xb));
    std::sort(dist.begin(), dist.end());
    const double reach = std::max(window, dist[2]);
    SurfaceBatch sb;
    sb.batch = bl.global_batch;
    sb.u = std::log2(static_cast<double>(bl.global_batch));
    sb.log2_batch = sb.u;
    mean_u += sb.u;
    const double scale = bl.loss > 0 ? bl.loss : 1.0;
    std::map<int64_t, int> groups;  // seed -> group; a seed seen at fewer than 2 LRs joins the unknown group
    std::map<int64_t, std::set<double>> seed_lrs;
    for (const auto& [x, runs] : by_x) {
      if (std::abs(x - xb) > reach + 1e-9) continue;
      for (const auto& run : runs) seed_lrs[run.second].insert(x);
    }
    for (const auto& [seed, lrs] : seed_lrs) {
      if (seed >= 0 && lrs.size() >= 2) groups.emplace(seed, static_cast<int>(groups.size()) + 1);
    }
    sb.groups = static_cast<int>(groups.size()) + 1;  // group 0: unknown seeds
    for (const auto& [x, runs] : by_x) {
      if (std::abs(x - xb) > reach + 1e-9) continue;
      for (const auto& [l, seed] : runs) {
        auto g = groups.find(seed);
        sb.x.push_back(x), sb.y.push_back(log_loss ? std::log(l / scale) : l / scale), sb.group.push_back(g == groups.end() ? 0 : g->second);
        sb.seed.push_back(seed);
      }
    }
    out.push_back(std::move(sb));
  }
  mean_u /= static_cast<double>(out.size());
  for (SurfaceBatch& b : out) b.u -= mean_u;
  return out;
}

// Fits (c, α), α in [0, 1]; returns ln lr = a + b ln B like the power fit.
std::optional<internal::Line> FitSurface(const std::map<int64_t, Group>& by_batch, const std::vector<BestLr>& best,
                                         double window) {
  auto data = SurfaceData(by_batch, best, window);
  if (!data) return std::nullopt;
  double xlo = std::numeric_limits<double>::infinity(), xhi = -xlo, mean_log2b = 0;
  for (const BestLr& b : best) {
    xlo = std::min(xlo, std::log2(b.lr.value)), xhi = std::max(xhi, std::log2(b.lr.value));
    mean_log2b += std::log2(static_cast<double>(b.global_batch));
  }
  mean_log2b /= static_cast<double>(best.size());
  auto best_c = [&](double alpha, double* sse) {
    const double c = Minimize1D([&](double v) { return SurfaceSse(*data, v, alpha); }, xlo - 2, xhi + 2, 48);
    if (sse) *sse = SurfaceSse(*data, c, alpha);
    return c;
  };
  const double alpha = Minimize1D(
      [&](double a) {
        double sse;
        best_c(a, &sse);
        return sse;
      },
      0.0, 1.0, 21);
  const double c = best_c(alpha, nullptr);
  // log2 lr = c + α (log2 B − m)  ⇒  ln lr = ln2·(c − α m) + α ln B.
  return internal::Line{std::log(2.0) * (c - alpha * mean_log2b), alpha};
}

}  // namespace extrapolation_internal
}  // namespace ladder::search
