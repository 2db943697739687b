#pragma once
// TrialLauncher: a trial's run from the node group the scheduler gave it to its workers — the start window and
// the hand-over of the starts. What each start says (the command line and environment per launcher) is
// launch_commands.h's, pure; what the trial's record says (its state, members, epoch, allocation) is TrialManager's.
//
// The hand-over: each StartTrial goes to its member's worker through the CommitOutbox, after the commit of the
// allocation and epoch it carries; the member is then live (its exit is awaited) and its node runs the trial.
//
// The start window (CoordinatorOptions::starts_in_flight, 0: none): a scheduler pass places no more trials while
// that many starts are unheard of — sent, and no TrialStarted or metric report for that epoch yet, the run not
// ended, and not older than kStartHeardWithin. When a pass stops at the window with trials left queued, hearing of
// starts asks for the next pass once half the window is free.
//
// Thread: the coordinator's loop.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <utility>

#include "search/core/spec.h"
#include "server/commit_outbox.h"
#include "server/coordinator_options.h"
#include "server/node_manager.h"
#include "server/trial_record.h"

namespace ladder::server {

class TrialLauncher {
 public:
  // Whether trial `trial_id`'s current run is still that of assignment `epoch`, with something of it live.
  using RunIsCurrent = std::function<bool(int64_t trial_id, int64_t epoch)>;

  TrialLauncher(NodeManager& nodes, CommitOutbox& outbox, const CoordinatorOptions& options,
                std::function<void()> request_schedule, RunIsCurrent run_is_current);

  // --- the start window ----------------------------------------------------------------------------------------
  // How many starts the scheduler pass about to run may make (no bound without a window); forgets first the
  // starts that no longer hold the window.
  size_t OpenStarts();
  // After Launch of the pass's `started`-th trial: the window counts its start if one went out, and every
  // starts_per_commit starts the starts so far leave (committed first) while the rest of the pass is placed.
  void AfterLaunch(const TrialRecord& t, size_t started);
  // The pass made `started` starts of `budget`: it stopped at the window if trials are left queued.
  void PassEnded(size_t started, size_t budget, bool queued);
  // A worker's TrialStarted or metric report for the run of `epoch`.
  void StartHeard(int64_t trial_id, int64_t epoch);
  // Trials whose start was sent and not yet heard of (what the window counts now).
  size_t InFlight() const { return starts_unheard_.size(); }

  // --- the hand-over -------------------------------------------------------------------------------------------
  // Sends the run's starts (the command `sub`, on the trial's members, at its epoch) to the members' workers and
  // marks each member that got one live. A member without a worker stream gets none (the scheduler places only on
  // nodes that have one: that is a bug, logged).
  void Start(TrialRecord& t, const search::SearchSpec& spec, int nodes, const search::Substituted& sub);

 private:
  void ForgetStaleStarts(Clock::time_point now);

  NodeManager& nodes_;
  CommitOutbox& outbox_;
  const CoordinatorOptions& opt_;
  std::function<void()> request_schedule_;
  RunIsCurrent run_is_current_;
  // trial -> (assignment epoch, when its start was decided) until heard of, the run's end, or kStartHeardWithin.
  std::unordered_map<int64_t, std::pair<int64_t, Clock::time_point>> starts_unheard_;
  bool window_full_ = false;  // the last pass stopped at the window with trials left queued
};

}  // namespace ladder::server
