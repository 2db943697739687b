#pragma once
// What "loss" and "accuracy" mean for each task (csv_dataset.h Task), the same for training and evaluation:
//   classify  logits [N, C],       labels [N]       cross entropy; accuracy
//   segment   logits [N, C, H, W], labels [N, H·W]  class-weighted cross entropy averaged over pixels;
//                                                   pixel accuracy and mean IoU over classes
//   lm        logits [N, T, V],    labels [N, T]    cross entropy per token; token accuracy, perplexity
//   regress   outputs [N, K],      targets [N, K]   --loss mse (default), l1 or huber (delta 1) averaged over
//                                                   the N·K values; MAE and R² (1 − SS_res/SS_tot per target
//                                                   around the evaluated rows' mean, averaged over targets)
// The weighted loss is Σ w_y·ℓ / (number of pixels), not PyTorch's Σ w_y·ℓ / Σ w_y: its normalizer does not
// depend on the batch, so N ranks × batch b average to exactly the loss of 1 rank × batch N·b.
#include <torch/torch.h>

#include <map>
#include <string>

#include "trainer/csv_dataset.h"
#include "trainer/models.h"

namespace ladder::trainer {

struct LossSpec {
  Task task = Task::kClassify;
  torch::Tensor class_weights;  // segmentation: [C] on the model's device (undefined: unweighted)
  std::string regression_loss = "mse";  // regress: mse | l1 | huber
};

// Mean loss of a batch (logits are cast to float32 first, so bf16 autocast keeps a float32 loss).
torch::Tensor TaskLoss(const torch::Tensor& logits, const torch::Tensor& labels, const LossSpec& spec);

// The mean loss of `net` on a batch: its own loss(x, y) where it has one (models.h), else the task's on forward(x).
torch::Tensor NetworkLoss(Network& net, const torch::Tensor& x, const torch::Tensor& y, const LossSpec& spec);

// Class weights for `train`'s labels from --class-weights ("auto": inverse square root of each class's
// frequency, normalized so that the frequency-weighted mean weight is 1; "none"; or a list of C numbers).
// Returns an undefined tensor for "none"; false with *error when a list has the wrong length.
bool ClassWeights(const std::string& option, const Dataset& train, torch::Tensor* out, std::string* error);

struct EvalOptions {
  torch::Device device = torch::kCPU;
  bool bf16 = false;
  int64_t max_rows = 0;  // evaluate only the first max_rows rows (0: all)
};

// Evaluates `net` (in eval mode, no gradient) on `x`/`y` (CPU tensors) in chunks (the loss: the network's own
// where it has one, models.h). Keys: "loss", "accuracy" (not for regress), and "miou" (segment), "perplexity" (lm)
// or "mae" and "r2" (regress).
std::map<std::string, double> Evaluate(Network& net, const torch::Tensor& x, const torch::Tensor& y,
                                       const LossSpec& spec, int64_t classes, const EvalOptions& options);

// Enables autocast to bfloat16 for `device` while alive (CUDA or CPU); does nothing when !enabled.
class AutocastScope {
 public:
  AutocastScope(torch::Device device, bool enabled);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool enabled_, cuda_, was_enabled_ = false;
};

}  // namespace ladder::trainer
