#pragma once
// TrialManager: every trial's record and runs — the trial state machine, node groups and their members, the
// runs' records at launch and their stops, requeues and the failure rules, preemption, exits, the watchdog, PBT's
// checkpoint hand-over, and the trial records in the store. The starts themselves (the start window, the
// hand-over to workers, the command lines per launcher) are TrialLauncher's (trial_launcher.h, launch_commands.h).
//
// Files: trial_manager.cc (state, records, the end of a trial, preemption, what searches decide),
// trial_manager_queue.cc (creation, the scheduler's passes, launch, the group's release),
// trial_manager_reports.cc (workers' reports, node losses, the watchdog), trial_manager_exploit.cc (PBT's
// hand-over), trial_manager_recovery.cc (after a restart).
//
// Owns: the trial records (TrialRecord) and each search's index of them (creation order, pending and running
// sets, ended counts: SearchTrials), assignment epochs, the trials' side of the scheduler (submit, requeue,
// finish, attach), and the trial progress that is batched until the next commit.
// Does not own: what a trial's result means — the sampler, the stopping rule (ASHA/PBT), the best trial,
// budgets, the search's end — which the Owner (SearchManager) decides; nodes and streams (NodeManager).
// Others read records through Find/Get/Of (const); every change goes through a method here.
// Thread: the coordinator's loop.
//
// Trial lifecycle (v1::TrialState):
//
//   PENDING ──the scheduler starts its node group (Launch)──► RUNNING ──every member exits 0 + objective──► COMPLETED
//      ▲                                                        │ ├──a rank fails, launch error, no objective──► FAILED
//      ├──node lost, Slurm step cancelled, SIGTERM from outside, ┤ └──search cancelled or failed──► CANCELLED
//      │  attempt < budget.max_retries (RequeueOrFail)           │
//      ├──preempted, PBT exploit, promoted to more nodes, worker stopping or its token ended, rendezvous port taken
//      │  (BackToQueue: same attempt)
//      └────────────────────────────────────────────────────────┘
//
// Node groups: a trial has one member per node of its group. Launch per node: each member's worker starts its
// local ranks with RANK/WORLD_SIZE/LOCAL_RANK/MASTER_ADDR (rank 0's node address)/MASTER_PORT; launch by mpirun:
// the first member's worker runs `mpirun --host a:R,b:R ...`, the other members hold their slots. Only global
// rank 0's member reports metrics. When one member fails or its node is lost, the other members are stopped; the
// group goes back to the scheduler only when every member has stopped (or its node is down; after a restart, a
// node not registered yet counts as running its member until the re-attach deadline), so a new trial never shares a
// node with processes of an old one, and a trial never runs twice at once.
//
// Fencing: every assignment carries a fresh, increasing assignment epoch. Reports with a stale epoch (a worker
// that lost its lease and came back) are ignored and the run is told to stop. Starts and cancels go out through
// the CommitOutbox, after the commit of the allocation and epoch they rest on.
//
// Durability of reports: metric points carry a per-run sequence number; each is stored once and acknowledged
// after the commit that holds it (durable_seq; exit_durable for the exit). Workers resend what is unacknowledged.
//
// After a coordinator restart, RUNNING trials stay RUNNING for one lease so that their workers can re-register
// and re-attach them (the same run, not restarted); unclaimed ones are then requeued. A stop to wait in the queue
// (preemption, pause) decided before the crash holds: its journal entry is its stored intent. A requeued attempt keeps
// its checkpoint directory (LADDER_CHECKPOINT_DIR), so a trial that checkpoints resumes.
//
// Watchdog: a running trial whose search sets trial.progress_timeout and that reports no metric point for that
// long is stopped and FAILED with an error naming the field.
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ladder/v1/ladder.pb.h"
#include "search/core/spec.h"
#include "search/stopping/stopping_rule.h"
#include "server/commit_outbox.h"
#include "server/coordinator_options.h"
#include "server/event_hub.h"
#include "server/node_manager.h"
#include "server/scheduler/scheduler.h"
#include "server/store/store.h"
#include "server/trial_launcher.h"
#include "server/trial_record.h"

namespace ladder::server {

class TrialManager : public NodeManager::Listener {
 public:
  // What the trials ask of, and tell, the searches that own them (SearchManager implements it).
  class Owner {
   public:
    virtual ~Owner() = default;
    virtual bool Has(int64_t search_id) const = 0;
    virtual const search::SearchSpec& Spec(int64_t search_id) const = 0;
    // The search's record: its state, group, priority, objective metric and direction.
    virtual const v1::Search& Search(int64_t search_id) const = 0;
    // Whether the search judges its trials' points as they come (a stopping rule per point, a hero band): asked
    // once per report, so that a search that does not pays nothing per point.
    virtual bool JudgesPoints(int64_t search_id) const = 0;
    // A point of a running trial's current run was stored (rank 0's member): the search's stopping rule and
    // hero-run band judge it.
    virtual void OnPoint(int64_t trial_id, const v1::MetricPoint& point) = 0;
    // Every member of a running trial exited 0 and nobody asked it to stop: the search ends the stage or the trial.
    virtual void OnRunSucceeded(int64_t trial_id) = 0;
    // The trial ended (COMPLETED, FAILED, CANCELLED by Finish): its record is stored and its group released or
    // stopping. The search tells its sampler and stopping rule, and may end.
    virtual void OnTrialEnded(int64_t trial_id) = 0;
    // The search's trial counts changed (a trial started or went back to the queue): watchers hear of it.
    virtual void OnCountsChanged(int64_t search_id) = 0;
  };

  TrialManager(store::Store& store, scheduler::NodeGroupScheduler& sched, NodeManager& nodes, CommitOutbox& outbox,
               EventHub& hub, const CoordinatorOptions& options, std::function<void()> request_schedule);
  void set_owner(Owner* owner) { owner_ = owner; }

  // --- recovery (trial_manager_recovery.cc) ----------------------------------------------------------------------
  // Loads the stored trials of the owner's searches; RUNNING ones wait for their workers until reattach_deadline.
  void Load(Clock::time_point reattach_deadline);
  // The scheduler takes back what runs (exactly where it runs) and queues what waits, for running searches.
  void AttachToScheduler();

  // --- creation and scheduling (trial_manager_queue.cc) ----------------------------------------------------------
  // Stores a new PENDING trial (number `number` of the search); the caller submits it. probe_micro_batches > 0: a
  // probe of the climb (v1::Trial.probe) with that many gradient-accumulation steps ({micro_batches}). enqueued: a
  // known point (v1::Trial.enqueued), stored with the trial.
  const TrialRecord& Create(int64_t search_id, int number, search::Params params, bool workflow_step,
                            int probe_micro_batches = 0, bool enqueued = false);
  void Submit(int64_t trial_id);
  // One pass of the node-group scheduler: launches what it starts, preempts what it displaces; at most as many
  // starts as the window of starts not yet heard of leaves (CoordinatorOptions::starts_in_flight, TrialLauncher).
  void RunScheduler();
  // Trials whose start was sent and not yet heard of (what the window counts now).
  size_t StartsInFlight() const { return launcher_.InFlight(); }

  // --- worker reports (trial_manager_reports.cc) -----------------------------------------------------------------
  void OnStarted(const std::string& node, const v1::TrialStarted& m);
  void OnMetrics(const std::string& node, const std::shared_ptr<WorkerLink>& link, const v1::MetricReport& m);
  void OnExited(const std::string& node, const std::shared_ptr<WorkerLink>& link, const v1::TrialExited& m);
  // A heartbeat: rank 0's log tail of the runs it lists.
  void OnHeartbeat(const std::string& node, const v1::Heartbeat& m);
  // NodeManager::Listener
  bool Reattach(const std::string& node, const std::shared_ptr<WorkerLink>& link,
                const v1::RunningTrial& run) override;
  void RunsLost(const std::string& node, const std::set<int64_t>& trials, const std::string& reason,
                NodeLoss loss) override;
  void RegisteredWithout(const std::string& node, const std::set<int64_t>& reported) override;
  // The periodic checks: trials silent for trial.progress_timeout; trials no worker re-attached after a restart.
  void CheckWatchdog(Clock::time_point now);
  void CheckReattachDeadlines(Clock::time_point now);
  // A search whose trials no node up could hold when they were queued within the registration window after the
  // start (CoordinatorOptions::registration_window: workers were still registering) is said once the window has
  // passed, if a trial of it still waits and still cannot be held (trial_manager_recovery.cc).
  void WarnInfeasibleAfterRegistration(Clock::time_point now);

  // --- what searches decide --------------------------------------------------------------------------------------
  // The stopping rule stopped it: it COMPLETES with its value once its members have stopped.
  void StopEarly(int64_t trial_id, const std::string& reason);
  // pbt: once stopped, it takes the source's checkpoint and the decision's parameters and is queued again.
  void StopToExploit(int64_t trial_id, search::TrialDecision decision);
  // Stops the run; it FAILS with `why` once stopped (the hero run outside its band with --stop-outside-band).
  void StopToFail(int64_t trial_id, const std::string& why);
  // After a restart: a stop or exploit decided for the running trial before the crash holds again (the cancel
  // goes to each member as its worker re-attaches it).
  void RestoreDecision(int64_t trial_id, search::TrialDecision decision);
  // Node count as the fidelity: queued again at `nodes` nodes (promoted priority, same checkpoint directory).
  void Promote(int64_t trial_id, int nodes, const std::string& why);
  // The run ended with its members stopped: COMPLETED with its objective (by the objective's scope), or FAILED
  // without one.
  void CompleteFromExit(int64_t trial_id);
  // A PENDING trial fails before it could start (e.g. its ensemble file could not be written).
  void FailBeforeStart(int64_t trial_id, const std::string& error);
  // The search ended (cancelled, failed): its pending trials are CANCELLED, its running ones stopped.
  void CancelAll(int64_t search_id, const std::string& error);
  // Every running trial stops through its checkpoint as if preempted (back to PENDING, same attempt), unless it is
  // already stopping for a decision of its own (early stop, exploit, failure). The coordinator's pause.
  void PreemptAll(const std::string& reason);
  // How far the stopping rule let it go (v1::Trial.rung); stored with the next commit.
  void SetRung(int64_t trial_id, int rung);
  // Trials with a live run.
  int Running() const;

  // --- reads -----------------------------------------------------------------------------------------------------
  size_t count() const { return trials_.size(); }
  const TrialRecord* Find(int64_t trial_id) const;
  const TrialRecord& Get(int64_t trial_id) const { return trials_.at(trial_id); }
  const SearchTrials& Of(int64_t search_id) const;
  const TrialRecord* ByNumber(int64_t search_id, int64_t number) const;
  std::string CheckpointDir(const TrialRecord& t) const;
  // The built-in placeholders of the trial's command and templates (search::BuiltinPlaceholders).
  std::map<std::string, std::string> Builtins(const TrialRecord& t) const;
  // The trial's node count: its own (node count as the fidelity: its stage's), else the search's.
  int Nodes(const TrialRecord& t) const;
  // The trial as the API shows it: node_seconds with the open run's share up to `now`.
  v1::Trial View(const TrialRecord& t, double now) const;
  // Node-seconds of the search's trials (ended runs, and the running ones' up to `now`). O(1).
  double NodeSeconds(int64_t search_id, double now) const;
  // GetTrial's extras: the log tail, every run, the trial's journal entries.
  void AddHistory(const TrialRecord& t, v1::Trial* out);

  // --- the commit's hook: metric counts changed since the last commit --------------------------------------------
  bool HasProgress() const { return !progress_dirty_.empty(); }
  void WriteProgress();

 private:
  TrialRecord& At(int64_t trial_id) { return trials_.at(trial_id); }
  // The one place a trial changes state: keeps the search's index in step.
  void SetState(TrialRecord& t, v1::TrialState state);
  void Save(TrialRecord& t);
  void CloseAllocation(TrialRecord& t, const std::string& outcome);
  // The trial's open run starts at `since` on `nodes` nodes (its search's open sums follow), or ends (OpenRun(t, 0, 0)).
  void OpenRun(TrialRecord& t, double since, int nodes);
  TrialRecord::Member* MemberOn(TrialRecord& t, const std::string& node, int64_t epoch);
  // The member stopped (exited, or its node is gone): it no longer holds the node.
  void MemberGone(TrialRecord& t, TrialRecord::Member& m);
  // Tells every live member to stop; members whose worker is not connected are taken as gone.
  void StopMembers(TrialRecord& t, const std::string& reason);
  // When no member is live: gives the group back (Finish, or Requeue for a PENDING trial) and queues a PENDING
  // trial the scheduler does not have.
  void MaybeReleaseGroup(TrialRecord& t);
  scheduler::GroupRequest GroupRequestFor(const TrialRecord& t) const;
  double SchedNow() const;

  // Launch (trial_manager_queue.cc): the run's record — its epoch, members, command, state and allocation — then
  // its starts go out through the TrialLauncher.
  void Launch(TrialRecord& t, const scheduler::NodeGroup& group);
  void AssignMembers(TrialRecord& t, const scheduler::NodeGroup& group);

  // Exits (trial_manager_reports.cc): what a run's end means, by why it was stopped.
  void EndRun(TrialRecord& t, const std::string& node, const v1::TrialExited& m, bool any_live);
  // Whether the exit of `node`'s member says rank 0 found the run's rendezvous port taken (ladder-train's
  // kExitRendezvousPortInUse from the member of rank 0 of a multi-node run that was given MASTER_PORT).
  bool RendezvousPortTakenOn(const TrialRecord& t, const std::string& node, const v1::TrialExited& m) const;
  // Then: the group stops and the trial goes back to the queue without using up an attempt; its next run gets
  // another port. Past kMaxRendezvousPortCollisions it is requeued as a failure (RequeueOrFail).
  void RendezvousPortTaken(TrialRecord& t, const std::string& node, bool any_live);

  // Node lost while running `t`: requeue (attempt+1) or fail.
  void RequeueOrFail(TrialRecord& t, const std::string& reason);
  // Its node's worker is stopping or lost its token: the run stops and the trial waits for another node, from its
  // checkpoint as after a preemption (PENDING with the same attempt once every member stopped).
  void WaitForAnotherNode(TrialRecord& t, const std::string& reason);
  void Finish(TrialRecord& t, v1::TrialState state, int exit_code, const std::string& error);
  void Preempt(TrialRecord& t, int64_t for_trial);
  // Stops the run to wait in the queue (Preempt, PreemptAll): PENDING with its attempt once every member stopped.
  void StopToWait(TrialRecord& t, const std::string& reason);
  // A trial stopped to wait (preempted, its worker stopping) has all members stopped: PENDING, same attempt.
  void FinishPreemption(TrialRecord& t);
  // A trial stopped on purpose goes back to the queue (same attempt): preemption, exploit, promotion.
  void BackToQueue(TrialRecord& t, const std::string& outcome);
  // pbt (trial_manager_exploit.cc): the stopped trial takes the source's checkpoint and the perturbed parameters.
  void FinishExploit(TrialRecord& t);
  // Stops a run whose decision was just taken, and ends it at once when nothing of it runs.
  void AfterStopDecision(TrialRecord& t);

  store::Store& store_;
  scheduler::NodeGroupScheduler& sched_;
  NodeManager& nodes_;
  CommitOutbox& outbox_;
  EventHub& hub_;
  const CoordinatorOptions& opt_;
  std::function<void()> request_schedule_;
  Owner* owner_ = nullptr;
  Clock::time_point sched_epoch_ = Clock::now();

  std::map<int64_t, TrialRecord> trials_;
  std::map<int64_t, SearchTrials> by_search_;
  int64_t next_assignment_epoch_ = 1;
  std::set<int64_t> progress_dirty_;  // trials whose metric count/ignored lines changed since the last commit
  std::set<int64_t> infeasible_logged_;  // searches warned once that no set of nodes can hold their group now
  std::map<int64_t, int64_t> infeasible_deferred_;  // search -> a trial queued within the registration window
  // Says once per search that no set of nodes can hold `req`'s group now (or defers it, in the window).
  void WarnIfInfeasible(const scheduler::GroupRequest& req, int64_t search_id, int64_t trial_id);
  // The start window and the hand-over of the starts.
  TrialLauncher launcher_;
};

}  // namespace ladder::server
