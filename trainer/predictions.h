#pragma once
// Validation predictions for ensembles (the search spec's `ensemble:`; format in search/ensemble/ensemble.h and
// docs/METRICS.md): CSV with a header, one line per validation example in data order, the label first and then
// the class probabilities (softmax of the logits). Written atomically: a temp file, fsync, rename.
#include <torch/torch.h>

#include <string>

#include "trainer/models.h"
#include "trainer/task.h"

namespace ladder::trainer {

// Classification only (a segmentation or language-model run has no per-example class vector): false with
// *error naming the flag otherwise, or when the file cannot be written.
bool SavePredictions(Network& net, const torch::Tensor& x, const torch::Tensor& y, const LossSpec& spec,
                     const EvalOptions& options, const std::string& path, std::string* error);

}  // namespace ladder::trainer
