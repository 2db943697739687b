#pragma once
// TrialRecord: one trial as the coordinator holds it (its proto, its node group's members, why it is stopping), and
// SearchTrials: a search's index of its trials. Owned and changed by TrialManager (server/trial_manager.h), read by
// the other parts; TrialLauncher marks the members its starts went to live.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ladder/v1/ladder.pb.h"
#include "search/core/space.h"
#include "search/core/spec.h"
#include "search/stopping/stopping_rule.h"
#include "server/coordinator_options.h"

namespace ladder::server {

// One trial as the coordinator holds it.
struct TrialRecord {
  // One node of the trial's assignment.
  struct Member {
    std::string node_id;
    int64_t epoch = 0;  // the assignment it belongs to
    std::vector<int> slots, gpus;
    int first_rank = 0;
    bool live = false;     // a process runs (or may run) there: its exit is awaited
    bool attached = true;  // false after a restart until its worker re-registers with it
  };
  // Where the scheduler has the trial.
  enum class Sched { kNone, kQueued, kRunning };

  v1::Trial proto;
  search::Params params;
  int64_t epoch = 0;  // current assignment epoch (0: none)
  // The nodes of the current assignment, or of the last one while its processes stop. Cleared when every member
  // has stopped and the group went back to the scheduler.
  std::vector<Member> members;
  Sched sched = Sched::kNone;
  bool preempting = false;  // told to stop for a higher-priority trial (or a stopping worker); PENDING once stopped
  // Rank 0 of its run could not listen on the rendezvous port (another process holds it): PENDING once stopped,
  // same attempt; port_collisions (in memory) counts such runs and picks the next port (server/rendezvous_port.h).
  bool port_taken = false;
  int port_collisions = 0;
  std::string early_stop;   // the stopping rule stopped it (why): it COMPLETES with its value once stopped
  std::optional<search::TrialDecision> exploit;  // pbt: once stopped, it restarts from another's checkpoint
  bool workflow_step = false;  // the ensemble's retrain step: no sampler, no stopping rule, not "best"
  std::optional<double> last_objective, best_objective;
  // Several objectives (the spec's objectives:) and constraints: the last value this run reported of each of their
  // metrics it prints.
  std::map<std::string, double> last_values;
  Clock::time_point reattach_deadline{};  // after a restart: unclaimed RUNNING trials are requeued then
  Clock::time_point last_progress{};      // launch, re-attach or last metric point (the watchdog's clock)
  std::string watchdog_error;             // set when the run was stopped to fail: it FAILS with this
  // A member was stopped from outside ladder while others ran (why): requeued as a lost node once all stopped, unless
  // another member's exit says its worker is stopping (a preemption then). Stored with the trial (schema 11).
  std::string outside_stop;
  // The open run's share of node-seconds (proto.node_seconds holds the ended runs'): since when, on how many nodes.
  double run_since = 0;
  int run_nodes = 0;
  std::string log_tail;  // the end of rank 0's stderr while it runs (heartbeats; stored once it exited)

  // One of the search's sampled configurations: not the retrain step, not a probe (proto.probe: AddProbe). Only
  // those go to the sampler and the stopping rule, count against max_trials and may be the best trial.
  bool Sampled() const { return !workflow_step && !proto.probe(); }
  bool AnyLive() const {
    return std::any_of(members.begin(), members.end(), [](const Member& m) { return m.live; });
  }
  // The open run's node-seconds up to `now` (0 without one).
  double OpenNodeSeconds(double now) const { return run_since > 0 ? std::max(0.0, now - run_since) * run_nodes : 0; }
  // The run's objective so far: its best value (objective.scope: best) or its last.
  std::optional<double> Objective(bool best) const { return best ? best_objective : last_objective; }
  // Keeps the point's values of the spec's several objectives' metrics and its constraints' metrics (nothing with
  // one objective and no constraints).
  void NoteObjectives(const search::SearchSpec& spec, const v1::MetricPoint& point) {
    auto note = [&](const std::string& metric) {
      auto it = point.values().find(metric);
      if (it != point.values().end()) last_values[metric] = it->second;
    };
    for (const search::Objective& o : spec.objectives) note(o.metric);
    for (const search::Constraint& c : spec.constraints) note(c.metric);
  }
};

// A search's trials, kept in step with their states by TrialManager::SetState.
struct SearchTrials {
  std::vector<int64_t> ids;            // in creation order
  std::set<int64_t> pending, running;  // by trial id (pending in requeue order = id order)
  int completed = 0, failed = 0, cancelled = 0;
  double ended_node_seconds = 0;       // of its trials' ended runs
  // Its open runs, summed so that NodeSeconds costs O(1) whatever runs (it is asked on every trial event): their
  // nodes, and nodes x (start - open_origin), with the origin the first open run's start (small sums stay exact).
  int open_nodes = 0;
  double open_node_starts = 0, open_origin = 0;
};

}  // namespace ladder::server
