#include "search/multiobjective/top_ranks.h"

#include <algorithm>

namespace ladder::search::internal {

void TopRanks::Add(const MoObservation* o) {
  size_t dominators = 0;
  for (Kept& m : kept_) {
    if (Dominates(*m.o->loss, *o->loss)) {
      ++dominators;
    } else if (Dominates(*o->loss, *m.o->loss)) {
      ++m.dominators;
    }
  }
  kept_.erase(std::remove_if(kept_.begin(), kept_.end(), [&](const Kept& m) { return m.dominators >= k_; }),
              kept_.end());
  if (dominators < k_) kept_.push_back({o, dominators});
}

std::vector<const MoObservation*> TopRanks::Best(size_t n) const {
  std::vector<const ObjectiveVector*> points;
  for (const Kept& m : kept_) points.push_back(&*m.o->loss);
  std::vector<const MoObservation*> out;
  for (const std::vector<size_t>& front : LeadingFronts(points, n)) {
    if (out.size() + front.size() <= n) {
      for (size_t i : front) out.push_back(kept_[i].o);
      continue;
    }
    std::vector<ObjectiveVector> f;
    for (size_t i : front) f.push_back(*kept_[i].o->loss);
    for (size_t i : GreedyHypervolumeSubset(f, n - out.size(), OptunaReferencePoint(f))) {
      out.push_back(kept_[front[i]].o);
    }
    break;
  }
  return out;
}

ObjectiveVector OptunaReferencePoint(const std::vector<ObjectiveVector>& points) {
  ObjectiveVector ref = points.front();
  for (const ObjectiveVector& p : points) {
    for (size_t i = 0; i < ref.size(); ++i) ref[i] = std::max(ref[i], p[i]);
  }
  for (double& r : ref) r = r == 0 ? 1e-12 : std::max(1.1 * r, 0.9 * r);
  return ref;
}

}  // namespace ladder::search::internal
