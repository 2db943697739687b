#pragma once
// Internal to search/multiobjective/: ParEGO's scalarisation (Knowles 2006), which turns several objectives into
// one loss for a single-objective model (parego_sampler.cc):
//   s(f) = max_i(w_i f'_i) + rho sum_i(w_i f'_i),  rho = 0.05 (the augmented Chebyshev function)
// with f'_i objective i normalized to [0, 1] over a set of trials (NormalizedObjectives) and w a weight vector
// drawn uniformly from the simplex (SimplexWeights). Minimizing s for some w reaches any Pareto-optimal point,
// the non-convex parts of a front included (a weighted sum does not); the rho term breaks ties between weakly
// dominated points. Pure functions, no state.
#include <random>
#include <vector>

#include "search/multiobjective/pareto.h"

namespace ladder::search::internal {

constexpr double kAugmentedChebyshevRho = 0.05;

// `objectives` weights, uniform on the simplex (a flat Dirichlet: -log U_i, divided by their sum).
std::vector<double> SimplexWeights(size_t objectives, std::mt19937_64& rng);

// Each objective mapped to [0, 1] by the smallest and largest value it takes in `losses` (an objective that takes
// one value maps to 0). Every point has the same number of objectives.
std::vector<ObjectiveVector> NormalizedObjectives(const std::vector<const ObjectiveVector*>& losses);

// s(f) above, for a normalized f and weights w of the same size.
double AugmentedChebyshev(const ObjectiveVector& f, const std::vector<double>& w,
                          double rho = kAugmentedChebyshevRho);

}  // namespace ladder::search::internal
