#pragma once
// A user's network: a module scripted (torch.jit.script) or traced (torch.jit.trace) in Python and saved with
// torch.jit.save, trained by ladder-train as `--model torchscript:FILE` like the built-in models (models.h).
//
// Contract (README, "Your own model"):
//   * forward(x) takes a batch shaped [N, sample shape...] (as the data says: --input-shape) and returns what the
//     data's task expects (task.h): [N, classes] for classification, [N, classes, H, W] for segmentation,
//     [N, T, vocab] for token sequences. Accuracy and --save-predictions read it.
//   * Optionally a method loss(x, y) (@torch.jit.export) returning the batch's mean loss as a scalar: it replaces
//     the task's loss in training and in the validation loss. y is the labels as the data has them: int64 [N]
//     for classification (one label per sample), [N, label_size] otherwise.
//   * Its parameters are the module's parameters that require a gradient (the others are kept as buffers); its
//     buffers (batch-norm statistics, updated in place as BatchNorm does: a buffer the module replaces by a new
//     tensor is no longer the one registered here) are broadcast from rank 0 at the start, as DDP does, and
//     checkpointed with the parameters (each rank updates its own statistics from its own batches in between).
//   * Under autocast (--precision bf16) the module runs without the graph executor's optimizations (Call).
//
// The wrapper registers the module's own tensors (no copy) as the parameters and buffers of a torch::nn::Module,
// so the training loop — the gradient reducer's buckets, the optimizers, checkpoints, device moves — works on them
// as on a built-in model's; train()/eval() reach the scripted module too.
#include <torch/script.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trainer/csv_dataset.h"
#include "trainer/models.h"

namespace ladder::trainer {

inline constexpr const char* kTorchScriptModelPrefix = "torchscript:";

class TorchScriptNetwork final : public Network {
 public:
  // `flatten_labels`: loss(x, y) gets y as [N] (one label per sample) instead of [N, 1].
  TorchScriptNetwork(torch::jit::Module module, bool flatten_labels);

  torch::Tensor forward(torch::Tensor x) override;
  bool HasOwnLoss() const override { return has_loss_; }
  torch::Tensor OwnLoss(const torch::Tensor& x, const torch::Tensor& y) override;
  std::vector<bool> NoWeightDecay() const override { return no_decay_; }
  void train(bool on = true) override;

  // The scripted module's names of parameters(), in its order ("features.0.weight").
  const std::vector<std::string>& parameter_names() const { return names_; }

 private:
  // Runs the module's method `name` ("forward", "loss"), called `method` in errors ("forward(x)").
  torch::Tensor Call(const char* name, const char* method, std::vector<c10::IValue> args);

  torch::jit::Module module_;
  bool has_loss_ = false, flatten_labels_ = false, has_training_ = false;
  std::vector<std::string> names_;
  std::vector<bool> no_decay_;
};

// Whether a parameter is a bias or a normalization parameter, which get no weight decay (nor a trust ratio):
// one with at most one dimension, one whose name ends in "bias", or one that belongs to a module whose type's
// name says it normalizes (BatchNorm*, LayerNorm, GroupNorm, InstanceNorm*, RMSNorm, or any *Norm* class).
bool IsBiasOrNormParameter(const std::string& name, const torch::Tensor& p, const std::string& owner_type);

// Loads `path` (torchscript_file.h) and checks it against the data: forward on two samples (eval mode, no
// gradient) returns the task's shape and the task's loss takes it, and loss(x, y), where defined, returns a
// scalar. nullptr with *error (one line naming the file) otherwise.
std::shared_ptr<Network> MakeTorchScriptNetwork(const std::string& path, const Dataset& meta, std::string* error);

}  // namespace ladder::trainer
