#pragma once
// FusedMlpStep: the forward and backward pass of a plain MLP (Linear, ReLU, ..., Linear: --model mlp without
// dropout) with the mean softmax cross-entropy, on fp32 CPU tensors, written as a few BLAS calls and loops over
// raw memory instead of autograd.
//
// Why: on small models the framework, not the arithmetic, is the step. A 40-128-128-7 MLP at batch 32 spent
// 0.09 ms in LibTorch's forward and 0.15 ms in its backward pass (--phase-times: the dispatcher and the autograd
// engine around 4 MFLOP); here the same step is six sgemm calls, a softmax and a few elementwise loops.
//
// What it computes is what autograd computes (tests/trainer/fused_mlp_test.cc: the parameters after many steps
// against --fused off): for each layer Z = H W^T + b, H' = relu(Z) (not after the last), loss = mean over rows of
// logsumexp(z) - z[label]; then, scaled by `scale` (the caller's share of the batch and 1/ranks),
// dZ = (softmax(z) - onehot) * scale / rows, dW += dZ^T H, db += sum of dZ's rows, dH = dZ W masked by H > 0.
// Gradients are accumulated into each parameter's .grad (defined and zeroed by the caller's ZeroGrad, or
// created here), so the gradient reducer and the optimizer see them as after backward(); or, without accumulate,
// written over whatever .grad held (no zeroing pass over them each step).
//
// BLAS: Fortran sgemm_ from the library LibTorch itself loaded (Debian's libblas.so.3 alternative); where none
// is exported (a LibTorch with MKL linked in statically), ATen's mm into the same buffers.
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

namespace ladder::trainer {

class FusedMlpStep {
 public:
  // nullptr when `params` are not an MLP's (weight [out, in], bias [out] pairs chained from `features` inputs)
  // on fp32 CPU tensors; *why says which.
  static std::unique_ptr<FusedMlpStep> Make(const std::vector<torch::Tensor>& params, int64_t features,
                                            std::string* why);

  // One pass over the batch x [rows, features...] (fp32, contiguous) with int64 labels y [rows]: adds
  // scale * d(mean loss)/d(param) to every parameter's .grad (accumulate), or writes it there (!accumulate: the
  // caller need not zero the gradients first), and returns the mean loss.
  double Step(const torch::Tensor& x, const torch::Tensor& y, double scale, bool accumulate = true);

 private:
  struct Layer {
    torch::Tensor w, b;  // the parameters: w [out, in], b [out]
    int64_t in = 0, out = 0;
  };
  explicit FusedMlpStep(std::vector<Layer> layers) : layers_(std::move(layers)) {}

  std::vector<Layer> layers_;
  std::vector<std::vector<float>> acts_;  // acts_[l]: layer l's output [rows, out] (relu'd except the last)
  std::vector<float> grad_a_, grad_b_;    // dZ of the current layer and of the one below
};

}  // namespace ladder::trainer
