#include "bench/nqm_sweep.h"

#include <cmath>
#include <limits>
#include <map>
#include <string>

namespace ladder::bench {

search::ScaleTrial NqmTrial(const NoisyQuadratic& q, double lr, int64_t batch, uint64_t seed) {
  search::ScaleTrial t;
  t.id = "b" + std::to_string(batch) + "-lr" + std::to_string(lr) + "-s" + std::to_string(seed);
  t.global_batch = batch;
  t.peak_lr = lr;
  t.steps = q.Steps(batch);
  t.final_loss = q.SampledLoss(lr, batch, seed);
  t.diverged = !std::isfinite(t.final_loss);
  t.sharpness = q.h_max;
  t.momentum = 0;
  t.seed = static_cast<int64_t>(seed);
  return t;
}

namespace {

// Grid index k: lr = 2^(k/2). The seed-mean loss of every swept k (+inf when any seed diverged).
struct BatchSweep {
  std::map<int, double> mean;
};

void RunAt(const NoisyQuadratic& q, const NqmSweepPlan& plan, int64_t batch, int k, BatchSweep& sw,
           std::vector<search::ScaleTrial>& out) {
  double sum = 0;
  for (int s = 1; s <= plan.seeds; ++s) {
    out.push_back(NqmTrial(q, std::exp2(0.5 * k), batch, plan.seed_base + static_cast<uint64_t>(s)));
    sum += out.back().final_loss;
  }
  sw.mean[k] = std::isfinite(sum) ? sum / plan.seeds : std::numeric_limits<double>::infinity();
}

// Sweeps one batch from `centre` (grid index); returns the argmin's grid index.
int SweepBatch(const NoisyQuadratic& q, const NqmSweepPlan& plan, int64_t batch, int centre,
               std::vector<search::ScaleTrial>& out) {
  BatchSweep sw;
  for (int i = 0; i < plan.start_lrs; ++i) RunAt(q, plan, batch, centre - plan.start_lrs / 2 + i, sw, out);
  for (int guard = 0; guard < plan.max_lrs; ++guard) {
    int best = sw.mean.begin()->first;
    for (const auto& [k, l] : sw.mean) {
      if (l < sw.mean[best]) best = k;
    }
    const int lo = sw.mean.begin()->first, hi = sw.mean.rbegin()->first;
    const bool closed_hi = !std::isfinite(sw.mean.rbegin()->second);
    if (best - lo < plan.bracket) {
      RunAt(q, plan, batch, lo - 1, sw, out);
    } else if (hi - best < plan.bracket && !closed_hi) {
      RunAt(q, plan, batch, hi + 1, sw, out);
    } else {
      return best;
    }
  }
  return sw.mean.begin()->first;
}

}  // namespace

std::vector<search::ScaleTrial> SimulateSweep(const NoisyQuadratic& q, const NqmSweepPlan& plan) {
  std::vector<search::ScaleTrial> out;
  int centre = static_cast<int>(std::lround(2 * plan.first_guess_log2));
  int64_t previous = 0;
  for (int64_t batch : plan.batches) {
    if (previous > 0) centre += static_cast<int>(std::lround(2 * std::log2(static_cast<double>(batch) / previous)));
    centre = SweepBatch(q, plan, batch, centre, out);
    previous = batch;
  }
  return out;
}

std::vector<search::ScaleTrial> SimulateProbe(const NoisyQuadratic& q, const search::Probe& probe, uint64_t seed) {
  std::vector<search::ScaleTrial> out;
  for (double lr : probe.lrs) {
    out.push_back(NqmTrial(q, lr, probe.global_batch, seed));
    out.back().nodes = probe.nodes;
  }
  return out;
}

}  // namespace ladder::bench
