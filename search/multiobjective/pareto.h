#pragma once
// Pareto tools over points whose every objective is minimized (a `max` objective is negated by the caller, at the
// boundary: MultiObjectiveSampler::Tell does it for the samplers). Pure functions, no state, no I/O.
//
//   Dominates                a <= b everywhere and < somewhere
//   NonDominatedRanks        Deb's fast non-dominated sort: rank 0 is the Pareto front. O(M N^2) time, O(N^2)
//                            memory for the domination lists (fine up to a few thousand points)
//   LeadingFronts            the first fronts only, until they hold at least k points: O(M N F) per front of
//                            F points, for a large set of which only the best few are wanted
//   ConstrainedNonDominatedRanks  the ranks under Deb's constrained domination (a feasible point, violation 0,
//                            dominates an infeasible one; of two infeasible ones the smaller violation
//                            dominates; two feasible ones by Dominates): the feasible points' ranks as
//                            NonDominatedRanks gives them, then the infeasible ones, one rank per distinct
//                            violation, smallest first
//   CrowdingDistance         NSGA-II's spread of each point within its front (boundaries: +infinity)
//   Hypervolume              the volume dominated by the points and bounded by `ref` (points not strictly
//                            below ref in every objective add nothing). Exact: 1 objective a minimum, 2 a sort
//                            (O(N log N)), 3 a sweep over the third objective keeping the 2-D front of the
//                            points below the sweep in a std::map, updating its area as each point enters
//                            (O(N log N) in all); 4 or more by slicing on the last objective (O(N^(M-1)) and
//                            more: meant for the few points of a TPE good group, not for large sets)
//   HypervolumeContributions the volume only each point dominates: HV(all) - HV(all but it)
//   GreedyHypervolumeSubset  k of the points chosen one at a time, each the one adding the most volume to those
//                            already chosen (the greedy answer to the hypervolume subset selection problem,
//                            as Optuna's MOTPE breaks ties in a front); ties to the lower index
#include <cstddef>
#include <vector>

namespace ladder::search {

using ObjectiveVector = std::vector<double>;

bool Dominates(const ObjectiveVector& a, const ObjectiveVector& b);

// One rank per point (0 = non-dominated). Points must all have the same size.
std::vector<int> NonDominatedRanks(const std::vector<ObjectiveVector>& points);

// One rank per point under Deb's constrained domination; `violations` one per point (the sum of its positive
// signed constraint values; 0: feasible). O(M F^2 + I log I) for F feasible and
// I infeasible points (the infeasible ones are ordered, not compared pairwise).
std::vector<int> ConstrainedNonDominatedRanks(const std::vector<ObjectiveVector>& points,
                                              const std::vector<double>& violations);

// Indices of `points` grouped by front, first
// front first, each front in ascending index order; stops once the fronts returned hold >= min_count points.
std::vector<std::vector<size_t>> LeadingFronts(const std::vector<const ObjectiveVector*>& points,
                                               size_t min_count);

// Crowding distance of each point of `front` (indices into points), in the same order.
std::vector<double> CrowdingDistance(const std::vector<ObjectiveVector>& points, const std::vector<size_t>& front);

double Hypervolume(const std::vector<ObjectiveVector>& points, const ObjectiveVector& ref);
std::vector<double> HypervolumeContributions(const std::vector<ObjectiveVector>& points, const ObjectiveVector& ref);
// Indices of min(k, size) points, in the order chosen.
std::vector<size_t> GreedyHypervolumeSubset(const std::vector<ObjectiveVector>& points, size_t k,
                                            const ObjectiveVector& ref);

}  // namespace ladder::search
