#pragma once
// Whether a target batch's LR is known well enough, and if not, which probe settles it (pure; lr_laws.h fits).
//
//   flag        a target needs a probe when the consistent laws' full fits part by more than
//               options.max_disagreement octaves there, when the prediction sits at the stability edge's cap
//               (the laws run into the edge there: the draws pile up at it and would read as certainty, while the
//               truth may lie anywhere below it), when the posterior's 80th-percentile regret is above
//               options.max_regret, or when more than options.max_miss_probability of the posterior lies farther
//               than options.max_miss_octaves from the prediction (the regret's curvature is an extrapolation: a
//               flat basin reads as a small regret however wide the posterior), or, where a probed batch lies
//               at or below the target (its nearest such anchor, lr_laws.h), when that batch has fewer than 2
//               seeds measured at 3 LRs (one seed cannot measure the scatter of one seed's optimum there), when
//               the target lies past the largest probed batch (its LR rests on a law's slope beyond the last
//               measurement, which no probe checked) or when the anchor alone (its sd) would miss by more than
//               max_miss_octaves with more than max_miss_probability: the laws past the sweep lean on the
//               anchor, and a law fitted through the probe's own points can look surer than they are; and at or
//               past a
//               probe whose best LR is the highest or lowest it ran (LawSet::censored: not bracketed)
//   candidates  batches options.factors × the sweep's largest batch, not past the target, and the target itself
//               where it lies past the largest of them once that one is settled (options.probe_target: the
//               ladder climbs rung by rung; settled: 2 or more seeds measured at 3 LRs there, and one seed's
//               scatter over √seeds leaves at most max_miss_probability beyond max_miss_octaves), or where the
//               target is itself measured but not settled (another seed there); none below the nearest probed
//               batch at or under the target (it anchors the target), reached on the sweep's own nodes (the most nodes any trial at the sweep's largest batch used) with micro-batches
//               = P / the sweep's largest batch (gradient accumulation)
//   LRs         options.lrs LRs evenly from the lowest consistent law's prediction at P − lr_margin_octaves to
//               the highest + lr_margin_octaves (at least 1 octave wide, at most max_lr_step_octaves between two;
//               wider, centred on the laws' weighted median: later probes and extensions climb from there),
//               kept half an octave below the lowest LR that diverged at P and at or below the stability edge's
//               cap. A last probe (the budget left after it, options.runs_left less its runs, affords no other
//               probe) is the only measurement left to tell the laws apart: it spans them with steps up to
//               last_probe_step_octaves, centred on the middle of that span where it is wider still
//   cost        each LR is one run; with a budget in epochs a run at any batch on the same nodes costs what one
//               swept run at the sweep's largest batch cost: options.node_hours_per_run
//   choice      the largest expected drop in p80 regret per node-hour. The expectation is a preposterior over the
//               mixture's draws: each draw in turn plays the truth; the probe is taken to measure its x*(P) to
//               options.probe_sigma_octaves (the precision of a 3-LR, one-seed parabola), the draws are
//               reweighed by a Gaussian kernel on their own x*(P), and the target's p80 regret is recomputed
//               about the reweighed median; the average over the truths is the p80 after the probe
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "search/scaling/extrapolation.h"
#include "search/scaling/lr_laws.h"

namespace ladder::search {

struct ProbeOptions {
  std::vector<int> factors = {2, 4, 8, 16};
  bool probe_target = true;         // a target past the largest factor's batch is a candidate itself once that
                                    //   batch is settled (2+ seeds pin its optimum): the ladder climbs rung by
                                    //   rung. Measured: teacher_noisy's and teacher_adamw's falling 8,192 (1.13 and
                                    //   0.78 octave -> 0.34 and 0.07); bench/climb --quick unchanged (its budget
                                    //   ends before the top rung settles). Before (once the rung was measured at
                                    //   all): bench/climb's median miss 0.085 -> 0.135 octave
  int lrs = 3;
  double max_lr_step_octaves = 0.5;  // the LRs of a probe lie no farther apart than this (or 1 octave in all)
  double last_probe_step_octaves = 1.0;  // ... or this, for a probe the budget cannot follow with another
  double runs_left = 1e300;         // the budget left, in runs of node_hours_per_run (the climb sets it)
  double lr_margin_octaves = 0.5;
  double probe_sigma_octaves = 0.2;
  double max_regret = 0.01;         // p80 regret above this flags a target
  double max_disagreement = 0.5;    // octaves between consistent laws above this flags a target
  double max_miss_octaves = 0.5;    // a target is flagged when more than max_miss_probability of the posterior
  double max_miss_probability = 0.1;  //   lies farther than this from the prediction
  double node_hours_per_run = 1.0;  // one swept run at the sweep's largest batch (1: count in runs)
  int64_t sweep_largest_batch = 0;  // 0: the largest batch among the trials given
  int max_truths = 200;             // draws that play the truth in the preposterior (evenly strided)
};

struct TargetCheck {
  LrPosterior posterior;
  bool needs_probe = false;
  std::string why;  // "laws part by 0.83 octave", "the prediction is at the stability edge", "p80 regret 2.1%", or empty
};
TargetCheck CheckTarget(const LawSet& set, const std::vector<MixtureDraw>& mixture, int64_t target,
                        const ProbeOptions& options);

struct Probe {
  int64_t global_batch = 0;
  int64_t target_batch = 0;   // the target it was chosen for
  int nodes = 1;              // per trial: no more than the sweep used
  int micro_batches = 1;      // gradient accumulation steps to reach global_batch on those nodes
  std::vector<double> lrs;    // peak LRs, ascending
  double node_hours = 0;
  double p80_before = 0;      // the target's p80 regret now, and expected after the probe
  double p80_after = 0;
  bool extension = false;     // more LRs for the previous probe (the runner should reuse its seed)
};

// The candidate probe batches for `target` (see the header comment); `measured`: the largest batch settled.
std::vector<int64_t> CandidateBatches(int64_t sweep_batch, int64_t measured, int64_t target, const ProbeOptions& options);

// The best probe for `target`; nullopt when no candidate batch lies between the surface's largest and the target.
std::optional<Probe> ProposeProbe(const LawSet& set, const std::vector<MixtureDraw>& mixture,
                                  const std::vector<ScaleTrial>& trials, int64_t target,
                                  const ProbeOptions& options);

// A probe whose best LR (seed-mean loss) is its lowest or highest convergent one did not bracket its optimum:
// one more LR beyond that side (the probe's spacing, at least half an octave); nullopt when bracketed. A diverged
// LR above closes the high side; so does the stability edge's cap (log2; NaN: none): the LR above goes no higher
// than the cap, and when the best LR is within 1/16 octave of it the gap to the LR below is halved until it is a
// quarter octave (just under the edge the loss is a cliff: the cap itself may be well past the optimum).
std::optional<Probe> ExtendProbe(const std::vector<ScaleTrial>& trials, const Probe& last, const ProbeOptions& options,
                                 double cap_log2 = kNaN);

// The preposterior: expected p80 regret at `target` after measuring x*(probe_batch) (see the header comment).
double ExpectedP80After(const LawSet& set, const std::vector<MixtureDraw>& mixture, double probe_batch,
                        double target, const ProbeOptions& options);

// The trials' node-hours: Σ nodes·compute relative to one run at the largest batch (compute 0: steps × batch),
// × node_hours_per_run.
double SweepNodeHours(const std::vector<ScaleTrial>& trials, double node_hours_per_run);

}  // namespace ladder::search
