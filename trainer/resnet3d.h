#pragma once
// The cnn of models.h for volumes: the same small ResNet with 3×3×3 convolutions, for samples shaped
// [C, D, H, W] (--input-shape C,D,H,W, cosmo:, an HDF5 X of rank 5): a stem, --depth stages of two basic blocks
// (the first of stages 2.. strides 2 and doubles the channels), global average pool, a linear head of `outputs`
// (classes, or regression targets). Unlike the 2D cnn it has no normalization, as CosmoFlow's network (Mathuriya
// et al. 2018): a per-sample norm (GroupNorm) divides out each volume's contrast, which is what a density cube's
// parameters (cosmo:'s amplitude) are read from; batch statistics would break N ranks × b = 1 rank × N·b.
#include <memory>

#include "trainer/models.h"

namespace ladder::trainer {

std::shared_ptr<Network> MakeResNet3d(int64_t channels, int64_t outputs, const ModelOptions& o);

}  // namespace ladder::trainer
