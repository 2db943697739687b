#pragma once
// NodeManager: the cluster's nodes as the coordinator sees them — one per worker that ever registered.
//
// Owns: each node's WorkerInfo (state, resources, worker epoch, busy slots, why it is down), its stream and lease,
// its recent failures and quarantine, which trials have a live run on it, and the node side of the scheduler's
// cluster (nodes added, updated, up / draining / down).
// Does not touch trials: what a re-registering worker reports running, and the trials of a node that is lost, go
// to its Listener (the TrialManager), which calls back only AddRun / RemoveRun / Link / UpdateBusy.
//
// Node states (v1::WorkerState):
//
//   (registers) ──► UP ──stream ends, lease expires──► DOWN ──registers again──► UP
//                   │ └──its worker is stopping (an exit says so)──► DRAINING (keeps its trials, gets no new ones)
//                   └──quarantine_after failures within quarantine_window──► QUARANTINED ──ladder nodes release──► UP
//
// A failure is a node lost while it ran trials. QUARANTINED outlives a stream and a coordinator restart; a
// quarantined node with a stream keeps its running trials and gets no new ones (the scheduler drains it).
// Fencing: every registration gets a new worker epoch, and a newer stream of a node closes the older one.
// Thread: the coordinator's loop.
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <grpcpp/support/status.h>

#include "ladder/v1/ladder.pb.h"
#include "server/coordinator_options.h"
#include "server/event_hub.h"
#include "server/scheduler/scheduler.h"
#include "server/store/store.h"
#include "server/worker_link.h"

namespace ladder::server {

// How a node's runs were lost: by a fault (its stream or lease ended, its worker came back without them: a failure
// of the node, and each trial uses up an attempt), or because its worker's token ended (revoked, expired: neither
// the node's fault nor the trials'; they wait for another node with their attempt, as after a preemption).
// Why a node's stream ended: a fault (a failure is counted, its runs are lost), its token's end, or its worker's
// announced shutdown (neither counts a failure; the trials in its group wait for another node, attempt unchanged).
enum class NodeLoss { kFault, kTokenEnded, kWorkerStopped };

class NodeManager {
 public:
  class Listener {
   public:
    virtual ~Listener() = default;
    // A re-registering worker reports a run it still has. True: the trial is re-attached there (the listener has
    // called AddRun); false: the run is not the coordinator's, and the worker is told to stop it.
    virtual bool Reattach(const std::string& node, const std::shared_ptr<WorkerLink>& link,
                          const v1::RunningTrial& run) = 0;
    // These trials lost their run on `node` (the node is down, its worker came back without them, or the
    // scheduler took the node from them).
    virtual void RunsLost(const std::string& node, const std::set<int64_t>& trials, const std::string& reason,
                          NodeLoss loss) = 0;
    // A worker registered reporting exactly these runs: a run the coordinator placed on `node` before a restart
    // and still waits to hear from there is not coming back.
    virtual void RegisteredWithout(const std::string& node, const std::set<int64_t>& reported) = 0;
  };

  NodeManager(store::Store& store, scheduler::NodeGroupScheduler& sched, EventHub& hub,
              const CoordinatorOptions& options, std::function<void()> request_schedule);
  void set_listener(Listener* listener) { listener_ = listener; }

  // Every node stored before joins the cluster down (quarantined ones stay quarantined) until its worker
  // registers again, so that running groups can be re-attached where they are.
  void Load();

  // --- a worker's stream ------------------------------------------------------------------------------------
  // A worker registers on `link`: fences an older stream of the node, gives it a new epoch and a lease, hands the
  // runs it reports to the listener, answers `registered` (with the runs to cancel), and puts the node up.
  // Admission: past registrations_per_second (a bucket of one second's worth), a worker that reports no running
  // trial is answered RetryRegistration with a slot of its own (each refused one a period after the last) and its
  // stream is closed RESOURCE_EXHAUSTED.
  void Register(const std::shared_ptr<WorkerLink>& link, const v1::RegisterWorker& reg);
  // The node a registered stream belongs to; nullopt for an unknown or replaced stream.
  std::optional<std::string> NodeOf(const std::shared_ptr<WorkerLink>& link) const;
  // The heartbeat interval workers are told now, and the lease that goes with it (heartbeat_timeout in the same
  // ratio): both grow with the fleet — the interval doubles, and every connected worker is told (v1::HeartbeatInterval),
  // whenever connected workers / heartbeats_per_second reaches twice it — so the heartbeats the coordinator receives
  // per second stay under heartbeats_per_second, as slurmctld spaces its node pings. They never shrink back.
  std::chrono::milliseconds heartbeat_interval() const { return interval_; }
  std::chrono::milliseconds lease() const { return lease_; }
  // Any message on the node's stream renews its lease.
  void Renew(const std::string& node);
  // The stream ended: the node is down (when it was this node's current stream).
  void Disconnected(const std::shared_ptr<WorkerLink>& link, const std::string& reason);
  // The token the stream was opened with ended: the stream is closed with `status` (UNAUTHENTICATED, the token's
  // refusal) and its node is down (NodeLoss::kTokenEnded: no failure is counted, its trials keep their attempt).
  void TokenEnded(const std::shared_ptr<WorkerLink>& link, const grpc::Status& status);
  // Nodes whose lease expired: their stream is closed and they are down. A lease is judged on the coordinator's
  // own time: after LoopWasLate, no lease expires before a whole heartbeat timeout of an on-time loop has passed.
  void CheckLeases(Clock::time_point now);
  // The coordinator's loop ran `late` behind (a stopped process, a long handler, a backlog): the workers' messages
  // waited as long, so every lease is given until now + heartbeat_timeout. Returns true when that extended any.
  bool LoopWasLate(Clock::time_point now, Clock::duration late);
  // The node's worker is shutting down: it drains (no new trials) until its stream ends.
  void Drain(const std::string& node, const std::string& reason);
  // The node's worker said it is shutting down (WorkerStopping): it drains, and its stream's end is
  // NodeLoss::kWorkerStopped, until it registers again.
  void Stopping(const std::string& node, const std::string& reason);
  // ladder nodes release: lifts a quarantine.
  grpc::Status Release(const std::string& node, v1::WorkerInfo* out);

  // --- pools (a hero run's own Slurm job: its workers carry the label pool=NAME) ------------------------------
  // Whether a running search still needs the nodes of a pool; a pool worker that registers when none does is
  // released at once (its search ended before its job started).
  void set_pool_in_use(std::function<bool(const std::string& pool)> in_use) { pool_in_use_ = std::move(in_use); }
  // Tells every connected worker of `pool` to stop (v1::Release): nothing will run there any more.
  void ReleasePool(const std::string& pool, const std::string& reason);

  // --- what the trials ask -----------------------------------------------------------------------------------
  void AddRun(const std::string& node, int64_t trial_id);
  void RemoveRun(const std::string& node, int64_t trial_id);
  // The node's stream; null when it has none (down) or is unknown.
  std::shared_ptr<WorkerLink> Link(const std::string& node) const;
  // The host name the worker reported, and the address its peers reach it at (its --address, else hostname).
  std::string Hostname(const std::string& node) const;
  std::optional<std::string> Address(const std::string& node) const;
  // Refreshes the node's busy slots from the scheduler (watchers hear when they changed).
  void UpdateBusy(const std::string& node);

  // --- reads ---------------------------------------------------------------------------------------------------
  std::vector<v1::WorkerInfo> Infos() const;

 private:
  struct Node {
    v1::WorkerInfo info;
    std::shared_ptr<WorkerLink> link;
    Clock::time_point lease_deadline;
    std::set<int64_t> trials;                 // trials with a live run on this node
    std::vector<Clock::time_point> failures;  // inside the quarantine window
    bool stopping = false;                    // its worker announced its shutdown (WorkerStopping)
  };
  // Registration's first half: the node takes this stream; returns the trials it had runs of before.
  std::optional<std::set<int64_t>> Connect(const std::shared_ptr<WorkerLink>& link, const v1::RegisterWorker& reg,
                                           std::string* node);
  // Tells the scheduler the node's state (up, draining when quarantined or stopping, down without a stream);
  // returns the trials that lost a node.
  std::vector<int64_t> SyncNode(Node& n);
  void MarkDown(Node& n, const std::string& reason, NodeLoss loss = NodeLoss::kFault);
  // Counts a failure of the node; quarantines it at quarantine_after failures inside the window.
  void RecordFailure(Node& n, const std::string& reason);
  // Admission of a registration (see Register): true to go on; false when the worker was told to retry.
  bool Admit(const std::shared_ptr<WorkerLink>& link, const v1::RegisterWorker& reg);
  // Lengthens the heartbeat interval (and the lease) when the connected fleet has grown past what it allows, and
  // tells every connected worker but `registering` (whose Registered carries it).
  void ScaleHeartbeats(const WorkerLink* registering);

  store::Store& store_;
  scheduler::NodeGroupScheduler& sched_;
  EventHub& hub_;
  const CoordinatorOptions& opt_;
  std::function<void()> request_schedule_;
  Listener* listener_ = nullptr;
  std::function<bool(const std::string&)> pool_in_use_;
  std::map<std::string, Node> nodes_;                     // by node id
  std::map<const WorkerLink*, std::string> link_nodes_;  // registered streams → node id
  int64_t next_worker_epoch_ = 1;
  Clock::time_point stall_grace_until_{};  // no lease expires before this (LoopWasLate)
  std::chrono::milliseconds interval_;      // told to workers (Registered, HeartbeatInterval)
  std::chrono::milliseconds lease_;         // heartbeat_timeout x interval_ / heartbeat_interval
  double admit_tokens_ = 0;                 // registrations the bucket admits now (at most one second's worth)
  Clock::time_point admit_at_{};            // when admit_tokens_ was counted
  Clock::time_point next_retry_slot_{};     // the last slot given to a refused registration
  int64_t refused_ = 0, refused_logged_ = 0;
  Clock::time_point refused_log_at_{};      // refusals are logged once a second, summed
};

}  // namespace ladder::server
