#pragma once
// ladder-search-bench constrained: the constrained part of bench/search_vs_optuna (search_constrained_bench.cc).
//
// The constraint, the same on both sides (bench/search_constrained_peer.py): on a synthetic problem, a half-space
// of the unit cube that holds the unconstrained optimum u* on its infeasible side, about 30% of the cube's volume:
//   c(u) = w·(u − ½) − t ≤ 0,   w = (u* − ½)/|u* − ½|,   t = z₀.₇/√12 = 0.5244005127080407/√12
// (w·(U − ½) for U uniform has variance |w|²/12 = 1/12; t is its 70th percentile in the normal approximation).
// A trial's violation is max(0, c(u)); its feasible regret is f(x) − f* (against the unconstrained optimum, the
// same constant for every sampler on a problem); a run's regret is its best feasible trial's, +inf without one.
#include <map>
#include <string>
#include <vector>

namespace ladder::bench {

// The constraint's w and t on a synthetic problem (its optimum's unit coordinates); empty w for another name.
struct HalfSpace {
  std::vector<double> w;
  double t = 0;
  double C(const std::vector<double>& u) const;  // w·(u − ½) − t
};
HalfSpace ConstraintOf(const std::string& problem);

// ladder-search-bench constrained --problem NAME [--sampler tpe] [--mode constrained|unconstrained] [--seeds N]
// [--seed0 K] [--budget N]: one JSON line per seed with the feasible regret after the budget and the infeasible
// share of its trials. "unconstrained": the sampler is told the objective only (the run's regret is still its best
// feasible trial's).
int ConstrainedRuns(const std::map<std::string, std::string>& args);

}  // namespace ladder::bench
