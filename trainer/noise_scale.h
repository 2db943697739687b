#pragma once
// Gradient noise scale measured during training with no extra passes (McCandlish et al. 2018, appendix A).
//
// Each step yields two gradient estimates: the small-batch one (each micro-batch on each rank, B_small
// examples) and the big-batch one (the allreduced, accumulated gradient of the global batch, B_big examples).
// From their squared norms, unbiased estimates of the true gradient's squared norm and of the trace of the
// per-example covariance are
//   |G|²  ≈ (B_big·|G_big|² − B_small·|G_small|²) / (B_big − B_small)
//   tr(Σ) ≈ (|G_small|² − |G_big|²) / (1/B_small − 1/B_big)
// Both are smoothed with an exponential moving average (separately, as the paper advises) and
// B_simple = tr(Σ)/|G|² is the ratio of the averages.
#include <array>
#include <cstdint>
#include <optional>

namespace ladder::trainer {

class NoiseScaleEstimator {
 public:
  explicit NoiseScaleEstimator(double ema_decay = 0.95) : decay_(ema_decay) {}
  // small_sq: mean squared norm of the small-batch gradients; big_sq: squared norm of the big-batch gradient.
  void Add(double small_sq, int64_t b_small, double big_sq, int64_t b_big);
  // B_simple; nullopt until an estimate exists (or when |G|² is not positive yet).
  std::optional<double> BSimple() const;
  double grad_sq() const { return g2_; }
  double trace_sigma() const { return s_; }
  // For checkpoints: {|G|² EMA, tr(Σ) EMA, EMA weight}.
  std::array<double, 3> state() const { return {g2_, s_, weight_}; }
  void set_state(const std::array<double, 3>& st) { g2_ = st[0], s_ = st[1], weight_ = st[2]; }

 private:
  double decay_;
  double g2_ = 0, s_ = 0;
  double weight_ = 0;  // bias correction of the EMAs
};

}  // namespace ladder::trainer
