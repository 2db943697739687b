#pragma once
// Command-line options of ladder-train. Every flag takes `--flag value` or `--flag=value`.
#include <cstdint>
#include <string>
#include <vector>

#include "trainer/sample_stream.h"

namespace ladder::trainer {

struct TrainArgs {
  std::string data;              // data_sources.h: CSV, idx:, cifar10:, synthetic:, teacher:, climate:, cosmo:,
                                 // markov:, text:, hdf5:
  std::string model;             // mlp | cnn | unet | transformer ("" = the data's default, models.h)
  int heads = 4;                 // transformer attention heads
  int64_t seq_len = 64;          // tokens per sample (text:, markov: default)
  std::string input_shape;       // "C,H,W" or "C,D,H,W": reshape vector samples (CSV) into images or volumes
  std::string class_weights = "auto";  // segmentation loss weights: auto (inverse sqrt frequency) | none | list
  std::string loss = "mse";       // regression loss: mse | l1 | huber
  std::string device = "auto";   // auto | cpu | cuda
  std::string precision = "fp32";  // fp32 | bf16 (autocast)
  int prefetch = -1;             // batches prepared ahead on a background thread (0: none; -1: overlap_rule.h)
  int64_t eval_every = 0;        // also evaluate every N steps (0: only at epoch ends)
  int64_t eval_train_rows = 10000;  // rows of the training set evaluated for the epoch's train_loss
  double val_fraction = 0.2;     // held out with a fixed seed, the same for every trial
  int width = 128;               // mlp hidden units; cnn/unet base channels; transformer d_model
  int depth = 2;
  double dropout = 0.0;
  std::string optimizer = "sgd";  // sgd | adam | adamw | lars | larc | lamb
  double lr = 0.05;
  double momentum = 0.9;
  double weight_decay = 0.0;     // never applied to biases and norm parameters (≤ 1-D tensors)
  bool nesterov = false;
  std::string larc_mode = "clip";
  double trust_coefficient = 0.001;
  double clip_grad_norm = 0.0;   // 0: off
  // Schedule (schedule.h) and peak-LR scaling from a reference global batch.
  int64_t warmup_steps = 0;
  double warmup_fraction = 0;  // warmup over this share of the run's steps (0: --warmup-steps)
  std::string decay = "none";    // none | step | cosine | wsd
  std::vector<int64_t> milestones;
  double gamma = 0.1;
  double final_lr_fraction = 0.0;
  double wsd_decay_fraction = 0.2;
  std::string lr_scaling = "none";  // none | linear | sqrt
  int64_t reference_batch = 0;
  int batch_size = 64;
  int epochs = 10;
  int64_t max_steps = 0;         // 0: no cap
  uint64_t seed = 0;
  int threads = 1;
  int log_every = 10;
  int micro_batches = 1;         // gradient accumulation: the per-rank batch is split into this many
  int accumulate = 1;            // --accumulate K: micro_batches is multiplied by K once parsed (a probe's larger
                                 //   batch in micro-batches the size of the sweep's: --accumulate {micro_batches})
  int noise_scale_every = 10;    // measure the gradient noise scale every N steps (0: never)
  int curvature_every = 0;       // measure the loss curvature (curvature.h) every N steps (0: never)
  int64_t curvature_rows = 1024; // on the first N training rows
  std::vector<RampPoint> batch_ramp;  // global batch × multiplier from a step on (exact sample order)
  // Distributed data parallelism: --batch-size is per rank; the global batch is batch_size × ranks.
  std::string comm = "auto";            // auto | none | gloo | shm | mpi | nccl
  double bucket_cap_mb = 25.0;          // gradient bucket cap (DDP's default)
  std::string fused = "auto";           // auto | off: the fused MLP step (fused_mlp.h) where it applies
  std::string overlap = "auto";         // auto | on | off: allreduce during the backward pass (train_loop.cc)
  bool hierarchical = false;             // reduce in node, allreduce across node leaders, broadcast back
  int ranks_per_node = 0;                // 0: from the launcher's variables
  std::string checkpoint;                // write checkpoints here (atomically)
  int64_t checkpoint_every = 0;          // steps between checkpoints (0: only at the end)
  bool resume = false;                   // continue from --checkpoint when it exists
  std::string save_params;              // rank 0 writes the final parameters here (raw float32), for tests
  std::string save_predictions;         // rank 0 writes the final validation predictions here (CSV, ensembles)
  bool phase_times = false;              // each rank prints its mean time per step in each phase at the end
};

struct ParsedArgs {
  TrainArgs args;
  bool help = false;
  bool version = false;  // --version
  std::string error;  // names the flag and the value
};

ParsedArgs ParseArgs(const std::vector<std::string>& argv);
std::string Usage();

}  // namespace ladder::trainer
