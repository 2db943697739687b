#include "trainer/schedule.h"

#include <algorithm>
#include <cmath>

namespace ladder::trainer {

double LearningRate(double peak, const ScheduleOptions& o, int64_t step) {
  if (o.warmup_steps > 0 && step < o.warmup_steps) {
    return peak * static_cast<double>(step + 1) / static_cast<double>(o.warmup_steps);
  }
  const double floor = peak * o.final_lr_fraction;
  if (o.decay == "step") {
    int64_t passed = std::count_if(o.milestones.begin(), o.milestones.end(), [&](int64_t m) { return step >= m; });
    return peak * std::pow(o.gamma, static_cast<double>(passed));
  }
  if (o.decay == "cosine" && o.total_steps > o.warmup_steps) {
    double t = static_cast<double>(step - o.warmup_steps) / static_cast<double>(o.total_steps - o.warmup_steps);
    t = std::clamp(t, 0.0, 1.0);
    return floor + (peak - floor) * 0.5 * (1 + std::cos(M_PI * t));
  }
  if (o.decay == "wsd" && o.total_steps > 0) {
    const auto decay_steps = static_cast<int64_t>(std::llround(o.decay_fraction * static_cast<double>(o.total_steps)));
    const int64_t start = o.total_steps - decay_steps;
    if (step < start || decay_steps <= 0) return peak;
    double t = std::clamp(static_cast<double>(step - start + 1) / static_cast<double>(decay_steps), 0.0, 1.0);
    return peak + (floor - peak) * t;
  }
  return peak;
}

double ScaledPeakLr(double base_lr, int64_t global_batch, int64_t reference_batch, const std::string& rule) {
  if (rule == "none" || reference_batch <= 0) return base_lr;
  const double k = static_cast<double>(global_batch) / static_cast<double>(reference_batch);
  return rule == "sqrt" ? base_lr * std::sqrt(k) : base_lr * k;
}

}  // namespace ladder::trainer
