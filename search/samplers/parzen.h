#pragma once
// Internal to search/: the Parzen estimator of TPE over some coordinates of a UnitSpace. A mixture with one
// component per observation plus a prior component (uniform-ish, weight 1 like Optuna's prior_weight):
//   float/int coordinate: a Gaussian truncated to [0, 1], centred on the observation; its bandwidth is the
//     larger gap to its neighbours among the sorted centres of the coordinate (Optuna's univariate rule, prior
//     included), clipped to [1/min(100, n+2), 1]; the prior component is centred at 0.5 with bandwidth 1;
//   int coordinate with at most kMaxMassLevels values: the same Gaussian, but read as a distribution over the
//     values: a value's probability is the Gaussian's mass over the value's share of [0, 1] (as Optuna does for
//     a stepped parameter), not the density at its centre. The density is wrong for discrete values: once
//     several observations share a value their bandwidth is clipped to the minimum, far below the width of a
//     value, and the density at that value grows with 1/bandwidth, so log l - log g rewards whichever group
//     happens to hold more such narrow components instead of how much of each group sits on the value.
//     Its bandwidth is at least the width of the observation's value: distinct values are never closer than
//     that, so a smaller gap only says that several observations share a value (on the hpobench tables, 4-10
//     ordinal values per parameter, this is what made ladder's TPE trail Optuna's; docs/BENCHMARKS.md);
//   categorical coordinate: the observed choice gets 1 + prior/(n+1), every choice prior/(n+1), normalized;
//     the prior component is uniform.
// Component weights: the observations' `weights` (Optuna's default: older trials ramp down once there are more
// than 25) and 1 for the prior. Immutable after construction; no I/O.
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "search/core/unit_space.h"

namespace ladder::search::internal {

class ParzenEstimator {
 public:
  // points[k] has the coordinates of observation k (all of the space's); dims: which coordinates to model.
  ParzenEstimator(const UnitSpace& unit, std::vector<size_t> dims, const std::vector<const std::vector<double>*>& points,
                  const std::vector<double>& weights);

  // log density at u (only `dims` are read). Categorical coordinates are read as their choice.
  double LogPdf(const std::vector<double>& u) const;
  // Draws the modelled coordinates of *u from the mixture (snapped to representable values).
  void Sample(std::mt19937_64& rng, std::vector<double>* u) const;

 private:
  void FillMassTable(size_t j);  // mass_ of numeric position j, from mu_ and sigma_

  const UnitSpace& unit_;
  std::vector<size_t> dims_;
  std::vector<size_t> numeric_, categorical_;  // positions in dims_
  size_t components_ = 0;
  std::vector<double> weight_cdf_;   // cumulative normalized component weights, for sampling
  std::vector<double> log_const_;    // per component: log weight - sum over numeric dims of log(sigma Z sqrt(2 pi))
  std::vector<double> mu_, inv_sigma_;  // [component * numeric_.size() + j]
  struct CategoricalDim {
    size_t choices = 0;
    double p_hit = 0, p_miss = 0, log_hit = 0, log_miss = 0, log_uniform = 0;
    std::vector<int> observed;  // per component: its observed choice; -1 for the prior
  };
  std::vector<CategoricalDim> cat_;
  std::vector<double> sigma_;
  // Numeric coordinates read as values (see above): per numeric position, an index into mass_ or -1.
  struct MassDim {
    std::vector<double> edges;     // levels + 1 unit coordinates: value k owns [edges[k], edges[k + 1])
    std::vector<uint32_t> row;     // per component: its row of log_mass (components with equal mu, sigma share)
    std::vector<double> log_mass;  // [row * levels + value]: log of the value's share of the component's mass
  };
  std::vector<int> mass_of_;
  std::vector<MassDim> mass_;
};

// Int coordinates with more values than this keep the density: a value is then narrower than 1/64, near the
// smallest bandwidth the clip allows (1/100), where density x width is within about 10% of the mass; the
// table of masses (one row per distinct centre and bandwidth, one column per value) would cost more than it
// is worth.
constexpr uint64_t kMaxMassLevels = 64;

// Optuna's default_weights: 1 for everything when n < 25, else a ramp from 1/n to 1 over the oldest n - 25
// followed by 25 ones (n in trial-number order).
std::vector<double> DefaultTpeWeights(size_t n);
// Element i of DefaultTpeWeights(n), and the sum of its elements [a, b), each in O(1).
double DefaultTpeWeight(size_t i, size_t n);
double DefaultTpeWeightSum(size_t a, size_t b, size_t n);

}  // namespace ladder::search::internal
