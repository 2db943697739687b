#pragma once
// Cluster: the nodes a scheduler places node groups on, with their free capacity and topology indexes.
//
// A node has cores, slots (ranks it runs at once), GPUs and memory, string labels (topology: `rack`, `switch`)
// and a state. Only UP nodes take new groups; DRAINING nodes keep their groups but take no new ones; DOWN and
// QUARANTINED nodes take none (the scheduler reports the groups that were on a node when it went down).
//
// Every node gets a dense index when first added; the index is the node's "rank" in NodeGroup strings and
// stays the node's for the cluster's lifetime (a removed node that is added again gets it back).
//
// Topology: a rack is the set of nodes with the same `rack` label (nodes without one share the rack ""); a
// rack belongs to the switch named by the `switch` label of the first node added to it ("" when none).
//
// Indexes, all updated in O(log n) per node change, so that a placement decision never scans every node:
//   - per rack and per node class (nodes with identical resources), the set of idle UP nodes;
//   - per node class, counts of UP and idle nodes;
//   - one ordered set of partially used, shareable UP nodes keyed by (free GPUs, free slots), for best fit.
// Nodes can be marked `reserved` for the duration of one scheduling pass (the EASY reservation of the queue's
// head); counts can include or leave out reserved nodes.
//
// Not thread-safe: owned by one thread (the coordinator's loop, or a simulator).
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "server/scheduler/node_group.h"
#include "server/scheduler/status.h"

namespace ladder::scheduler {

enum class NodeState { kUp, kDraining, kDown, kQuarantined };
std::string_view NodeStateName(NodeState s);  // "up", "draining", "down", "quarantined"
std::optional<NodeState> ParseNodeState(std::string_view s);

inline constexpr char kRackLabel[] = "rack";
inline constexpr char kSwitchLabel[] = "switch";

struct NodeResources {
  int cores = 1;
  int slots = 1;               // ranks the node runs at once
  int gpus = 0;
  int64_t memory_bytes = 0;    // 0: unknown (only requests that ask for no memory fit)
  // The node's pool ("" the shared one): a node takes only requests of its pool, a request only nodes of its
  // pool — e.g. the nodes of a hero run's own Slurm job serve that hero run alone (the worker label `pool`).
  std::string pool;
  auto operator<=>(const NodeResources&) const = default;
};

struct NodeSpec {
  std::string id;                             // unique, non-empty (the worker's node id)
  NodeResources resources;
  std::map<std::string, std::string> labels;  // rack, switch, anything else
  NodeState state = NodeState::kUp;
};

// What a group needs on each of its nodes. An exclusive need takes the whole node (no other group may share
// it); a shared one leaves the rest of the node to other shared groups.
struct NodeNeed {
  int slots = 1;
  int gpus = 0;
  int cores = 0;
  int64_t memory_bytes = 0;
  bool exclusive = false;
  std::string pool;  // only nodes of this pool (NodeResources::pool)
};

class Cluster {
 public:
  // --- Nodes ----------------------------------------------------------------------------------------
  // Errors: InvalidArgument (empty id, resources < 0 or slots < 1), AlreadyExists.
  Status AddNode(NodeSpec spec);
  // Replaces resources and labels. A node that holds groups may only change labels that are not topology.
  // State is left as it is (use SetState). Errors: NotFound, InvalidArgument, FailedPrecondition.
  Status UpdateNode(const NodeSpec& spec);
  // Errors: NotFound; FailedPrecondition while groups hold the node.
  Status RemoveNode(std::string_view id);
  // Errors: NotFound.
  Status SetState(std::string_view id, NodeState state);

  std::optional<int> IndexOf(std::string_view id) const;
  int index_limit() const { return static_cast<int>(nodes_.size()); }  // indices are in [0, index_limit)
  bool present(int node) const { return node >= 0 && node < index_limit() && nodes_[node].present; }
  const NodeSpec& spec(int node) const { return nodes_[node].spec; }
  NodeState state(int node) const { return nodes_[node].spec.state; }
  int node_count() const { return present_count_; }
  int up_count() const { return up_count_; }

  // --- Topology -------------------------------------------------------------------------------------
  int rack_of(int node) const { return nodes_[node].rack; }
  int rack_count() const { return static_cast<int>(racks_.size()); }
  const std::string& rack_name(int rack) const { return racks_[rack].name; }
  int switch_count() const { return static_cast<int>(switches_.size()); }
  const std::vector<int>& racks_of_switch(int sw) const { return switches_[sw].racks; }
  int max_rack_size() const { return max_rack_size_; }
  // The fewest racks `nodes` nodes could ever span: ceil(nodes / max_rack_size).
  int IdealRacks(int nodes) const;

  // --- Capacity -------------------------------------------------------------------------------------
  // The node classes whose resources can hold `need` (exclusive or not).
  void EligibleClasses(const NodeNeed& need, std::vector<int>* out) const;
  int IdleInRack(int rack, const std::vector<int>& classes, bool include_reserved) const;
  int IdleTotal(const std::vector<int>& classes, bool include_reserved) const;
  int UpTotal(const std::vector<int>& classes) const;
  int class_of(int node) const { return nodes_[node].cls; }
  // Appends up to k idle nodes of `rack` and `classes` to out, lowest index first; unreserved nodes before
  // reserved ones (which are only taken with include_reserved).
  void IdleNodesInRack(int rack, const std::vector<int>& classes, int k, bool include_reserved,
                       std::vector<int>* out) const;
  // Best fit for a shared need among partially used UP nodes: the one with the fewest free GPUs (then slots)
  // that still fits; looks at no more than `max_probe` candidates. -1 when none.
  int FindPartialNode(const NodeNeed& need, bool include_reserved, int max_probe = 64) const;
  // Whether `need` fits the node's free capacity right now (state UP, not held exclusively).
  bool FitsNow(int node, const NodeNeed& need) const;
  bool idle(int node) const { return nodes_[node].trials.empty(); }
  // Whether any UP node has an idle or shareable part (reserved nodes included): a cheap early exit.
  bool AnyFree() const;
  int free_slots(int node) const { return nodes_[node].free_slots; }
  int free_gpus(int node) const { return nodes_[node].free_gpus; }

  // --- Allocation (called by the scheduler) ---------------------------------------------------------
  // Takes `need` on `node` for `trial`: the lowest free slot and GPU ids. The caller checked FitsNow.
  NodeSlice Take(int node, const NodeNeed& need, int64_t trial, int first_rank);
  // Takes exactly the slots/GPUs of `slice` (re-attaching a running group). FailedPrecondition when they are
  // not free or out of range.
  Status TakeExact(const NodeSlice& slice, const NodeNeed& need, int64_t trial);
  // Gives back what Take/TakeExact took.
  void Give(const NodeSlice& slice, const NodeNeed& need, int64_t trial);
  const std::vector<int64_t>& trials_on(int node) const { return nodes_[node].trials; }

  // --- Reservation marks (one scheduling pass) -----------------------------------------------------
  void SetReserved(int node, bool reserved);
  bool reserved(int node) const { return nodes_[node].reserved; }

 private:
  struct Node {
    NodeSpec spec;
    bool present = false;
    int rack = -1, cls = -1;
    int free_slots = 0, free_gpus = 0, free_cores = 0;
    int64_t free_memory = 0;
    std::vector<char> slot_used, gpu_used;
    std::vector<int64_t> trials;  // groups on this node
    bool exclusive = false;
    bool reserved = false;
    // Where the node is indexed now.
    bool in_idle = false;
    bool in_partial = false;
    std::tuple<int, int, int> partial_key{};
  };
  struct Rack {
    std::string name;
    std::vector<std::set<int>> idle;  // per class
    std::vector<int> reserved_idle;   // per class
    int size = 0;                     // present nodes
  };
  struct Switch {
    std::string name;
    std::vector<int> racks;
  };
  struct Class {
    NodeResources res;
    int up = 0, idle = 0, reserved_idle = 0;
  };

  Status Validate(const NodeSpec& spec) const;
  void Unindex(int n);
  void Index(int n);
  void CountUp(int n, int sign);
  void Place(int n);  // sets rack/class from the spec (creating them) and resets free capacity
  int RackFor(const NodeSpec& spec);
  int ClassFor(const NodeResources& res);

  std::vector<Node> nodes_;
  std::map<std::string, int, std::less<>> by_id_;
  std::vector<Rack> racks_;
  std::map<std::string, int, std::less<>> rack_by_name_;
  std::vector<Switch> switches_;
  std::map<std::string, int, std::less<>> switch_by_name_;
  std::vector<Class> classes_;
  std::set<std::tuple<int, int, int>> partial_;  // (free gpus, free slots, node)
  int present_count_ = 0, up_count_ = 0;
  int max_rack_size_ = 0;
  void ResizeRack(int rack, int delta);
};

}  // namespace ladder::scheduler
