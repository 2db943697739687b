#pragma once
// ScalePlan: the schedule of a large run (a "hero run") extrapolated from a ScalingReport — global batch and
// its ramp, peak learning rate, warmup, decay, optimizer, predicted steps and loss with intervals, and for each
// choice the fit it came from. A plain value: the CLI prints it, the coordinator stores it and watches the
// live loss against `loss_band`. Pure: no I/O.
//
//   global batch   target.global_batch, or target.nodes × target.per_node_batch, or (compute budget only)
//                  the critical batch B_crit (tradeoff fit, else the measured noise scale), rounded to a power
//                  of two within [smallest swept batch, options.max_global_batch]
//   ramp           McCandlish et al.: the useful batch grows with the noise scale during training. When trials
//                  measured B_simple early (noise_scale_start) below the final batch, the batch starts at the
//                  power of two nearest that (at least the largest swept batch... see options) and doubles at
//                  evenly spaced steps over the first options.ramp_fraction of the run
//   peak LR        PredictLr(report, batch, LrRule::kFit) with its interval
//   warmup         the anchor trial's warmup fraction of its steps, at least options.min_warmup_fraction when
//                  the batch is beyond the swept range (Goyal et al. warm up whenever the LR is scaled up)
//   decay          the anchor trial's
//   optimizer      the anchor trial's; replaced by its layer-wise form (sgd → lars or larc, adam/adamw → lamb)
//                  when the batch is at least options.layerwise_batch or options.layerwise_noise_multiple ×
//                  B_crit (You et al. 2017, 2019)
//   steps          budget examples / batch (target.examples, or target.compute / compute per example);
//                  without a budget, the steps to the tradeoff's target loss at that batch, × options.
//                  steps_margin
//   loss           final loss ≈ a + b·log(S_eff), S_eff = S / (1 + B_crit/B): the per-batch best losses of the
//                  swept budgets put on one axis by the steps–examples trade-off; loss_band evaluates it at
//                  10 points along the run (the loss a run ending there would reach: an envelope the live
//                  loss of a decaying schedule approaches from above)
#include <cstdint>
#include <string>
#include <vector>

#include "search/scaling/extrapolation.h"

namespace ladder::search {

struct PlanTarget {
  int nodes = 0;                 // with per_node_batch: global batch = nodes × per_node_batch
  int64_t per_node_batch = 0;
  int64_t global_batch = 0;      // explicit global batch (wins over nodes × per_node_batch)
  double examples = 0;           // budget in examples (0: none)
  double compute = 0;            // budget in the trials' compute unit (0: none); needs compute_per_example
  double compute_per_example = 0;
};

struct PlanOptions {
  int64_t max_global_batch = int64_t{1} << 20;
  double ramp_fraction = 0.2;           // the ramp spans this fraction of the steps
  int max_ramp_doublings = 4;
  double min_warmup_fraction = 0.05;    // beyond the swept batches
  int64_t layerwise_batch = 8192;       // LARS/LARC/LAMB at or above this global batch
  double layerwise_noise_multiple = 8;  // ... or at or above this multiple of B_crit
  bool prefer_larc = false;             // sgd → larc rather than lars
  double steps_margin = 1.0;            // no budget: steps to the target × this
  LrRule lr_rule = LrRule::kFit;
  // The plan says so when peak_lr's bootstrap interval is wider than this, or has no finite positive bounds
  // (bench/extrapolation: a 1% loss regret needed the LR within windows 0.2-1.6 octaves wide, wider only where
  // the loss is flat in the LR).
  double max_lr_interval_octaves = 1.0;
  int min_batch_sizes = 3;              // fewer swept batch sizes: a warning (2 points fit any power law)
  double max_extrapolation = 64;        // a target beyond this multiple of the largest swept batch: a warning
};

struct RampStage {
  int64_t step = 0;          // from this optimizer step on
  int64_t global_batch = 0;  // the global batch (a power-of-two multiple of the first stage's)
};

struct LossBandPoint {
  int64_t step = 0;
  Interval loss;
};

struct ScalePlan {
  int nodes = 0;                  // 0: not given
  int64_t global_batch = 0;       // the batch at the end of the ramp
  std::vector<RampStage> ramp;    // empty: the whole run at global_batch
  Interval peak_lr;
  double interval_level = 0.90;   // the stated intervals' nominal central coverage (ScalingReport::interval_level)
  int64_t warmup_steps = 0;
  std::string decay = "none";
  std::string optimizer = "sgd";
  int64_t steps = 0;
  Interval steps_to_target;       // NaN when there is no tradeoff fit
  double target_loss = kNaN;
  Interval final_loss;            // NaN when the loss model could not be fitted
  std::vector<LossBandPoint> loss_band;
  double linear_rule_lr = kNaN;   // the baselines at the same batch, for comparison
  double sqrt_rule_lr = kNaN;
  double stability_edge = kNaN;   // ScalingReport::stability_edge, NaN when not measured
  // One line per choice: "peak_lr: noise_fit ε_max=0.8 [0.7, 0.9], B_noise=1200 (measured B_simple)".
  std::vector<std::string> sources;
  std::string lr_rule;            // the rule that set peak_lr (LrRuleName; "fit" resolves to the law it used)
  std::string lr_rule_why;        // why that rule, with the numbers behind the choice
  // What the sweep cannot support (ladder promote prints them as warnings): fewer than options.min_batch_sizes
  // swept batch sizes, a batch's best LR at the edge of its swept LRs, a target more than
  // options.max_extrapolation times the largest swept batch.
  std::vector<std::string> warnings;
};

// Errors: no batch (neither global_batch, nodes × per_node_batch, nor a budget), a batch beyond
// options.max_global_batch, no LR fit in the report for options.lr_rule.
Fitted<ScalePlan> PlanRun(const ScalingReport& report, const std::vector<ScaleTrial>& trials,
                          const PlanTarget& target, const PlanOptions& options = {});

}  // namespace ladder::search
