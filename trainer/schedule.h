#pragma once
// Learning-rate schedules and the peak-LR scaling rules of large-batch training. Pure functions.
//   warmup: linear from peak/warmup_steps to peak over the first warmup_steps steps (Goyal et al. 2017);
//   decay after warmup: none | step (×gamma at each milestone) | cosine (to final_lr_fraction·peak at
//   total_steps) | wsd (warmup-stable-decay: constant, then linear to final_lr_fraction·peak over the last
//   decay_fraction of total_steps).
//   peak scaling from a reference batch: linear (lr·B/B_ref) or sqrt (lr·√(B/B_ref)).
#include <cstdint>
#include <string>
#include <vector>

namespace ladder::trainer {

struct ScheduleOptions {
  int64_t warmup_steps = 0;
  std::string decay = "none";  // none | step | cosine | wsd
  int64_t total_steps = 0;     // cosine and wsd need it
  std::vector<int64_t> milestones;
  double gamma = 0.1;
  double final_lr_fraction = 0.0;
  double decay_fraction = 0.2;
};

// The learning rate for step `step` (0-based: the step about to run).
double LearningRate(double peak, const ScheduleOptions& o, int64_t step);

// Peak LR for `global_batch` from `base_lr` tuned at `reference_batch` ("none", "linear", "sqrt").
double ScaledPeakLr(double base_lr, int64_t global_batch, int64_t reference_batch, const std::string& rule);

}  // namespace ladder::trainer
