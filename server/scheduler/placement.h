#pragma once
// Rack selection for multi-node groups: given how many usable nodes each rack has, decide how many to take
// from which racks. Pure functions over counts, so the same code places a group now, plans the EASY
// reservation of the queue's head (counts of nodes free by the shadow time) and plans preemptions (counts of
// nodes that would be free once lower-priority groups stop).
#include <utility>
#include <vector>

#include "server/scheduler/cluster.h"

namespace ladder::scheduler {

enum class PlacementPolicy {
  // Fewest racks and switches: one rack when any rack has room (best fit: the rack with the fewest usable
  // nodes that still holds the group, keeping emptier racks whole for bigger groups); else one switch, in the
  // fewest of its racks; else the fewest racks overall. Ties go to the lower index.
  kCompact,
  // Racks in index order, taking every usable node until the group is complete (the baseline).
  kFirstFit,
};

// Reusable scratch space, so that a decision allocates nothing in the steady state.
struct RackPlanScratch {
  std::vector<std::pair<int, int>> cand;  // (usable, rack)
  std::vector<std::pair<int, int>> best, tmp;
};

// `usable[r]`: usable nodes in rack r. Fills `out` with (rack, count) pairs summing to n; false (out empty)
// when the racks hold fewer than n usable nodes.
bool ChooseRacks(const Cluster& cluster, const std::vector<int>& usable, int n, PlacementPolicy policy,
                 std::vector<std::pair<int, int>>* out, RackPlanScratch* scratch);

}  // namespace ladder::scheduler
