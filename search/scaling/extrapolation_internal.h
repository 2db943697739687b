#pragma once
// Internal to search/ (scale extrapolation): what the parts of FitScaling share. Each declaration names the .cc
// that defines it; extrapolation.cc runs them all on the full data and on every bootstrap replicate.
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "search/scaling/extrapolation.h"
#include "search/scaling/scale_math.h"

namespace ladder::search::extrapolation_internal {

using Group = std::vector<const ScaleTrial*>;

inline bool Convergent(const ScaleTrial& t) { return !t.diverged && std::isfinite(t.final_loss); }

// ---- extrapolation.cc ---------------------------------------------------------------------------------------

// `v` with 4 significant digits (for messages).
std::string Num(double v);
// The first bad field of any trial, as a message naming the trial; empty when every trial is valid.
std::string Validate(const std::vector<ScaleTrial>& trials);
// internal::Spread as an Interval around `value`.
Interval Spread(double value, const std::vector<double>& draws, double level);

// ---- best_lr.cc: the best LR of one sweep -------------------------------------------------------------------

// `lr_lo` / `lr_hi`: the smallest and largest LR swept at this batch, diverged trials included.
std::optional<BestLr> BestLrOf(const Group& sweep, int neighbours, double lr_lo, double lr_hi);

// ---- lr_batch_law.cc: ε_opt(B) = ε_max / (1 + B_noise/B) ----------------------------------------------------

struct LawPoint {
  double batch, lr;
};

struct LawFit {
  double eps_max, b_noise, rms_log2;
  bool identified;
};

// Both parameters from the best LRs alone (lr_fit); nullopt with fewer than 2 points or a single batch.
std::optional<LawFit> FitLawFree(const std::vector<LawPoint>& pts, double max_noise_factor);
// B_noise weighed between the best LRs (sd lr_sigma in ln) and the measurement (sd noise_sigma in ln).
LawFit FitLawJoint(const std::vector<LawPoint>& pts, double measured, double lr_sigma, double noise_sigma,
                   double max_noise_factor);
// ε_max alone, B_noise given (noise_fit).
LawFit FitLawFixedNoise(const std::vector<LawPoint>& pts, double b_noise);

// ---- loss_surface.cc: loss(x, B) ≈ L*(B) + k(B)·(x − c − α·u(B))² -------------------------------------------

// One batch's trials near its best LR: log2 lr, loss relative to the batch's best mean loss, the seed group of
// each (one L* per batch and seed), and optional weights (empty: 1; the laws' bootstrap reweighs seeds).
struct SurfaceBatch {
  int64_t batch = 0;
  double log2_batch = 0;
  double u = 0;                  // log2 B minus the mean over batches
  std::vector<double> x, y, w;
  std::vector<int> group;        // 0..groups-1; 0: seeds seen at fewer than 2 LRs of this batch
  std::vector<int64_t> seed;     // the trial's seed (-1: unknown)
  int groups = 1;
};

// The trials of each batch within `window` octaves of its best LR (at least its 3 LRs nearest that), losses
// relative to the batch's best (`log_loss`: their logarithm, so that a seed that scales a whole curve shifts it
// instead). nullopt when a batch has fewer than 3 distinct LRs or there are < 2 batches.
std::optional<std::vector<SurfaceBatch>> SurfaceData(const std::map<int64_t, Group>& by_batch,
                                                     const std::vector<BestLr>& best, double window,
                                                     bool log_loss = false);

// The least-squares residual of one batch with its optimum at log2 lr `xs`: L* per seed group and one k >= 0
// fitted (weighted by b.w); *k, when given, receives that k (relative loss per octave²).
double BatchSse(const SurfaceBatch& b, double xs, double* k = nullptr);

// Fits (c, α), α in [0, 1]; returns ln lr = a + b ln B like the power fit.
std::optional<internal::Line> FitSurface(const std::map<int64_t, Group>& by_batch, const std::vector<BestLr>& best,
                                         double window);

// ---- tradeoff_fit.cc: steps to a target loss, S(B) = S_min (1 + B_crit/B) -----------------------------------

// Steps until the trial's curve first reaches `target` (interpolated); NaN when it never does or the trial is
// not convergent.
double StepsToTarget(const ScaleTrial& t, double target);

struct TradeoffPoint {
  double batch, steps;
};

// S(B) = S_min (1 + B_crit/B) in log space; returns {S_min, B_crit}.
std::optional<std::pair<double, double>> FitTradeoff(const std::vector<TradeoffPoint>& pts);

// ---- compute_laws.cc: power laws of lr and batch against compute --------------------------------------------

// The trials grouped by compute budget (budgets closer than `tolerance`, relative, are one), ascending.
std::vector<Group> ComputeGroups(const std::vector<const ScaleTrial*>& convergent, double tolerance);

struct LawPair {
  internal::Line lr, batch;
  int points;
};

// ln lr and ln B against ln compute over the trials within `tolerance` (relative) of their budget's best loss.
std::optional<LawPair> FitComputeLaws(const std::vector<Group>& groups, double tolerance);

}  // namespace ladder::search::extrapolation_internal
