#pragma once
// NodeGroupScheduler: gang allocation of node groups to trials, topology-aware, with EASY backfill,
// priority classes, preemption and aging. A pure library: no I/O, no threads, no clock of its own — every
// call that needs the time takes `now` (seconds on any monotonic scale the caller chooses; the coordinator
// passes its clock, a simulator its simulated time).
//
// Threading: not thread-safe; one owner (the coordinator's event loop) calls it synchronously.
//
// Lifecycle of a request (by trial id):
//
//   Submit ──► QUEUED ──Schedule(): Start decision──► RUNNING ──Finish()──► (gone)
//                ▲  │                                  │  │
//                │  └──Cancel()──► (gone)              │  └─Schedule(): Preempt decision──► PREEMPTING
//                └────────────Requeue()────────────────┴──────────────────────────────────────────┘
//
// - Gang allocation: a Start decision carries the whole group (every node, slot and GPU) or nothing.
// - Groups of 2+ nodes take whole nodes (exclusive, as on an HPC machine); 1-node groups share nodes, best fit.
// - Placement: PlacementPolicy (placement.h); compact by default.
// - Queue order: effective priority class (hero > promoted > search), then submit time. A search request that
//   waited `aging_interval_s` moves up to the promoted class (aging; it still preempts nobody).
// - EASY backfill: the first request that does not fit (the head) gets a reservation: the earliest time T at
//   which enough nodes are free, assuming running groups end at their expected end (start + estimated
//   duration, or + default_duration_s when the request had none), and the set of nodes it will take then.
//   Later requests start now only if they leave the reserved nodes alone, or if their own estimate ends before
//   T. So backfill never delays the head when estimates are upper bounds; the head itself is never skipped
//   over by something that would delay it, and runs once its reservation comes due (no starvation).
// - Preemption: when the head's class is above some running groups' class and it does not fit, the scheduler
//   plans it compactly over idle nodes plus nodes held only by lower-class preemptible groups (in each rack:
//   idle nodes first, then nodes already being freed, then those whose groups have the lowest class and
//   started last: the least work lost), and returns a Preempt decision for every group on the nodes it needs.
//   The caller stops them through their checkpoint and calls Requeue() once they are stopped; they keep
//   their nodes until then (PREEMPTING; no further victims are chosen while enough nodes are on their way),
//   and go back to the queue with their original submit time, to resume later.
// - Node failure: SetNodeState(down/quarantined) returns the groups on that node; the caller stops the rest
//   of each group and calls Requeue() (retry) or Finish() (give up). Draining nodes finish their groups and
//   take no new ones.
// - Restart: Attach() re-attaches a group that kept running while the coordinator was down.
// - Cost: placing a group is O(racks) plus O(log n) per node taken (cluster.h's indexes; no scan of every
//   node). The reservation walks running groups in expected-end order only as far as it needs. Backfill
//   visits queued requests by shape (nodes and per-node need): once a shape fails, every queued request that
//   needs as much or more is skipped without being looked at, so a pass costs O(shapes + starts), not
//   O(queue). Preemption scans the running groups, only when the head outranks some of them.
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <string>
#include <unordered_map>
#include <vector>

#include "server/scheduler/cluster.h"
#include "server/scheduler/node_group.h"
#include "server/scheduler/placement.h"
#include "server/scheduler/status.h"

namespace ladder::scheduler {

enum class Priority { kSearch = 0, kPromoted = 1, kHero = 2 };
std::string_view PriorityName(Priority p);  // "search", "promoted", "hero"

struct GroupRequest {
  int64_t trial_id = 0;         // unique among queued and running requests
  int nodes = 1;
  int ranks_per_node = 1;       // slots taken on each node
  int gpus_per_rank = 0;
  int cores_per_node = 0;       // 0: no requirement beyond slots
  int64_t memory_per_node = 0;  // bytes; 0: no requirement
  Priority priority = Priority::kSearch;
  std::optional<double> estimated_duration_s;  // an upper bound; none: SchedulerOptions::default_duration_s
  bool preemptible = true;      // can be stopped through a checkpoint and resumed
  std::string pool;             // runs only on nodes of this pool ("": the shared nodes)

  NodeNeed need() const;  // per node; exclusive when nodes >= 2
};

inline constexpr double kDefaultDurationS = 24 * 3600.0;   // conservative: a day, like a batch walltime
inline constexpr double kDefaultAgingIntervalS = 6 * 3600.0;
inline constexpr double kDefaultPreemptionGraceS = 300.0;  // time a checkpoint-and-stop is expected to take
inline constexpr int kDefaultBackfillDepth = 1000;         // queued requests looked at per pass after the head

struct SchedulerOptions {
  PlacementPolicy placement = PlacementPolicy::kCompact;
  bool backfill = true;        // false: strict FIFO within the queue order (stop at the first that waits)
  bool preemption = true;
  double default_duration_s = kDefaultDurationS;
  double aging_interval_s = kDefaultAgingIntervalS;  // <= 0: no aging
  double preemption_grace_s = kDefaultPreemptionGraceS;
  int backfill_depth = kDefaultBackfillDepth;
};

struct Decision {
  enum class Kind { kStart, kPreempt };
  Kind kind = Kind::kStart;
  int64_t trial_id = 0;
  NodeGroup group;          // kStart: where to run; kPreempt: what the victim holds
  int64_t for_trial_id = 0;  // kPreempt: the request that needs the nodes
};

// The head's reservation from the last Schedule() pass (for dashboards and tests).
struct Reservation {
  int64_t trial_id = 0;
  double start = 0;          // the shadow time T
  std::vector<int> nodes;    // sorted node indices
};

struct SchedulerCounters {
  int64_t started = 0, backfilled = 0, preempted = 0, passes = 0;
  int64_t examined = 0;  // queued requests looked at, over all passes
};

class NodeGroupScheduler {
 public:
  explicit NodeGroupScheduler(SchedulerOptions options = {});

  // --- Cluster ----------------------------------------------------------------------------------------
  const Cluster& cluster() const { return cluster_; }
  Status AddNode(NodeSpec spec) { return cluster_.AddNode(std::move(spec)); }
  Status UpdateNode(const NodeSpec& spec) { return cluster_.UpdateNode(spec); }
  Status RemoveNode(std::string_view id) { return cluster_.RemoveNode(id); }
  // Down/quarantined: `affected` (if given) receives the trials running on the node, marked failed; the
  // caller Requeue()s or Finish()es each. Draining/up: nothing is affected.
  Status SetNodeState(std::string_view id, NodeState state, std::vector<int64_t>* affected = nullptr);

  // --- Requests ---------------------------------------------------------------------------------------
  // Errors: InvalidArgument (sizes < 1, gpus < 0, estimate <= 0), AlreadyExists (trial id queued or running).
  // A request that no set of UP nodes could ever hold stays queued (nodes may join later) but never blocks
  // the queue; Feasible() tells the caller, who may prefer to fail it.
  Status Submit(const GroupRequest& request, double now);
  Status Feasible(const GroupRequest& request) const;
  // Removes a queued request. NotFound if it is not queued.
  Status Cancel(int64_t trial_id);
  // A running (or preempting, or failed) group ended: its resources are free. NotFound if not running.
  Status Finish(int64_t trial_id);
  // A running group stopped and should run again later (preempted, node lost): frees its resources and puts
  // the request back in the queue with its original submit time (so it keeps its place); `remaining_estimate_s`
  // replaces the estimate (a preempted trial resumes from its checkpoint). NotFound if not running.
  Status Requeue(int64_t trial_id, std::optional<double> remaining_estimate_s = std::nullopt);
  // Replaces a running group's estimate: its expected end becomes start + estimated_duration_s (e.g. when
  // an early-stopping rung lets the trial go on). A longer estimate can delay the head's reservation; the
  // guarantee that backfill never delays the head holds for estimates that are never raised.
  // Errors: NotFound (not running), InvalidArgument (estimate <= 0).
  Status UpdateEstimate(int64_t trial_id, double estimated_duration_s);
  // Re-attaches a group that is already running (after a coordinator restart): takes exactly its slots and
  // GPUs. Errors: AlreadyExists, InvalidArgument (shape mismatch), NotFound/FailedPrecondition (resources).
  Status Attach(const GroupRequest& request, const NodeGroup& group, double started);

  // One scheduling pass: Start and Preempt decisions, already applied to the scheduler's state (started
  // groups are RUNNING, victims PREEMPTING). Call after anything changed (submit, finish, requeue, node
  // state, estimate), and now and then (a timer) so that aging moves waiting requests up.
  // At most max_starts Start decisions: the pass stops where it is (in queue order, before the head's
  // reservation and backfill when it stops early), and the next pass goes on from there.
  std::vector<Decision> Schedule(double now, size_t max_starts = std::numeric_limits<size_t>::max());

  // --- Queries ----------------------------------------------------------------------------------------
  size_t queued() const { return queued_.size(); }
  size_t running() const { return running_.size(); }
  bool IsQueued(int64_t trial_id) const { return queued_.count(trial_id) > 0; }
  // The group a running trial holds, or nullptr.
  const NodeGroup* GroupOf(int64_t trial_id) const;
  bool IsPreempting(int64_t trial_id) const;
  const std::optional<Reservation>& reservation() const { return reservation_; }
  const SchedulerCounters& counters() const { return counters_; }
  // Racks a group spans.
  int RacksSpanned(const NodeGroup& group) const;

 private:
  enum class RunState { kRunning, kPreempting, kFailed };
  struct QueueKey {
    int neg_class;  // -effective class: higher classes first
    double submit;
    uint64_t seq;
    int64_t trial;     // unique: the fields below never decide the order
    double duration;   // the request's estimate (or the default)
    auto operator<=>(const QueueKey&) const = default;
  };
  // What failed to place in this pass; anything needing as much or more fails too.
  struct Shape {
    int nodes;
    NodeNeed need;
    bool Dominates(int r_nodes, const NodeNeed& n) const;
  };
  // Queued requests of one shape (nodes and per-node need), in queue order: a backfill pass visits shapes,
  // not requests, so requests that cannot fit cost nothing once one of their shape failed.
  struct Bucket {
    Shape shape;
    std::set<QueueKey> keys;
    std::multiset<double> durations;
    // Pass-local: the next request to consider, and what the bucket may still use.
    std::set<QueueKey>::const_iterator cur;
    enum class Mode { kAny, kReservedOnly, kDone } mode = Mode::kDone;
  };
  struct Queued {
    GroupRequest req;
    int bucket;
  };
  struct Running {
    GroupRequest req;
    NodeGroup group;
    double start = 0, end = 0;  // end: expected
    double submit = 0;
    uint64_t seq = 0;
    RunState state = RunState::kRunning;
  };
  Status Validate(const GroupRequest& r) const;
  void Enqueue(const GroupRequest& r, double submit, uint64_t seq);
  void Dequeue(const QueueKey& key);
  int BucketFor(const GroupRequest& r);
  // The backfill part of a pass, after the head (`head`) got its reservation ending at `shadow`.
  void Backfill(const QueueKey& head, double now, double shadow, std::vector<Decision>* out);
  // Marks buckets dominated by a shape that failed (reserved: with reserved nodes too).
  void MarkFailed(const Shape& failed, bool reserved, double limit);
  void Age(double now);
  // Places `r` now if it fits (reserved nodes only with include_reserved); on success the group is RUNNING.
  bool TryStart(const GroupRequest& r, double now, bool include_reserved, double submit, uint64_t seq,
                std::vector<Decision>* out);
  bool PlanNodes(const GroupRequest& r, const NodeNeed& need, bool include_reserved, std::vector<int>* nodes);
  void StartOn(const GroupRequest& r, const NodeNeed& need, const std::vector<int>& nodes, double now,
               double submit, uint64_t seq, std::vector<Decision>* out);
  void Reserve(const GroupRequest& head, double now);
  void ClearReservationMarks();
  void MaybePreempt(const GroupRequest& head, double now, std::vector<Decision>* out);
  // The running trials to stop so that the racks of plan_ get their nodes, `coming` (nodes that preemptions under
  // way free) counted as free; sorted, unique.
  std::vector<int64_t> ChooseVictims(const std::vector<int>& coming);
  void SetEnd(int64_t trial, Running& g, double end);
  void Release(int64_t trial, Running& g);
  double Duration(const GroupRequest& r) const;
  int SpannedRacks(const std::vector<int>& nodes) const;

  SchedulerOptions opt_;
  Cluster cluster_;
  std::map<QueueKey, Queued> queue_;             // in scheduling order
  std::unordered_map<int64_t, QueueKey> queued_;  // trial -> its key
  std::vector<Bucket> buckets_;
  std::map<std::tuple<int, int, int, int, int64_t, std::string>, int> bucket_by_shape_;
  std::unordered_map<int64_t, Running> running_;
  std::set<std::pair<double, int64_t>> by_end_;  // (expected end, trial) of running groups
  std::set<int64_t> preempting_;                 // running groups in PREEMPTING
  int running_by_class_[3] = {0, 0, 0};
  uint64_t next_seq_ = 0;
  size_t starts_left_ = 0;  // in the pass under way (Schedule's max_starts)
  std::optional<Reservation> reservation_;
  std::vector<int> reserved_marks_;
  SchedulerCounters counters_;

  // Reserve and MaybePreempt count capacity that running groups free up: this fills classes_ (node classes that
  // fit `head`), usable_ (idle eligible nodes per rack) and a fresh stamp, and returns the idle eligible total.
  int BeginCapacityScan(const GroupRequest& head);
  bool EligibleForScan(int node) const;  // up, present, and of a class in classes_

  // Scratch, reused across passes.
  std::vector<int> classes_, usable_, nodes_, stamp_, remaining_, freed_;
  std::vector<std::pair<int, int>> plan_;
  RackPlanScratch scratch_;
  int stamp_now_ = 0;
};

}  // namespace ladder::scheduler
