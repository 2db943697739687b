#pragma once
// Curvature of the loss along the training trajectory, measured with exact Hessian-vector products (double
// backward) on a fixed sample of training rows:
//   along_gradient  ĝᵀHĝ, ĝ = G/|G|: the curvature in the direction a step moves. Its inverse
//                   |G|²/GᵀHG is McCandlish et al.'s ε_max, the learning rate that minimizes the loss after
//                   one full-batch gradient step (2018, eq. 2.6); a batch of B examples' optimum is
//                   ε_max / (1 + B_noise/B).
//   sharpness       λ_max, the largest Hessian eigenvalue by power iteration (its magnitude: the iteration
//                   converges to the eigenvalue of largest |λ|). Gradient descent with momentum β is stable
//                   along that direction below lr = 2(1 + β)/λ_max.
// Measuring at small batches what bounds the learning rate of a large one, which small batches alone do not
// show (their best LR is set by gradient noise and grows linearly with the batch).
#include <torch/torch.h>

#include <optional>
#include <vector>

#include "trainer/models.h"
#include "trainer/task.h"

namespace ladder::trainer {

struct Curvature {
  double along_gradient = 0;  // ĝᵀHĝ
  double sharpness = 0;       // λ_max (0 when power_iterations is 0)
  double grad_sq = 0;         // |G|² on the sample
};

// Measures on x/y (the caller's fixed sample) in eval mode (no dropout), restoring the module's mode;
// gradients are computed functionally, so the parameters' .grad() and the optimizer are untouched.
// nullopt when the gradient is zero or not finite.
std::optional<Curvature> MeasureCurvature(Network& net, const std::vector<torch::Tensor>& params,
                                          const torch::Tensor& x, const torch::Tensor& y, const LossSpec& spec,
                                          int power_iterations);

}  // namespace ladder::trainer
