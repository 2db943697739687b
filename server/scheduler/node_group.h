#pragma once
// NodeGroup: the resources one trial holds, as compact id-sets in the style of Flux's R_lite (RFC 20).
//
// A group is one NodeSlice per node, in rank order: the node's index in the Cluster (its "rank" in R_lite
// terms, stable for the node's lifetime), the slot ids and GPU ids it uses there, and the global rank of its
// first local rank. ToString() merges nodes that use the same slots/GPUs:
//
//   n[3-6]:gpu[0-5]              four nodes, GPUs 0-5 on each
//   n7:gpu[0-1] n[8,10]:gpu0     different GPU sets per node
//   n2:slot[0-3]                 a CPU-only group shows its slots instead
//
// The same value serves allocation (the scheduler's Start decision) and release (Finish/Requeue take the
// trial id; the scheduler keeps the group).
#include <string>
#include <vector>

namespace ladder::scheduler {

struct NodeSlice {
  int node = -1;             // Cluster node index
  std::vector<int> slots;    // slot ids on that node, one per local rank
  std::vector<int> gpus;     // GPU ids on that node (ranks_per_node x gpus_per_rank of them)
  int first_rank = 0;        // global rank of the first local rank

  bool operator==(const NodeSlice&) const = default;
};

struct NodeGroup {
  std::vector<NodeSlice> slices;

  int size() const { return static_cast<int>(slices.size()); }
  bool empty() const { return slices.empty(); }
  std::vector<int> nodes() const;  // node indices in rank order
  std::string ToString() const;
  bool operator==(const NodeGroup&) const = default;
};

// "3" or "[3-6]" / "[0-2,5]": an id-set with brackets when it holds more than one id; "" when empty.
std::string BracketIdSet(const std::vector<int>& ids);

}  // namespace ladder::scheduler
