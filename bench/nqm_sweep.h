#pragma once
// A sweep and probes on the noisy quadratic model (noisy_quadratic.h), as ScaleTrials: what bench/climb and the
// climb's tests feed to search/scaling's laws. A sweep runs, at each batch, a half-octave grid of LRs with
// `seeds` seeds each (SampledLoss, paired by seed), starting around a guess and extended on whichever side the
// argmin of the seed-mean loss touches until it has `bracket` LRs on each side (a diverged LR closes its side).
// Every trial carries the curvature λ_max = h_max (as ladder-train --curvature-every would measure it) and
// momentum 0 (plain SGD), so the stability edge is 2/h_max. Pure; deterministic for its arguments.
#include <cstdint>
#include <vector>

#include "bench/noisy_quadratic.h"
#include "search/scaling/extrapolation.h"
#include "search/scaling/probe_plan.h"

namespace ladder::bench {

struct NqmSweepPlan {
  std::vector<int64_t> batches = {16, 32, 64, 128, 256};
  int seeds = 3;
  uint64_t seed_base = 0;   // run seeds are seed_base + 1 .. seed_base + seeds
  double first_guess_log2 = -6;  // centre of the first batch's starting grid (log2 lr)
  int start_lrs = 5;        // the starting grid at every batch; the next batch starts one octave per doubling up
  int bracket = 2;          // LRs each side of the argmin
  int max_lrs = 24;
};

// One run of the model as a trial (diverged when its loss is not finite).
search::ScaleTrial NqmTrial(const NoisyQuadratic& q, double lr, int64_t batch, uint64_t seed);

std::vector<search::ScaleTrial> SimulateSweep(const NoisyQuadratic& q, const NqmSweepPlan& plan);

// The probe's runs: one per LR, with `seed`.
std::vector<search::ScaleTrial> SimulateProbe(const NoisyQuadratic& q, const search::Probe& probe, uint64_t seed);

}  // namespace ladder::bench
