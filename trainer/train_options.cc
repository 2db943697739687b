// A run's options for its parts (train_options.h).
#include "trainer/train_options.h"

#include <cmath>
#include <utility>

namespace ladder::trainer {

OptimizerOptions OptimizerOptionsFrom(const TrainArgs& a, std::vector<bool> no_decay) {
  OptimizerOptions o;
  o.no_decay = std::move(no_decay);
  o.name = a.optimizer;
  o.momentum = a.momentum;
  o.nesterov = a.nesterov;
  o.weight_decay = a.weight_decay;
  o.trust_coefficient = a.trust_coefficient;
  o.larc_mode = a.larc_mode;
  return o;
}

ScheduleOptions ScheduleFrom(const TrainArgs& a, int64_t total_steps) {
  ScheduleOptions s;
  s.warmup_steps = a.warmup_fraction > 0 ? std::llround(a.warmup_fraction * static_cast<double>(total_steps))
                                         : a.warmup_steps;
  s.decay = a.decay;
  s.milestones = a.milestones;
  s.gamma = a.gamma;
  s.final_lr_fraction = a.final_lr_fraction;
  s.decay_fraction = a.wsd_decay_fraction;
  s.total_steps = total_steps;
  return s;
}

ModelOptions ModelOptionsFrom(const TrainArgs& a, const Dataset& d) {
  ModelOptions m;
  m.name = a.model.empty() ? DefaultModelFor(d) : a.model;
  m.width = a.width;
  m.depth = a.depth;
  m.dropout = a.dropout;
  m.heads = a.heads;
  return m;
}

bool PickDevice(const std::string& want, int local_rank, torch::Device* out, std::string* error) {
  const bool have = torch::cuda::is_available();
  if (want == "cuda" && !have) {
    *error = "--device cuda: no CUDA device is visible to this ladder-train (or it was built with a CPU LibTorch)";
    return false;
  }
  if (want == "cpu" || !have) {
    *out = torch::kCPU;
    return true;
  }
  const auto n = static_cast<int>(torch::cuda::device_count());
  *out = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(local_rank % n));
  return true;
}

}  // namespace ladder::trainer
