#include "server/scheduler/placement.h"

#include <algorithm>

namespace ladder::scheduler {
namespace {

// Fewest racks among `cand` ((usable, rack) pairs, modified): take the fullest racks while none alone holds
// the rest, then the smallest rack that does. Returns the number of racks used, or -1.
int FewestRacks(std::vector<std::pair<int, int>>& cand, int n, std::vector<std::pair<int, int>>* out) {
  out->clear();
  // Descending by usable, then ascending rack index.
  std::sort(cand.begin(), cand.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  int remaining = n;
  size_t i = 0;
  while (remaining > 0 && i < cand.size()) {
    // The smallest remaining rack that holds all of `remaining` (cand is sorted descending from i).
    size_t fit = cand.size();
    for (size_t j = i; j < cand.size() && cand[j].first >= remaining; ++j) fit = j;
    if (fit != cand.size()) {
      // Among equal counts prefer the lowest index: walk back to the first of that count.
      size_t k = fit;
      while (k > i && cand[k - 1].first == cand[fit].first) --k;
      out->push_back({cand[k].second, remaining});
      return static_cast<int>(out->size());
    }
    if (cand[i].first <= 0) break;
    out->push_back({cand[i].second, cand[i].first});
    remaining -= cand[i].first;
    ++i;
  }
  out->clear();
  return -1;
}

}  // namespace

bool ChooseRacks(const Cluster& cluster, const std::vector<int>& usable, int n, PlacementPolicy policy,
                 std::vector<std::pair<int, int>>* out, RackPlanScratch* s) {
  out->clear();
  if (n <= 0) return true;
  const int racks = static_cast<int>(usable.size());
  if (policy == PlacementPolicy::kFirstFit) {
    int remaining = n;
    for (int r = 0; r < racks && remaining > 0; ++r) {
      int take = std::min(usable[r], remaining);
      if (take > 0) out->push_back({r, take}), remaining -= take;
    }
    if (remaining > 0) out->clear();
    return remaining == 0;
  }
  // One rack, best fit.
  int best_rack = -1;
  for (int r = 0; r < racks; ++r) {
    if (usable[r] >= n && (best_rack < 0 || usable[r] < usable[best_rack])) best_rack = r;
  }
  if (best_rack >= 0) {
    out->push_back({best_rack, n});
    return true;
  }
  // One switch, fewest racks (then the switch with the fewest usable nodes: best fit).
  int best_count = -1, best_total = 0;
  for (int sw = 0; sw < cluster.switch_count(); ++sw) {
    const auto& sr = cluster.racks_of_switch(sw);
    int total = 0;
    for (int r : sr) total += r < racks ? usable[r] : 0;
    if (total < n) continue;
    s->cand.clear();
    for (int r : sr) {
      if (r < racks && usable[r] > 0) s->cand.push_back({usable[r], r});
    }
    int count = FewestRacks(s->cand, n, &s->tmp);
    if (count > 0 && (best_count < 0 || count < best_count || (count == best_count && total < best_total))) {
      best_count = count, best_total = total;
      s->best.swap(s->tmp);
    }
  }
  if (best_count > 0) {
    *out = s->best;
    return true;
  }
  // Anywhere, fewest racks.
  s->cand.clear();
  for (int r = 0; r < racks; ++r) {
    if (usable[r] > 0) s->cand.push_back({usable[r], r});
  }
  return FewestRacks(s->cand, n, out) > 0;
}

}  // namespace ladder::scheduler
