#pragma once
// SearchManager: the searches — what trials exist and what their results mean.
//
// Owns: each search's record (v1::Search, its parsed spec), its sampler and stopping rule (ASHA, Hyperband,
// median, PBT) with their replay after a restart, the best trial, the failure budget, the search's end, the
// ensemble and its retrain step, and the hero run's band (HeroBand).
// Does not own trials: it creates them, reads them (TrialManager::Find/Of, const) and asks for what it decides
// (StopEarly, StopToExploit, Promote, CompleteFromExit, CancelAll); the trial state machine reports back through
// the TrialManager::Owner calls it implements.
// Thread: the coordinator's loop.
//
// Search lifecycle (v1::SearchState): RUNNING ──no trial left to run or create──► COMPLETED (FAILED when none
// completed), or ──budget.max_failed_trials failures──► FAILED, or ──CancelSearch──► CANCELLED. An ended search
// cancels its pending trials and stops its running ones. Its end is committed before anyone hears of it.
// Probes (AddProbe, search_manager_probes.cc): a COMPLETED or FAILED `scales:` search that is given a probe is
// RUNNING again, creates no sampled trial, and once its probe trials have ended goes back to the state (and error)
// it had, also after a restart in between (the state it had is stored with it). A CANCELLED search takes no probe.
#include <deque>
#include <optional>
#include <set>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/support/status.h>

#include "ladder/v1/ladder.pb.h"
#include "search/multiobjective/mo_sampler.h"
#include "search/samplers/sampler.h"
#include "search/core/spec.h"
#include "search/stopping/stopping_rule.h"
#include "server/commit_outbox.h"
#include "server/event_hub.h"
#include "server/hero_band.h"
#include "server/store/store.h"
#include "server/trial_manager.h"

namespace ladder::server {

class SearchManager : public TrialManager::Owner {
 public:
  SearchManager(store::Store& store, TrialManager& trials, CommitOutbox& outbox, EventHub& hub,
                std::function<void()> request_schedule);

  // --- recovery ---------------------------------------------------------------------------------------------
  // The stored searches; running ones get their spec parsed again, their sampler, stopping rule and plan.
  void Load();
  // After the trials are loaded: next trial numbers, what the samplers knew, the best trials, and the stopping
  // rules rebuilt from the stored reports.
  void Recover();

  // --- requests ---------------------------------------------------------------------------------------------
  grpc::Status Create(const v1::CreateSearchRequest& req, v1::Search* out);
  grpc::Status Cancel(int64_t search_id, v1::Search* out);
  // One probe of the climb: a trial per LR at the probe's batch, marked as probes (v1::AddProbeRequest).
  grpc::Status AddProbe(const v1::AddProbeRequest& req, v1::AddProbeResponse* out);
  // A known point for a running search (v1::EnqueueTrialRequest; search_manager_enqueue.cc).
  grpc::Status Enqueue(const v1::EnqueueTrialRequest& req, v1::EnqueueTrialResponse* out);
  // The search's record with its current trial counts; nullptr for no such search.
  const v1::Search* Get(int64_t search_id);
  // Whether the trial is on its search's Pareto front (several objectives: v1::Search.pareto_front).
  bool OnFront(int64_t search_id, int64_t trial_id) const;
  std::vector<int64_t> Ids() const;
  // Whether a running search runs on the pool's nodes (resources.pool).
  bool PoolInUse(const std::string& pool) const;
  // Called once a search's end is committed (and watchers were told).
  void set_on_ended(std::function<void(const v1::Search&)> on_ended) { on_ended_ = std::move(on_ended); }

  // --- the scheduling pass ----------------------------------------------------------------------------------
  // Every running search keeps `parallelism` trials submitted (queued or running).
  void CreateTrials();
  // Searches with nothing left to run or create end (or build their ensemble first).
  void FinishEnded();

  // --- TrialManager::Owner ----------------------------------------------------------------------------------
  bool Has(int64_t search_id) const override { return searches_.count(search_id) > 0; }
  const search::SearchSpec& Spec(int64_t search_id) const override { return searches_.at(search_id).spec; }
  const v1::Search& Search(int64_t search_id) const override { return searches_.at(search_id).proto; }
  bool JudgesPoints(int64_t search_id) const override;
  void OnPoint(int64_t trial_id, const v1::MetricPoint& point) override;
  void OnRunSucceeded(int64_t trial_id) override;
  void OnTrialEnded(int64_t trial_id) override;
  void OnCountsChanged(int64_t search_id) override { Publish(searches_.at(search_id)); }

 private:
  struct SearchRecord {
    v1::Search proto;
    search::SearchSpec spec;
    // One of the two: the spec's sampler for one objective, or for several (spec.objectives) the multi-objective one.
    std::unique_ptr<search::Sampler> sampler;
    std::unique_ptr<search::MultiObjectiveSampler> mo_sampler;
    // Several objectives: the Pareto front of the feasible completed trials, by id, with each one's values as
    // minimized (a max objective negated); proto.pareto_front lists the ids.
    std::map<int64_t, std::vector<double>> front;
    int infeasible = 0;  // constraints: its completed sampled trials that broke one (ConsiderBest counts them)
    std::unique_ptr<search::StoppingRule> stopping_rule;  // the spec's `scheduler:`; null for none
    int next_number = 0;     // trials created so far
    bool exhausted = false;  // the sampler has no more configurations
    HeroBand band;           // a hero run's predicted loss band (empty for other searches)
    // asha, hyperband: each bracket's levels (its rungs, then max_resource) and hyperband's bracket cycle.
    std::vector<std::vector<double>> levels;
    std::vector<int> bracket_cycle;
    // Probes: their trial numbers (the sampler numbers the sampled trials without them: SamplerNumber), and the
    // ended state a probe reopened (restored once the probe trials end).
    std::set<int> probe_numbers;
    struct Ended {
      v1::SearchState state;
      std::string error;
    };
    std::optional<Ended> reopened;
    // Points given by `ladder search enqueue` not yet run, oldest first (their stored row's id: deleted in the
    // batch that creates the trial). The spec's enqueue: points are trials 0..n-1 and need no queue.
    struct Queued {
      int64_t id = 0;
      search::Params params;
    };
    std::deque<Queued> queue;
  };

  // Known points (search_manager_enqueue.cc): how many are still to run when `sampled` trials were created; the
  // next one (the spec's, then the queue's, whose stored row it deletes), or nullopt for a sampled trial.
  static int KnownPointsLeft(const SearchRecord& s, int sampled);
  std::optional<search::Params> NextKnownPoint(SearchRecord& s, int sampled);
  // After Load: the stored queues of the running searches.
  void LoadQueues();

  // Warm starts (search_manager_warm_start.cc): the earlier search's completed trials inside the new space (or
  // why there are none to take: the error refusing the search), told to the sampler numbered below 0 and set on
  // the proto's warm_start fields; after a restart, from the store; the journal's entry for a new search.
  using WarmStart = store::Store::WarmStartRows;
  std::string GatherWarmStart(const search::SearchSpec& spec, WarmStart* out);
  static void TellWarmStart(SearchRecord& s, const WarmStart& w);
  void LoadWarmStarts();
  void AnnounceWarmStart(const SearchRecord& s);

  // The search's sampler, whichever kind (search_manager_front.cc): asked, told a trial's result (its objective, or
  // with several objectives its values), told of a pending trial; whether it waits for results.
  static bool HasSampler(const SearchRecord& s) { return s.sampler || s.mo_sampler; }
  static std::optional<search::Params> AskSampler(SearchRecord& s, int number);
  static void TellSampler(SearchRecord& s, const TrialRecord& t);
  static void AddPendingToSampler(SearchRecord& s, int number, const search::Params& params);
  static bool SamplerWaiting(const SearchRecord& s) { return s.sampler && s.sampler->Waiting(); }
  // Several objectives (search_manager_front.cc): the sampler for them (error: why there is none), the objectives
  // (and the constraints) on the proto, and a completed trial considered for the Pareto front (the trials it dominates leave it).
  static std::string PrepareMultiObjective(SearchRecord& s);
  static void SetObjectivesFromSpec(SearchRecord& s);
  static void UpdateFront(SearchRecord& s, const TrialRecord& t);

  // A sampled trial's number as its sampler knows it: the trial number less the probes numbered before it.
  static int SamplerNumber(const SearchRecord& s, int number);
  // How many of the search's failed trials count against budget.max_failed_trials (not its probes).
  int BudgetFailures(const SearchRecord& s) const;

  // The spec's rungs on the proto (Search.rungs) and the levels a trial's rung is counted against.
  static void SetRungs(SearchRecord& s);
  // v1::Trial.rung of trial `number` that reported `resource`: the levels of its bracket it has reached.
  static int RungOf(const SearchRecord& s, int64_t number, double resource);

  // The spec's sampler, stopping rule, launcher and plan (a plan error is returned, naming the problem).
  static std::string Prepare(SearchRecord& s);
  // The group's launcher and pool, from the spec (they are not stored; an ended search has them too).
  static void SetGroupFromSpec(SearchRecord& s);
  // Copies the trial counts into the record.
  void RefreshCounts(SearchRecord& s);
  // Tells watchers (with fresh counts).
  void Publish(SearchRecord& s);
  // Creates and submits the search's next trial when it has room; false when it has none.
  bool CreateOne(SearchRecord& s);
  // A completed sampled trial: the best one if it is better and feasible (an infeasible one is counted instead).
  void ConsiderBest(SearchRecord& s, const TrialRecord& t);
  void MaybeFinish(SearchRecord& s);
  void SetState(SearchRecord& s, v1::SearchState state, const std::string& error);

  // Stopping rules (search_manager_decisions.cc): a point of a running trial, judged by the trial
  // scheduler.
  void ConsultStoppingRule(SearchRecord& s, int64_t trial_id, const v1::MetricPoint& point);
  // Node count as the fidelity: a stage below the last level is judged as (nodes, objective); the trial stops
  // (COMPLETED with its value) or is promoted to the next level's node count. Otherwise it completes.
  void EndStage(SearchRecord& s, int64_t trial_id);
  // After a restart: the same reports again, from the stored points; decisions on the current runs hold again.
  void ReplayStoppingRule(SearchRecord& s);
  // The hero run's band: warns when a run leaves it and, with stop_outside_band, stops a run above it.
  void WatchBand(SearchRecord& s, int64_t trial_id, const v1::MetricPoint& point);

  // Ensembles (search_manager_ensemble.cc): greedy selection over the top_k completed trials' saved validation
  // predictions (read on the loop, at most top_k files, once per search); the result, or why there is none,
  // goes into the search.
  void BuildEnsemble(SearchRecord& s);
  // ensemble.retrain: one more trial after the selection, whose command gets the members (a JSON file in its
  // checkpoint directory: {ensemble_file}, LADDER_ENSEMBLE_FILE). The search completes when it has ended.
  void CreateRetrainStep(SearchRecord& s);

  store::Store& store_;
  TrialManager& trials_;
  CommitOutbox& outbox_;
  EventHub& hub_;
  std::function<void()> request_schedule_;
  std::function<void(const v1::Search&)> on_ended_;
  std::map<int64_t, SearchRecord> searches_;
};

}  // namespace ladder::server
