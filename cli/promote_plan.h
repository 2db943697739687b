#pragma once
// What `ladder promote` computes from a finished search (pure: protos in, values out; cmd_promote.cc does
// the RPCs and the printing):
//   ScaleTrialsFrom  each trial's scale record (search/scaling/extrapolation.h ScaleTrial) read from its stored
//                    metrics and command: global_batch (last value), peak LR (largest `lr`), steps, final and
//                    best `val_loss`, the validation curve, the measured noise scale (median of `noise_scale`
//                    over the second half of the run; early value for the ramp), warmup/decay/optimizer from
//                    the command's --warmup-steps/--decay/--optimizer
//   HeroCommand      the best trial's command with the plan's schedule options put in (--lr, --batch-size per
//                    rank, --warmup-steps, --decay, --optimizer, --batch-ramp, --max-steps, --epochs, and a
//                    checkpoint in {checkpoint_dir} with --resume so that a preempted or requeued hero resumes);
//                    the trials' --curvature-every/--curvature-rows (a measurement for the fit) are dropped
//   HeroSpecYaml     a one-trial search spec for the hero run
//   PlanJson         the plan as JSON: what the coordinator stores with the hero search and watches the live
//                    loss against ("loss_band": [[step, lo, hi], ...], "stop_outside_band"), and with the fit
//                    behind it what the dashboard's extrapolation view draws ("extrapolation":
//                    cli/extrapolation_json.h)
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/extrapolation_json.h"
#include "ladder/v1/ladder.pb.h"
#include "search/scaling/scale_plan.h"

namespace ladder::cli {

namespace v1 = ::ladder::v1;

// `trials` with their metrics (GetTrial include_metrics). Only completed trials and trials that diverged
// (failed with the trainer's exit code 3) are used; `notes` gets one line per trial left out and why.
std::vector<search::ScaleTrial> ScaleTrialsFrom(const v1::Search& search, const std::vector<v1::Trial>& trials,
                                                std::vector<std::string>* notes);

struct HeroShape {
  int nodes = 1;
  int ranks_per_node = 1;
  std::string pool;  // resources.pool: the nodes of the hero run's own Slurm job (promote --submit); "": shared
};

// Errors (empty vector, *error set): the best trial has no command, the batch does not split over the ranks.
std::vector<std::string> HeroCommand(const v1::Trial& best, const search::ScaleTrial& best_scale,
                                     const search::ScalePlan& plan, const HeroShape& shape, std::string* error);

std::string HeroSpecYaml(const v1::Search& search, const std::vector<std::string>& command, const HeroShape& shape);

// The band the hero run's live val_loss is expected in, at 10 points along its steps: at a fraction f of the
// run, the spread of the near-optimal swept runs' losses at the same fraction of theirs (runs whose final loss
// is within 25% of the best), moved so that the end of the band is the plan's final-loss interval (its value when
// the prediction has no interval: then the band is the runs' spread alone). (The plan's
// own loss_band is an envelope — the loss a run ending at that step would reach — that the live loss of a
// decaying schedule only approaches from above; it is kept as "final_loss_envelope".) Empty without curves.
std::vector<search::LossBandPoint> LiveBand(const search::ScalePlan& plan, const std::vector<search::ScaleTrial>& trials);

// `report`: the fit the plan came from (adds "extrapolation"); nullptr leaves it out. `climb`: the climb's dry
// run at the plan's batch (adds its laws and "verdict" to "extrapolation").
nlohmann::json PlanJson(const search::ScalePlan& plan, const std::vector<search::LossBandPoint>& live_band,
                        const HeroShape& shape, bool stop_outside_band,
                        const search::ScalingReport* report = nullptr, const ClimbVerdict* climb = nullptr);

}  // namespace ladder::cli
