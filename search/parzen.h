#pragma once
// Internal to search/: the Parzen estimator of TPE over some coordinates of a UnitSpace. A mixture with one
// component per observation plus a prior component (uniform-ish, weight 1 like Optuna's prior_weight):
//   float/int coordinate: a Gaussian truncated to [0, 1], centred on the observation; its bandwidth is the
//     larger gap to its neighbours among the sorted centres of the coordinate (Optuna's univariate rule, prior
//     included), clipped to [1/min(100, n+2), 1]; the prior component is centred at 0.5 with bandwidth 1;
//   categorical coordinate: the observed choice gets 1 + prior/(n+1), every choice prior/(n+1), normalized;
//     the prior component is uniform.
// Component weights: the observations' `weights` (Optuna's default: older trials ramp down once there are more
// than 25) and 1 for the prior. Immutable after construction; no I/O.
#include <cstddef>
#include <random>
#include <vector>

#include "search/unit_space.h"

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
};

// Optuna's default_weights: 1 for everything when n < 25, else a ramp from 1/n to 1 over the oldest n - 25
// followed by 25 ones (n in trial-number order).
std::vector<double> DefaultTpeWeights(size_t n);

}  // namespace ladder::search::internal
