#pragma once
// Coordinator: the state of ladder-server — searches, trials, workers — owned by ONE event loop.
//
// Threading: every public method must run on `loop` (the gRPC adapters post onto it). Nothing here blocks
// except SQLite writes, which are batched (store.h).
//
// Trial lifecycle (proto TrialState):
//
//   PENDING ──Schedule(): the scheduler starts its node group──► RUNNING ──every node exit 0 + objective──► COMPLETED
//      ▲                                                           │ ├──a rank fails, launch error, no objective──► FAILED
//      ├──worker lost, attempt < max_retries───────────────────────┤ └──search cancelled──► CANCELLED
//      └──preempted by a higher priority (stopped, resumes from its checkpoint)──┘
//
// Node groups: every trial is a request to `scheduler::NodeGroupScheduler` (server/scheduler/): nodes x
// ranks_per_node x gpus_per_rank, gang-allocated, compact in racks, EASY backfill, priority classes (the
// search's Priority) with preemption. Workers are the scheduler's nodes (registration adds/updates them, a lost
// stream marks them down; quarantined nodes with a stream are draining: they keep their trials, get no new
// ones). A trial has one member per node of its group. Launch per node: each member's worker starts its local
// ranks with RANK/WORLD_SIZE/LOCAL_RANK/MASTER_ADDR (rank 0's node address)/MASTER_PORT; launch by mpirun: the
// first member's worker runs `mpirun --host a:R,b:R ...`, the other members hold their slots. Only global rank
// 0's member reports metrics. When one member fails or its node is lost, the other members are stopped; the
// group's resources go back to the scheduler only when every member has stopped (or its node is down), so a
// new trial never shares a node with processes of an old one.
//
// Every assignment carries a fresh, monotonically increasing assignment epoch. Messages about a trial that
// carry a stale epoch (a worker that lost its lease and came back) are ignored and the worker is told to stop
// that run: fencing.
//
// Workers: a worker is UP while its lease (renewed by every message on its stream) is valid. When the stream
// ends or the lease expires, the worker is DOWN and its trials are requeued (or failed when out of retries);
// a requeued attempt gets the same checkpoint directory (LADDER_CHECKPOINT_DIR, {checkpoint_dir}), so a trial
// that checkpoints resumes from its last checkpoint. A node that fails `quarantine_after` times within
// `quarantine_window` (lost while running trials, or unable to launch one) is QUARANTINED: it keeps its
// stream and re-attached trials but gets no new ones, also after a coordinator restart.
// After a coordinator restart, trials that were RUNNING stay RUNNING for one lease period so that their
// workers can re-register and re-attach them; unclaimed ones are then requeued.
//
// Durability of worker reports: metric points carry a per-run sequence number; the coordinator stores each
// once and, after the batch that holds them is committed, acknowledges them (Acknowledged: durable_seq, and
// exit_durable for TrialExited). Workers keep and resend what is unacknowledged, so a crash of the coordinator
// loses nothing it acknowledged. A worker stream is read one message at a time, each read started only after
// the loop has handled the previous message: a fast worker is slowed down by gRPC flow control instead of
// filling an unbounded queue here.
//
// Watchdog: a running trial whose search sets trial.progress_timeout and that reports no metric point for
// that long is stopped (CancelTrial) and FAILED with an error naming the field.
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <array>
#include <chrono>
#include <functional>
#include <optional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <grpcpp/support/status.h>

#include "ladder/v1/ladder.pb.h"
#include "search/sampler.h"
#include "search/trial_scheduler.h"
#include "search/spec.h"
#include "server/scheduler/scheduler.h"
#include "server/commit_outbox.h"
#include "server/coordinator_options.h"
#include "server/event_hub.h"
#include "server/store/store.h"
#include "server/worker_link.h"

namespace ladder::server {

namespace v1 = ::ladder::v1;

class Coordinator {
 public:
  Coordinator(boost::asio::io_context& loop, store::Store& store, CoordinatorOptions options = {});
  ~Coordinator();

  // Loads state from the store and starts the timers.
  void Start();
  // Cancels the timers and flushes the store; workers' streams are closed by the gRPC server.
  void Stop();
  // The database failed (a store write or commit threw SqliteError): drops the open batch and stops acting —
  // nothing more is acknowledged, sent or committed — and calls options.on_fatal. Idempotent.
  void Fatal(const std::string& what);
  bool failed() const { return outbox_.failed(); }

  // --- Ladder service -------------------------------------------------------------------------------
  grpc::Status CreateSearch(const v1::CreateSearchRequest& req, v1::CreateSearchResponse* resp);
  grpc::Status ListSearches(const v1::ListSearchesRequest& req, v1::ListSearchesResponse* resp);
  grpc::Status GetSearch(const v1::GetSearchRequest& req, v1::GetSearchResponse* resp);
  grpc::Status CancelSearch(const v1::CancelSearchRequest& req, v1::CancelSearchResponse* resp);
  grpc::Status ListTrials(const v1::ListTrialsRequest& req, v1::ListTrialsResponse* resp);
  grpc::Status GetTrial(const v1::GetTrialRequest& req, v1::GetTrialResponse* resp);
  grpc::Status ServerInfo(const v1::ServerInfoRequest& req, v1::ServerInfoResponse* resp);
  grpc::Status ReleaseNode(const v1::ReleaseNodeRequest& req, v1::ReleaseNodeResponse* resp);

  // Watch: sends the snapshot to `sink` at once, then every later event. Returns an id for RemoveWatcher.
  int64_t AddWatcher(int64_t search_id, EventSink sink);
  void RemoveWatcher(int64_t id);

  // --- Worker service ------------------------------------------------------------------------------
  void OnWorkerMessage(const std::shared_ptr<WorkerLink>& link, const v1::WorkerMessage& msg);
  void OnWorkerGone(const std::shared_ptr<WorkerLink>& link, const std::string& reason);

 private:
  struct SearchRt {
    v1::Search proto;
    search::SearchSpec spec;
    std::unique_ptr<search::Sampler> sampler;
    std::unique_ptr<search::TrialScheduler> trial_sched;  // the spec's `scheduler:`; null for none
    int next_number = 0;     // trials created so far
    bool exhausted = false;  // the sampler has no more configurations
    std::vector<int64_t> trial_ids;      // in creation order
    std::set<int64_t> pending, running;  // by trial id (pending in requeue order = id order)
    int completed = 0, failed = 0, cancelled = 0;
    bool infeasible_logged = false;      // warned once that no set of nodes can hold its group now
    // A hero run's predicted validation-loss band (plan_json "loss_band": step, lo, hi), ascending steps.
    std::vector<std::array<double, 3>> band;
    bool stop_outside_band = false;
  };
  // One node of a trial's assignment.
  struct Member {
    std::string node_id;
    int64_t epoch = 0;         // the assignment it belongs to
    std::vector<int> slots, gpus;
    int first_rank = 0;
    bool live = false;         // a process runs (or may run) there: its exit is awaited
    bool attached = true;      // false after a restart until its worker re-registers with it
  };
  // Where the scheduler has the trial.
  enum class Sched { kNone, kQueued, kRunning };
  struct TrialRt {
    v1::Trial proto;
    search::Params params;
    int64_t epoch = 0;        // current assignment epoch (0: none)
    // The nodes of the current assignment, or of the last one while its processes stop. Cleared when every
    // member has stopped and the group went back to the scheduler.
    std::vector<Member> members;
    Sched sched = Sched::kNone;
    bool preempting = false;  // told to stop for a higher-priority trial; PENDING again once stopped
    std::string early_stop;   // the trial scheduler stopped it (why): it COMPLETES with its value once stopped
    std::optional<search::TrialDecision> exploit;  // pbt: once stopped, it restarts from another's checkpoint
    bool workflow_step = false;  // the ensemble's retrain step: no sampler, no trial scheduler, not "best"
    bool outside_band = false;   // its val_loss is outside the search's predicted band (warned once)
    std::optional<double> last_objective, best_objective;
    Clock::time_point reattach_deadline{};  // after a restart: unclaimed RUNNING trials are requeued then
    Clock::time_point last_progress{};      // launch, re-attach or last metric point (the watchdog's clock)
    std::string watchdog_error;             // set when the watchdog stopped the run: it FAILS with this
  };
  struct WorkerRt {
    v1::WorkerInfo info;
    std::shared_ptr<WorkerLink> link;
    Clock::time_point lease_deadline;
    std::set<int64_t> trials;  // trials with a live member on this node
    std::vector<Clock::time_point> failures;  // inside the quarantine window
  };

  void Register(const std::shared_ptr<WorkerLink>& link, const v1::RegisterWorker& reg);
  void OnStarted(WorkerRt& w, const v1::TrialStarted& m);
  void OnMetrics(WorkerRt& w, const v1::MetricReport& m);
  void OnExited(WorkerRt& w, const v1::TrialExited& m);
  WorkerRt* WorkerFor(const std::shared_ptr<WorkerLink>& link);
  // Closes the trial's allocation record (the assignment ended, for `outcome`).
  void CloseAllocation(TrialRt& t, const std::string& outcome);
  Member* MemberOn(TrialRt& t, const std::string& node, int64_t epoch);
  // The member stopped (exited, or its node is gone): it no longer holds the node's worker.
  void MemberGone(TrialRt& t, Member& m);
  // Tells every live member to stop; members whose worker is not connected are taken as gone.
  void StopMembers(TrialRt& t, const std::string& reason);
  // When no member is live: gives the group back (Finish, or Requeue for a PENDING trial) and queues a PENDING
  // trial the scheduler does not have.
  void MaybeReleaseGroup(TrialRt& t);
  scheduler::GroupRequest GroupRequestFor(const SearchRt& s, const TrialRt& t) const;
  // The trial's node count: its own (node count as the fidelity: its stage's), else the search's.
  static int TrialNodes(const SearchRt& s, const TrialRt& t);
  // The built-in placeholders of the trial's command and templates (search::BuiltinPlaceholders).
  std::map<std::string, std::string> Builtins(const SearchRt& s, const TrialRt& t) const;
  void Submit(SearchRt& s, TrialRt& t);
  // Tells the scheduler the node's state (up, draining when quarantined, down without a stream); returns
  // the trials that lost a node.
  std::vector<int64_t> SyncNode(WorkerRt& w);
  // Refreshes the node's busy_slots from the scheduler (and tells watchers when it changed).
  void UpdateBusy(const std::string& node);
  double SchedNow() const;
  void MarkWorkerDown(WorkerRt& w, const std::string& reason);
  // Counts a failure of the node; quarantines it at opt_.quarantine_after failures inside the window.
  void RecordNodeFailure(WorkerRt& w, const std::string& reason);
  void CheckWatchdog(Clock::time_point now);
  std::string CheckpointDir(const TrialRt& t) const;
  // Worker lost while running `t`: requeue (attempt+1) or fail.
  void RequeueOrFail(TrialRt& t, const std::string& reason);
  void FinishTrial(TrialRt& t, v1::TrialState state, int exit_code, const std::string& error);
  // The one place a trial changes state: keeps the search's per-state sets and counts in step.
  void SetTrialState(TrialRt& t, v1::TrialState state);
  void ConsiderBest(SearchRt& s, const TrialRt& t);

  // Posts one Schedule() pass (coalesced).
  void RequestSchedule();
  void Schedule();
  // Creates and submits the search's next trial when it has room; false when it has none.
  bool CreateOne(SearchRt& s);
  // Stores a new PENDING trial (the next number) and counts it; the caller submits it.
  TrialRt& NewTrial(SearchRt& s, search::Params params, bool workflow_step);
  static bool AnyLive(const TrialRt& t);
  const TrialRt* TrialByNumber(const SearchRt& s, int64_t number) const;
  void Launch(SearchRt& s, TrialRt& t, const scheduler::NodeGroup& group);
  void Preempt(TrialRt& t, int64_t for_trial);
  // A preempted trial's members all stopped: PENDING again, same attempt.
  void FinishPreemption(TrialRt& t);
  // A trial stopped on purpose goes back to the queue (same attempt): preemption, pbt exploit.
  void BackToQueue(TrialRt& t, const std::string& outcome);
  // pbt: the stopped trial takes the source's checkpoint and the perturbed parameters, and is queued again.
  void FinishExploit(SearchRt& s, TrialRt& t);
  // The trial's last member exited 0 (or was stopped early): COMPLETED with its objective, or FAILED without.
  void CompleteFromExit(SearchRt& s, TrialRt& t);
  // Every member exited 0. Node count as the fidelity (scheduler.resource nodes): a stage below the last level
  // is reported to the trial scheduler as (nodes, objective); the trial is stopped (COMPLETED with its value)
  // or queued again for the next level's node count (promoted priority, same checkpoint directory). Otherwise,
  // and at the last level: CompleteFromExit.
  void EndStage(SearchRt& s, TrialRt& t);
  // Passes a metrics point to the search's trial scheduler and acts on its decision.
  void ConsultTrialScheduler(SearchRt& s, TrialRt& t, const v1::MetricPoint& point);
  // After a restart: the same calls again, from the stored trials and points (decisions ignored).
  void ReplayTrialScheduler(SearchRt& s);
  // A hero run's plan: reads the band from s.proto.plan_json(); an error names the problem.
  static std::string LoadPlan(SearchRt& s);
  // Compares a point's val_loss with the band at its step: warns (event, log) when the run leaves it and, with
  // stop_outside_band, stops a run that is worse than the band.
  void WatchBand(SearchRt& s, TrialRt& t, const v1::MetricPoint& point);
  void MaybeFinishSearch(SearchRt& s);
  // The spec's `ensemble:`: greedy selection over the top_k completed trials' saved validation predictions
  // (read from each trial's ensemble.predictions_file); the result (or why there is none) goes into the
  // search. Reads at most top_k files on the loop, once per search.
  void BuildEnsemble(SearchRt& s);
  // ensemble.retrain: one more trial, after the selection, whose command gets the members (a JSON file in its
  // checkpoint directory: {ensemble_file}, LADDER_ENSEMBLE_FILE). The search completes when it has ended.
  void CreateRetrainStep(SearchRt& s);
  void SetSearchState(SearchRt& s, v1::SearchState state, const std::string& error);
  void UpdateSearchCounts(SearchRt& s);

  void SaveTrial(TrialRt& t);

  void ArmLeaseTimer();
  void CheckLeases();
  double Now() const;

  boost::asio::io_context& loop_;
  store::Store& store_;
  CoordinatorOptions opt_;
  scheduler::NodeGroupScheduler sched_;
  EventHub hub_;
  CommitOutbox outbox_;
  Clock::time_point sched_epoch_ = Clock::now();
  boost::asio::steady_timer lease_timer_;
  bool stopped_ = false;
  bool schedule_posted_ = false;
  double started_unix_ = 0;

  std::map<int64_t, SearchRt> searches_;
  std::map<int64_t, TrialRt> trials_;
  std::map<std::string, WorkerRt> workers_;  // by node id
  std::map<const WorkerLink*, std::string> link_nodes_;  // registered links → node id
  int64_t next_assignment_epoch_ = 1;
  int64_t next_worker_epoch_ = 1;

  std::set<int64_t> progress_dirty_;  // trials whose metric count/ignored lines changed since the last commit

};

}  // namespace ladder::server
