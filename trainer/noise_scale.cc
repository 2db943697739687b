#include "trainer/noise_scale.h"

namespace ladder::trainer {

void NoiseScaleEstimator::Add(double small_sq, int64_t b_small, double big_sq, int64_t b_big) {
  if (b_big <= b_small || b_small <= 0) return;
  const double bs = static_cast<double>(b_small), bb = static_cast<double>(b_big);
  const double g2 = (bb * big_sq - bs * small_sq) / (bb - bs);
  const double s = (small_sq - big_sq) / (1.0 / bs - 1.0 / bb);
  g2_ = decay_ * g2_ + (1 - decay_) * g2;
  s_ = decay_ * s_ + (1 - decay_) * s;
  weight_ = decay_ * weight_ + (1 - decay_);
}

std::optional<double> NoiseScaleEstimator::BSimple() const {
  if (weight_ == 0 || g2_ <= 0) return std::nullopt;
  return s_ / g2_;  // the bias corrections cancel in the ratio
}

}  // namespace ladder::trainer
