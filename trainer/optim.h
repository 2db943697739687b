#pragma once
// Optimizers of the large-batch toolkit, with the learning rate given at every step (schedules live in
// schedule.h). One interface, one mechanism; PyTorch's update rules:
//   sgd    — momentum (dampening 0), optional Nesterov; weight decay added to the gradient.
//   adamw  — Adam with decoupled weight decay (Loshchilov & Hutter).
//   adam   — Adam with L2 weight decay added to the gradient.
//   lars   — SGD+momentum with a layer-wise trust ratio η·‖w‖/(‖g‖ + λ‖w‖) scaling each layer's step
//            (You et al. 2017).
//   larc   — LARS as NVIDIA Apex LARC: `clip` mode caps the layer rate at the global rate
//            (local = min(trust/lr, 1)), `scale` mode multiplies it (= lars).
//   lamb   — Adam moments with a layer-wise trust ratio ‖w‖/‖update‖ (You et al. 2019).
// Biases and normalization parameters (tensors with ≤ 1 dimension, and those OptimizerOptions::no_decay names)
// get no weight decay and no trust ratio.
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

namespace ladder::trainer {

struct OptimizerOptions {
  std::string name = "sgd";  // sgd | adam | adamw | lars | larc | lamb
  double momentum = 0.9;
  bool nesterov = false;
  double weight_decay = 0.0;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double trust_coefficient = 0.001;  // η of LARS/LARC
  std::string larc_mode = "clip";    // clip | scale
  // Per parameter, in the order given to MakeOptimizer: true where the parameter gets no weight decay and no
  // trust ratio whatever its shape (a TorchScript model's biases and norm parameters found by name:
  // torchscript_model.h). Empty or shorter: the shape alone decides.
  std::vector<bool> no_decay;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // One update of every parameter with a defined gradient, at learning rate `lr`.
  virtual void Step(double lr) = 0;
  // Sets every gradient to none (undefined), so the next backward pass writes fresh ones; gradients that
  // are views into the GradientReducer's buckets must never be accumulated into.
  void ZeroGrad();
  // The state tensors themselves, in a fixed order (a checkpoint saves them and copies into them on load).
  virtual std::vector<torch::Tensor> State() = 0;
  virtual int64_t step_count() const = 0;
  virtual void set_step_count(int64_t steps) = 0;

 protected:
  explicit Optimizer(std::vector<torch::Tensor> params) : params_(std::move(params)) {}
  std::vector<torch::Tensor> params_;
};

// Returns nullptr with *error for an unknown name.
std::unique_ptr<Optimizer> MakeOptimizer(const OptimizerOptions& o, std::vector<torch::Tensor> params,
                                         std::string* error);

// Scales gradients so that their global L2 norm is at most max_norm; returns the norm before clipping.
double ClipGradNorm(const std::vector<torch::Tensor>& params, double max_norm);

}  // namespace ladder::trainer
