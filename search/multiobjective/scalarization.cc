#include "search/multiobjective/scalarization.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "search/samplers/sampler_internal.h"

namespace ladder::search::internal {

std::vector<double> SimplexWeights(size_t objectives, std::mt19937_64& rng) {
  std::vector<double> w(objectives);
  double sum = 0;
  for (double& x : w) {
    x = -std::log(1.0 - Uniform01(rng));  // 1 - U in (0, 1]: finite
    sum += x;
  }
  if (!(sum > 0)) return std::vector<double>(objectives, 1.0 / static_cast<double>(objectives));
  for (double& x : w) x /= sum;
  return w;
}

std::vector<ObjectiveVector> NormalizedObjectives(const std::vector<const ObjectiveVector*>& losses) {
  std::vector<ObjectiveVector> out;
  if (losses.empty()) return out;
  const size_t m = losses.front()->size();
  std::vector<double> lo(m, std::numeric_limits<double>::infinity()), hi(m, -std::numeric_limits<double>::infinity());
  for (const ObjectiveVector* f : losses) {
    for (size_t i = 0; i < m; ++i) {
      lo[i] = std::min(lo[i], (*f)[i]);
      hi[i] = std::max(hi[i], (*f)[i]);
    }
  }
  out.reserve(losses.size());
  for (const ObjectiveVector* f : losses) {
    ObjectiveVector g(m);
    for (size_t i = 0; i < m; ++i) g[i] = hi[i] > lo[i] ? ((*f)[i] - lo[i]) / (hi[i] - lo[i]) : 0.0;
    out.push_back(std::move(g));
  }
  return out;
}

double AugmentedChebyshev(const ObjectiveVector& f, const std::vector<double>& w, double rho) {
  double worst = -std::numeric_limits<double>::infinity(), sum = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    worst = std::max(worst, w[i] * f[i]);
    sum += w[i] * f[i];
  }
  return worst + rho * sum;
}

}  // namespace ladder::search::internal
