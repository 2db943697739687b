#pragma once
// StoppingRule: early stopping and multi-fidelity scheduling of running trials, chosen by the spec's
// `scheduler:` mapping (search/core/stopping_options.h):
//   asha       asynchronous successive halving (Li et al. 2020), stop-based like Ray Tune's AsyncHyperBand:
//              rungs at r, r*eta, r*eta^2, ... < R. When a trial first reports at or past a rung, its value is
//              recorded there and it goes on only if it is in the top ceil(n / eta) of the n values recorded at
//              that rung so far (its own included; ties go its way). At resource >= R it is stopped (done).
//   hyperband  brackets of ASHA: bracket s (0 = the most aggressive) has its first rung at r * eta^s and
//              keeps its own rung records. Trial n goes to the bracket at position n mod W of a fixed cycle
//              of length W, filled by smooth weighted round-robin with Hyperband's bracket sizes
//              ceil((s_max + 1) / (k + 1) * eta^k) (k = the bracket's number of rungs), so the assignment
//              is a function of the trial number only.
//   median     median stopping rule (Golovin et al. 2017, Vizier): at resource t >= grace_period, a trial is
//              stopped when its best value so far is worse than the median, over the other trials that
//              have reported at t or beyond (at least min_trials of them), of their running averages (the
//              mean of their values reported at resources <= t).
//   pbt        population-based training (Jaderberg et al. 2017), asynchronous like Ray Tune's: whenever a
//              trial has advanced perturbation_interval since its last perturbation point, the population
//              (the trials that reported and did not complete) is ranked by their latest values; a trial in
//              the bottom quantile (ceil(quantile * n), at most n / 2) gets kExploit: restart from the
//              checkpoint of a trial of the top quantile (a seeded choice), with that trial's parameters
//              perturbed (Perturb below).
//
// Calls, on the coordinator's loop (not thread-safe; no threads, clock or I/O inside):
//   AddTrial(n, params)         a trial was created with `params`, or (again) sets its current parameters
//                               (pbt keeps them, as what a trial that exploits it perturbs; the others ignore
//                               it). pbt's decisions (who exploits whom) never depend on parameters.
//   Report(n, resource, value)  a metrics point carrying both the resource metric and the objective metric
//                               -> kContinue | kStop (end the trial now: it COMPLETES, its objective being its
//                               last value) | kExploit (pbt: restart it from source_trial's checkpoint with
//                               `params`; from then on the trial IS that model: its next reports continue
//                               from source_resource)
//   Complete(n, value)          the trial ended: exit 0 (its objective) or failed (nullopt), stopped or not.
//                               Failed trials keep their reported values in the statistics.
//   Forget(n)                   drop the trial from every statistic, as if it never reported (a cancelled
//                               trial whose reports should not count)
// Values are the objective as reported; the rule knows the direction (objective.mode). A value that is
// not finite counts as the worst possible. A report for a trial already stopped returns kStop again. A
// report at a resource at or below the trial's previous one means the trial went back (it resumed from an
// older checkpoint, or restarted): its curve is cut there first (rung records stay: a rung is judged once).
// After kStop or kExploit the coordinator must not pass on further reports of the run it stops (points of
// the same attempt that arrive before the process is gone): they would count as the new run's.
//
// Determinism and restarts. The state is a function of the sequence of calls only, and every decision too
// (pbt's choices are seeded by (seed, trial number, that trial's exploit count)). A restarted coordinator
// rebuilds the rule by making the same calls again, with the stored events in their original order, and
// ignoring the decisions (it acted on them already): AddTrial for every trial, with the parameters it was
// CREATED with (pbt derives its exploits again, new parameters included), Report for every stored metrics
// point that carries both metrics, Complete/Forget where the trial ended. For asha, hyperband and
// median, AddTrial and Complete change no later decision, so "AddTrial for all, then every stored report (and
// Forget) in stored order, then Complete for the finished trials" rebuilds the same state. For pbt, Complete
// removes a trial from the population, so it must come at its place among the reports (e.g. by time), and
// the points a stopped run sent after its kExploit must be left out as they were live. A replay that gave
// AddTrial the trials' CURRENT parameters (after exploits) should end with AddTrial(n, current parameters)
// for every trial: the parameters pbt derived again are then exactly the stored ones, whatever the order.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "search/core/space.h"
#include "search/core/stopping_options.h"

namespace ladder::search {

struct SearchSpec;

struct TrialDecision {
  enum class Kind { kContinue, kStop, kExploit };
  Kind kind = Kind::kContinue;
  // kStop, kExploit: one line for the trial's record and the dashboards, e.g.
  // "asha: rung 2 (epoch 9): 0.41 is not in the top 3 of 7 values (the cutoff is 0.35)".
  std::string reason;
  // kExploit only.
  int64_t source_trial = -1;    // restart from this trial's latest checkpoint
  double source_resource = 0;   // the source's latest reported resource (where its checkpoint should be)
  Params params;                // the trial's new parameters: the source's, perturbed

  bool stop() const { return kind == Kind::kStop; }
  bool exploit() const { return kind == Kind::kExploit; }
};

class StoppingRule {
 public:
  virtual ~StoppingRule() = default;
  virtual void AddTrial(int64_t /*trial_number*/, const Params& /*params*/) {}
  virtual TrialDecision Report(int64_t trial_number, double resource, double value) = 0;
  virtual void Complete(int64_t trial_number, std::optional<double> final_value) = 0;
  virtual void Forget(int64_t trial_number) = 0;
};

// The scheduler of a valid spec (from ParseSpec); nullptr when `scheduler.type` is none.
std::unique_ptr<StoppingRule> MakeStoppingRule(const SearchSpec& spec);

// The same from its parts (benchmarks and tests build rules without a whole spec). `space` is used by
// pbt only. `options` must be valid (ParseSpec's checks); nullptr for kNone.
std::unique_ptr<StoppingRule> MakeStoppingRule(const StoppingOptions& options, bool maximize,
                                                   const SearchSpace& space = {});

// The rungs of ASHA bracket `bracket` (0: r, r*eta, ... < R; bracket s starts at r * eta^s), ascending.
std::vector<double> AshaRungs(const StoppingOptions& options, int bracket = 0);

// The number of Hyperband brackets the options allow: floor(log_eta(R / r)) + 1 (computed with a small
// tolerance, so R / r = eta^k exactly gives k + 1).
int MaxBrackets(const StoppingOptions& options);

// Hyperband's cycle of bracket numbers for `brackets` brackets (see above): trial n goes to
// cycle[n mod size]. When the largest bracket would get more than 10,000 trials a cycle, every size is scaled
// down in proportion (the largest to 10,000, none below 1).
std::vector<int> HyperbandCycle(const StoppingOptions& options, int brackets);

// The Hyperband bracket of trial `trial_number` for `brackets` brackets (builds the cycle: not for loops).
int HyperbandBracket(const StoppingOptions& options, int brackets, int64_t trial_number);

// Node count as the fidelity (`scheduler.resource: nodes`, asha and hyperband only). The coordinator runs such a
// trial in stages, one per level: the first on NodeLevels(...)[0] nodes; when a stage's run exits 0 the
// coordinator reports (node count, the run's objective) to the rule; a trial that goes on is queued again,
// at promoted priority, for the next level's node count and resumes from its checkpoint directory (the command
// gets the stage's node count as {nodes}, e.g. `--epochs {nodes}` so that a stage on more nodes trains on).
// The levels are the rungs of the trial's bracket, then max_resource; every one a whole number.
inline constexpr const char* kNodesResource = "nodes";
inline bool ScalesNodes(const StoppingOptions& options) {
  return (options.type == StoppingRuleType::kAsha || options.type == StoppingRuleType::kHyperband) &&
         options.resource == kNodesResource;
}
std::vector<int> NodeLevels(const StoppingOptions& options, int64_t trial_number);

// PBT's explore step, seeded by `rng_seed`: every active parameter of `source` is perturbed, in spec order:
// with probability resample_probability it is drawn again (uniformly, log-uniformly where `log`); otherwise a
// float is multiplied by 0.8 or 1.2 (even odds), an int too (rounded; moved by 1 when rounding keeps it
// equal), clamped to [low, high]; a categorical keeps its value. A parameter that becomes active is drawn;
// one that becomes inactive is dropped.
Params Perturb(const SearchSpace& space, const Params& source, double resample_probability, uint64_t rng_seed);

}  // namespace ladder::search
