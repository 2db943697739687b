#pragma once
// The climb: fit the laws (lr_laws.h) → check every target → propose a probe (probe_plan.h) → run it → refit,
// until no target is flagged (decided) or the next probe does not fit the probe budget (undecided). A probe whose
// LRs do not bracket its optimum is extended one LR at a time (probe_plan.h ExtendProbe), like the sweep. Pure: the
// probe itself runs through the caller's callback, which returns the probe's trials (their global_batch the
// probe's, one per LR; a diverged run comes back with diverged = true). Deterministic for given options and a
// deterministic callback. Errors: the sweep's laws cannot be fitted (FitLaws' message).
//
// Wiring (spec `scales: {probes: auto | off, probe_budget: 0.1}`, `ladder promote --dry-run / --probe`): `ladder
// promote` runs each probe as trials of the search (AddProbe) between steps, so it calls NextProbe with the
// sweep's trials, the probe trials so far and the hero batch; Climb runs the whole loop for a caller with a
// runner (bench/climb, the tests). Every probe trial the callback returns is also in ClimbResult::probe_trials.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "search/scaling/extrapolation.h"
#include "search/scaling/lr_laws.h"
#include "search/scaling/probe_plan.h"
#include "search/scaling/scale_plan.h"

namespace ladder::search {

struct ClimbOptions {
  LawOptions laws;
  ProbeOptions probe;
  double probe_budget = 0.1;  // probes' node-hours as a fraction of the sweep's
  int max_rounds = 12;        // fits (a guard; the budget normally ends the climb first)
};

// Runs one probe; returns its trials (empty: the probe could not run, and the climb stops undecided).
using ProbeRunner = std::function<std::vector<ScaleTrial>(const Probe&)>;

struct LawAtTarget {
  std::string name;
  double lr = kNaN;  // the law's full fit at the target
  double weight = 0;
  bool consistent = false;
};

struct TargetOutcome {
  int64_t global_batch = 0;
  LrPosterior before, after;  // before any probe, and at the end (log2 LRs; exp2 for the LR)
  bool flagged = false;       // the sweep alone flagged it
  std::string flag_why;
  bool decided = false;       // not flagged at the end
  std::vector<LawAtTarget> laws;  // at the end
};

struct ClimbResult {
  bool decided = false;                  // every target
  std::vector<TargetOutcome> targets;    // in the order given
  std::vector<Probe> probes;             // the probes run, in order
  std::vector<ScaleTrial> probe_trials;  // their trials
  double sweep_node_hours = 0, probe_node_hours = 0, budget_node_hours = 0;
  std::optional<Probe> next_probe;       // undecided: the probe that would decide
  std::string undecided;                 // undecided: "the sweep cannot tell A from B (...); one probe at ..."
  LawSet laws;                           // the last fit
};

// `run` may be empty (a dry run: no probe is run).
Fitted<ClimbResult> Climb(const std::vector<ScaleTrial>& sweep, const std::vector<int64_t>& targets,
                          const ProbeRunner& run, const ClimbOptions& options = {});

// One step of the climb, for a caller that runs each probe itself between steps (`ladder promote`, whose probes
// are trials of the search): `probe_trials` are the trials of the probes run so far (their cost, one run each at
// options.probe.node_hours_per_run, counts against the budget; they are fitted with the sweep), `last_probe` the
// last probe proposed and run (not an extension; nullopt: none yet). The result is the climb's state after them:
// targets' `before` and `flagged` from the sweep alone, `after` and `decided` from the sweep and the probes;
// next_probe is the last probe's extension while its optimum is not bracketed (ExtendProbe, at most 3 LRs more,
// as Climb runs them; whether or not a target is still flagged), else, undecided, the probe that would decide.
// `probes` is left empty (the caller has them). Errors: the sweep's laws cannot be fitted.
Fitted<ClimbResult> NextProbe(const std::vector<ScaleTrial>& sweep, const std::vector<ScaleTrial>& probe_trials,
                              const std::optional<Probe>& last_probe, const std::vector<int64_t>& targets,
                              const ClimbOptions& options = {});

// "the sweep cannot tell power (lr 0.52) from saturating (lr 0.31) (0.74 octaves apart at batch 8192); one probe at
// batch 2048, learning rates {0.25, 0.42, 0.71}, about 3 node-hours, decides" where the consistent laws part by
// more than `max_disagreement` octaves there; else "the sweep cannot pin the learning rate at batch T (80%
// interval [a, b], predicted p80 regret r%); one probe at ...". Without a probe: "...; no probe batch lies between
// the sweep and the target".
std::string UndecidedText(const TargetCheck& check, const std::optional<Probe>& probe, double max_disagreement = 0.5);

// The plan's peak LR from the climb's posterior at its batch once probes ran (`ladder promote`'s default rule then:
// measured on bench/extrapolation's real tasks, the climb's LR after the probes missed the oracle by less than the
// default rule fitted to the same sweep and probes, e.g. 0.16 against 0.54 octave at the full synthetic task's
// 8,192): peak_lr the posterior's prediction with its 90% interval, lr_rule "climb" with why, and the plan's
// peak_lr source lines (its law, its uncertainty, where it stands against the stability edge) said again for it.
// `probes_run`: the probes' count, for the text. The loss model and the band do not depend on the LR.
void TakeClimbLr(ScalePlan& plan, const TargetOutcome& outcome, size_t probes_run);

}  // namespace ladder::search
