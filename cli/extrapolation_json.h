#pragma once
// What the dashboard's extrapolation view draws, as the plan JSON's "extrapolation" object (ladder promote puts
// it in PlanJson; pure: the fit and the plan in, JSON out). Every LR is [value, lo, hi] where it has an interval
// (lo/hi null without one) and every curve a list of [batch, lr]:
//   swept           [{batch, lr: [v, lo, hi], loss, trials, at_edge}]: each swept batch's best LR (FindBestLr)
//   laws            [{name, points: [[batch, lr], ...], at_target: [v, lo, hi], chosen, consistent}]: each law
//                   the report has (the default fit's power law, lr_fit, joint_fit, the linear and square-root
//                   rules) drawn at kCurvePoints batches spaced evenly in log from the smallest swept batch to
//                   twice the larger of the target and the largest swept batch; `chosen`: the law that set the
//                   plan's peak LR; `consistent`: whether the data still allow it, null where nothing judged it
//   target          {batch, lr: [v, lo, hi], rule}: the plan's batch and peak LR
//   stability_edge  [v, lo, hi] or null: 2(1 + β)/λ_max where the trials measured their sharpness
//   probes          [{batch, lrs: [...], settled: "..."}]: larger-batch probes the search ran (none yet)
//   interval_level  the intervals' nominal central coverage
#include <nlohmann/json.hpp>

#include "search/scaling/extrapolation.h"
#include "search/scaling/scale_plan.h"

namespace ladder::cli {

inline constexpr int kCurvePoints = 24;

nlohmann::json ExtrapolationJson(const search::ScalingReport& report, const search::ScalePlan& plan);

}  // namespace ladder::cli
