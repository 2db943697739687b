#include "search/samplers/completed_trials.h"

#include <algorithm>

namespace ladder::search::internal {
namespace {

bool NumberBefore(const Observation* o, int64_t n) { return o->number < n; }

}  // namespace

void CompletedTrials::Add(const Observation* o) {
  if (by_number_.empty() || by_number_.back()->number < o->number) {
    by_number_.push_back(o);  // told in order: the common case
  } else {
    by_number_.insert(by_number_.begin() + static_cast<long>(LowerBound(o->number)), o);
  }
  by_loss_.insert(ByLoss(o));
}

void CompletedTrials::Remove(const Observation* o) {
  auto it = by_number_.begin() + static_cast<long>(LowerBound(o->number));
  if (it == by_number_.end() || (*it)->number != o->number) return;
  by_number_.erase(it);
  by_loss_.erase(ByLoss(o));
}

std::vector<const Observation*> CompletedTrials::Best(size_t k) const {
  std::vector<const Observation*> best;
  for (auto it = by_loss_.begin(); it != by_loss_.end() && best.size() < k; ++it) best.push_back(it->o);
  return best;
}

size_t CompletedTrials::LowerBound(int64_t n) const {
  return static_cast<size_t>(std::lower_bound(by_number_.begin(), by_number_.end(), n, NumberBefore) -
                             by_number_.begin());
}

}  // namespace ladder::search::internal
