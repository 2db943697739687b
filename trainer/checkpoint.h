#pragma once
// Checkpoints of a training run: parameters, optimizer state and step count, the schedule's position (the
// global step), the data position (epoch and offset in the sample stream: each epoch's permutation is a function
// of the seed and the epoch, so the position is enough), the noise-scale averages and the CPU RNG state (dropout).
// Written atomically: a temp file in the same directory, fsync, rename — a crash leaves the old checkpoint
// or the new one, never half of one — and never over a newer run's (the run epoch: trainer/checkpoint_epoch.h). A resumed run continues the loss curve of an uninterrupted one.
#include <torch/torch.h>

#include <string>
#include <vector>

#include "trainer/noise_scale.h"
#include "trainer/optim.h"

namespace ladder::trainer {

struct TrainPosition {
  int64_t step = 0;    // optimizer steps done
  int64_t epoch = 0;   // epoch of the next sample (sample_stream.h)
  int64_t offset = 0;  // its position in that epoch's permutation
  double allreduce_s = 0;
};

// `run_epoch`: this run's assignment epoch (LADDER_ASSIGNMENT_EPOCH; 0: not run by ladder): the save is refused
// (false, *error saying so) when a newer run of the trial saved `path` (trainer/checkpoint_epoch.h).
bool SaveCheckpoint(const std::string& path, const std::vector<torch::Tensor>& params, Optimizer& opt,
                    const NoiseScaleEstimator& noise, const TrainPosition& pos, std::string* error,
                    int64_t run_epoch = 0);

// Restores everything into the given objects (shapes must match). false with *error naming the file and
// the mismatch otherwise.
bool LoadCheckpoint(const std::string& path, std::vector<torch::Tensor>& params, Optimizer& opt,
                    NoiseScaleEstimator& noise, TrainPosition* pos, std::string* error);

}  // namespace ladder::trainer
