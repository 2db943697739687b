#pragma once
// What the dashboard's extrapolation view draws, as the plan JSON's "extrapolation" object (ladder promote puts
// it in PlanJson; pure: the fit and the plan in, JSON out). Every LR is [value, lo, hi] where it has an interval
// (lo/hi null without one) and every curve a list of [batch, lr]:
//   swept           [{batch, lr: [v, lo, hi], loss, trials, at_edge}]: each swept batch's best LR (FindBestLr)
//   laws            [{name, points: [[batch, lr], ...], at_target: [v, lo, hi], chosen, consistent}]: each law
//                   the report has (the default fit's power law, lr_fit, joint_fit, the linear and square-root
//                   rules) drawn at kCurvePoints batches spaced evenly in log from the smallest swept batch to
//                   twice the larger of the target and the largest swept batch; `chosen`: the law that set the
//                   plan's peak LR; `consistent`: whether the data still allow it, null where nothing judged it.
//                   Then the climb's candidate laws (search/scaling/lr_laws.h: power, saturating, surge,
//                   power+edge, saturating+edge) over the same batches, with `consistent` true/false, `weight`
//                   (AIC) and at_target's interval their seed bootstrap's; `source`: "climb" (absent: the report)
//   verdict         the climb's dry run at the target (search/scaling/climb.h; null without one): {batch, flagged,
//                   why, decided, disagreement_octaves, laws_apart: [low law, high law], lr, lr_80: [lo, hi],
//                   lr_90: [lo, hi], regret: {mean, p80} (relative loss), next_probe: {batch, nodes, micro_batches,
//                   lrs, node_hours, extension} or null, undecided: the sentence or null, probes: "auto" | "off",
//                   probe_budget, sweep_node_hours, probe_node_hours (the probes run so far),
//                   budget_node_hours}; {error} where the laws could not be fitted
//   target          {batch, lr: [v, lo, hi], rule}: the plan's batch and peak LR
//   stability_edge  [v, lo, hi] or null: 2(1 + β)/λ_max where the trials measured their sharpness
//   probes          [{batch, micro_batches, lrs: [...], trials: [numbers], best_lr}]: the larger-batch probes the
//                   search ran (its trials marked probe; extensions with their probe), in the order run; best_lr
//                   is the LR of the lowest final val_loss measured there (null while none converged)
//   interval_level  the intervals' nominal central coverage
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "search/core/scales.h"
#include "search/scaling/climb.h"
#include "search/scaling/extrapolation.h"
#include "search/scaling/scale_plan.h"

namespace ladder::cli {

inline constexpr int kCurvePoints = 24;

// One probe the search ran, read back from its trials (cli/promote_probes.h).
struct ProbeRun {
  int64_t batch = 0;
  int micro_batches = 1;
  std::vector<double> lrs;   // in the order run
  std::vector<int> trials;   // their numbers in the search
  double best_lr = search::kNaN;
};

// The climb's step after the probes run so far (no probe run here) for the plan's batch (cmd_promote.cc
// PlanHero), or why it could not be.
struct ClimbVerdict {
  std::optional<search::ClimbResult> result;
  std::string error;  // FitLaws' message
  bool scales = false;  // the search has `scales:` (its probes can run as its trials: AddProbe)
  bool probes = true;   // the spec's scales.probes (auto)
  double probe_budget = search::kDefaultScalesProbeBudget;
  std::vector<ProbeRun> runs;  // the probes the search ran
  // The climb's outcome at `batch` (the first target), nullptr without a result.
  const search::TargetOutcome* At() const { return result && !result->targets.empty() ? &result->targets[0] : nullptr; }
};

// `climb`: adds its laws and the verdict (nullptr: verdict null).
nlohmann::json ExtrapolationJson(const search::ScalingReport& report, const search::ScalePlan& plan,
                                 const ClimbVerdict* climb = nullptr);

}  // namespace ladder::cli
