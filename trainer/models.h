#pragma once
// The networks ladder-train trains. Each maps a batch of samples shaped as the data set says (Dataset::shape)
// to logits:
//   mlp          [N, features...]  → [N, classes]         flattens its input; --depth hidden layers of --width
//   cnn          [N, C, H, W]      → [N, classes]         small ResNet: a 3×3 stem, --depth stages of two basic
//                                                          blocks (the first of stages 2.. strides 2, channels
//                                                          double), global average pool, linear head
//                [N, C, D, H, W]   → [N, classes]         the same with 3×3×3 convolutions, no norm (resnet3d.h)
// mlp and cnn also regress: their `classes` outputs are then the data's targets (task.h).
//   unet         [N, C, H, W]      → [N, classes, H, W]   segmentation: a two-level encoder/decoder with skip
//                                                          connections (H and W must be divisible by 4)
//   transformer  [N, T] token ids  → [N, T, vocab]        causal language model: token + learned position
//                                                          embeddings, --depth pre-norm blocks of --heads-head
//                                                          self-attention and a 4× MLP, tied output head
//   torchscript:FILE  a user's module saved by torch.jit.save (torchscript_model.h): whatever the task expects
//
// Normalization is GroupNorm (convolutions) and LayerNorm (transformer): per-sample statistics, so a step's
// gradient does not depend on how the global batch is split across ranks — N ranks × batch b stay exactly
// 1 rank × batch N·b — and a learning-rate/batch-size fit is not confounded by batch statistics.
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "trainer/csv_dataset.h"

namespace ladder::trainer {

struct ModelOptions {
  std::string name = "mlp";  // mlp | cnn | unet | transformer | torchscript:FILE
  int width = 128;           // mlp: hidden units; cnn/unet: channels of the first stage; transformer: d_model
  int depth = 2;             // mlp: hidden layers; cnn: stages; unet: convs per level (≥1); transformer: blocks
  double dropout = 0.0;
  int heads = 4;             // transformer attention heads (width must be divisible by it)
};

class Network : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(torch::Tensor x) = 0;
  // A network with a loss of its own (a TorchScript module's loss(x, y): torchscript_model.h) is trained and
  // validated on it instead of the task's (task.h NetworkLoss).
  virtual bool HasOwnLoss() const { return false; }
  virtual torch::Tensor OwnLoss(const torch::Tensor& x, const torch::Tensor& y) { return {}; }
  // Per parameter (parameters()' order): true where no weight decay applies whatever its shape (optim.h); empty:
  // the shape alone decides.
  virtual std::vector<bool> NoWeightDecay() const { return {}; }
};

// Builds `o.name` for data shaped like `meta` (its shape, classes and task). nullptr with *error naming the
// option and the mismatch ("model cnn needs image-shaped samples (C,H,W); this data has shape [64]: use
// --input-shape 1,8,8") otherwise.
std::shared_ptr<Network> MakeNetwork(const ModelOptions& o, const Dataset& meta, std::string* error);

// The model that suits a data set when none is named: unet for segmentation, transformer for token
// sequences, mlp otherwise.
std::string DefaultModelFor(const Dataset& meta);

}  // namespace ladder::trainer
