#pragma once
// `scales:` — a search that plans the small-scale trials a scale fit needs (`ladder promote` fits the
// best learning rate against the global batch from them).
//
//   scales:
//     global_batch: [32, 64, 128, 256]   # the global batches to sweep: ascending, distinct, at least 2
//     lr: {low: 0.01, high: 0.16}        # the learning-rate window at the smallest batch (log grid)
//     per_octave: 2                      # grid points per octave of learning rate (default 2)
//     follow: sqrt                       # how the window moves with the batch B: none | sqrt | linear
//                                        # (window x (B / B0)^0, ^0.5 or ^1; default sqrt, between the rules)
//     extend: 2                          # at most this many extra learning rates per batch, beyond the edge
//                                        # where the batch's best one sits (default 2; 0: the grid only)
//     probes: auto                       # auto | off: whether larger-batch probes may settle the hero run's LR
//                                        # where the sweep cannot (`ladder promote` says which probe)
//     probe_budget: 0.1                  # the probes' node-hours as a fraction of the sweep's, in (0, 1]
//
// The search's parameters are `global_batch` (int) and `lr` (float, log): write them into the command, e.g.
// `--batch-size {global_batch} --lr {lr}` (one rank) — `space:` and `sampler:` are left out. The climb's probes
// (`ladder promote --probe`) run as trials of the same search at a larger global_batch; `{micro_batches}` (1 for
// the sweep's trials) is how many micro-batches reach it on the sweep's nodes: `--micro-batches {micro_batches}`.
// The trials are the grid (every batch x its window, batch by batch), then, once a batch's grid points have all
// ended, one more learning rate beyond the edge while its best completed one is at an edge of those tried there
// (up to `extend`), so every batch's best learning rate ends up bracketed. max_trials defaults to the grid size
// plus extend x batches (probes not counted).
#include <cstdint>
#include <vector>

#include "search/core/space.h"

namespace ladder::search {

inline constexpr const char* kScalesBatchParam = "global_batch";
inline constexpr const char* kScalesLrParam = "lr";
inline constexpr int kDefaultScalesPerOctave = 2;
inline constexpr int kDefaultScalesExtend = 2;
inline constexpr double kDefaultScalesProbeBudget = 0.1;  // search/scaling/climb.h ClimbOptions::probe_budget

struct ScalesOptions {
  bool enabled = false;  // the spec has `scales:`
  std::vector<int64_t> batches;
  double lr_low = 0, lr_high = 0;
  int per_octave = kDefaultScalesPerOctave;
  double follow = 0.5;  // exponent: none 0, sqrt 0.5, linear 1
  int extend = kDefaultScalesExtend;
  bool probes = true;  // probes: auto (true) | off
  double probe_budget = kDefaultScalesProbeBudget;
};

// The learning rates of batch `b`'s window: k / per_octave octaves from lr_low x (b / batches[0])^follow, for
// every k that keeps it within the window's width (both ends included, up to rounding).
std::vector<double> ScalesWindow(const ScalesOptions& o, int64_t batch);

// The grid, batch by batch (ascending LR within a batch).
std::vector<Params> ScalesGrid(const ScalesOptions& o);

// Grid size + extend x batches.
int64_t ScalesMaxTrials(const ScalesOptions& o);

// The space the section defines: global_batch (int, log, between the first and last batch) and lr (float,
// log, spanning every window and the extensions).
SearchSpace ScalesSpace(const ScalesOptions& o);

}  // namespace ladder::search
