#pragma once
// Internal to search/multiobjective/: the completed trials that can still be among the first k by
// non-domination rank, kept as trials are told, so that MOTPE's good group costs nothing that grows with the
// whole history.
//
// Why dropping is safe: a trial dominated by k or more trials has at least k trials in the fronts before its
// own (each of its dominators has a lower rank), so it is never among the first k whole fronts nor in the front
// cut to fill them. A kept trial's count is the number of its dominators among the trials kept when it was
// added or added since; it is dropped once that count reaches k. A trial dominated by a dropped one is then
// dominated by k kept ones (the dominators of the highest dropped trial above it, none of them dropped), so it is
// dropped too: no kept trial is dominated by a dropped one, and the ranks among the kept trials are their ranks
// in the whole history. Adding a trial costs O(kept x objectives); the kept set is small unless the trials
// spread along a front (about k log^(M-1) N for points in general position).
//
// Not thread-safe; the observations must outlive it.
#include <cstddef>
#include <vector>

#include "search/multiobjective/mo_history.h"

namespace ladder::search::internal {

class TopRanks {
 public:
  explicit TopRanks(size_t k) : k_(k) {}

  void Add(const MoObservation* o);  // o->loss set
  void Clear() { kept_.clear(); }
  // The first `n` (n <= k) trials by rank: whole fronts, then the front that does not fit whole cut to size by
  // greedy hypervolume contribution against Optuna's reference point for it (1.1 x its worst point, 0.9 x where
  // negative, EPS where 0). In no particular order.
  std::vector<const MoObservation*> Best(size_t n) const;
  size_t kept() const { return kept_.size(); }

 private:
  struct Kept {
    const MoObservation* o;
    size_t dominators;
  };
  size_t k_;
  std::vector<Kept> kept_;  // in the order told
};

// Optuna's reference point for a set of loss vectors: max(1.1 w, 0.9 w) of the worst point w, 1e-12 where 0.
ObjectiveVector OptunaReferencePoint(const std::vector<ObjectiveVector>& points);

}  // namespace ladder::search::internal
