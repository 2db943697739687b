#pragma once
// Candidate laws of the best learning rate against the batch, each fitted to the whole loss surface of a sweep
// (and of any probes), with seed-resampled uncertainty, and combined into a posterior of a target's best LR.
//
//   the surface   ln(loss(x, B)/best(B)) ≈ L*(B, seed) + k(B)·(x − x*(B))², x = log2 lr (surface_fit's surface,
//                 loss_surface.cc: BatchSse), with x*(B) given by one law; each law has two parameters, a level
//                 (x* at the reference batch, the geometric mean of the fitted batches) and a shape
//   laws          power        x* = level + α (v − v_ref), α in [0, 1]                        (v = log2 B)
//                 saturating   ε_max / (1 + B*/B), B* free in [B_min/64, B_max·4096]  (McCandlish et al. 2018,
//                              B* not tied to the measured B_simple)
//                 surge        2 ε_max / (√(B_n/B) + √(B/B_n)): rises as √B, peaks at B_n, then falls (Li et
//                              al., NeurIPS 2024); Adam-family optimizers only by default
//                 +edge        min(law, 2(1 + β)/λ_max less edge_margin_octaves) for power and saturating, where
//                              an SGD trial measured λ_max (ScaleTrial.sharpness)
//   bootstrap     Bayesian bootstrap over seeds (ScaleTrial.seed; Exp(1) weights per seed, every law refitted),
//                 else over trials. With n seeds the replicates' spread is widened about the full-data fit by
//                 √((n + 1)/(n − 1)) (the Bayesian bootstrap's small-sample shortfall: its variance is
//                 (n − 1)/(n + 1) of the sampling variance of a mean). Seeds are not the only noise: each
//                 replicate also shifts each batch's optimum by N(0, τ²), τ the best law's rms lack of fit to the
//                 batches' own optima (at least options.location_sd_floor)
//   edge          no posterior draw (nor a law's prediction, when the laws are compared) lies above the edge; the
//                 capped laws and the prediction stay options.edge_margin_octaves below it: at the edge itself
//                 the sharpest direction never decays
//   combination   σ² = the best law's SSE per residual degree of freedom; Δ = (SSE − SSE_best)/σ²; weight ∝
//                 exp(−Δ/2) (AIC: every law has 2 parameters); consistent: Δ ≤ options.reject_delta (χ²₁ 95%).
//                 The posterior of a batch's log2 best LR is the mixture of the consistent laws' bootstrap draws,
//                 by weight; the prediction is the weighted median of the consistent laws' full-data fits (a
//                 skewed bootstrap does not move it), the intervals the mixture's central quantiles (holding it).
//                 With a known edge the prediction is instead the LR (at most the cap) of least expected relative
//                 loss over the draws, each draw's loss max(k_rel·(x − x*)², a/η + b·η/(E − η) with its minimum at
//                 x*): the noise in the sharpest direction diverges at the edge, so a step too high costs more
//   anchor        with probes (options.anchor_above), at each probed batch P each law is moved by its anchor's
//                 weight times its miss at P's own optimum; between probed batches by the two misses interpolated
//                 in log2 batch, past the largest by its miss there (LawSet::FitLog2, DrawLog2): the law supplies
//                 the slope, the nearest measurements the level
//   collapsed     a probe's runs that ended on one plateau past the cliff (CollapsedAsDiverged) count as diverged
//                 in the fit, the bracket and the probe's LRs
//   censored      where the largest probed batch's best LR (seed-mean loss) is the highest it ran (none diverged
//                 above it; not within 0.1 octave of the edge's cap) or the lowest, its optimum is not measured but
//                 bounded: the laws are fitted without that batch (anchored at the next probe, if any), and each
//                 mixture draw is weighed by the chance that one probe would have seen its best LR at the bound,
//                 Φ(±(x*(B) − bound)/sd), sd one seed's scatter about its batch's optimum in the sweep (Mixture);
//                 the prediction is then the mixture's weighted mean: the bound left the draws one-sided, their
//                 median sits by it, and the LR of least expected k_rel·(x − x*)² is the mean (the edge's rule
//                 above, with no edge; with one, that rule decides)
//   regret        k_rel(B): the surface's curvature of the (log) relative loss per octave² at each fitted batch,
//                 extrapolated to a target from the largest batch's k along the slope of ln k against log2 B over
//                 the largest 3 batches (kept in [0, 1]; the sweep's batches only where anchor_above is set: a
//                 probe's few one-seed LRs give a curvature near 0 where they do not bracket its optimum); regret(x_pred) ≈ k_rel·(x_pred − x_true)² over the
//                 posterior draws (mean and 80th percentile)
//
// Pure: no I/O, no threads, no global state; deterministic for a given options.seed. Errors (no trial, fewer
// than 2 batches with 3 convergent LRs) come back as messages; nothing aborts on input.
#include <cstdint>
#include <string>
#include <vector>

#include "search/scaling/extrapolation.h"

namespace ladder::search {

enum class LrLawKind { kPower, kSaturating, kSurge };

struct LawParams {
  double level = 0;  // log2 best LR at the reference batch
  double shape = 0;  // power: α; saturating: log2 B*; surge: log2 B_noise
};

// One law fitted to the surface.
struct LawFit {
  LrLawKind kind = LrLawKind::kPower;
  bool capped = false;           // min(law, stability edge)
  std::string name;              // "power", "saturating", "surge", "power+edge", "saturating+edge"
  LawParams params;              // full-data fit
  std::vector<LawParams> draws;  // bootstrap replicates (already widened)
  double sse = 0;                // surface residual sum of squares (relative losses)
  double delta = 0;              // (sse − best sse) / σ²
  double weight = 0;             // exp(−delta/2), normalised over all laws
  bool consistent = true;        // delta <= options.reject_delta
  double log2_ref = 0;           // v_ref
  double edge_log2 = kNaN;       // capped laws: log2 of the stability edge less options.edge_margin_octaves
  double Log2Lr(double global_batch) const;                          // full-data fit
  double Log2LrOf(const LawParams& p, double global_batch) const;   // any draw
};

struct LawSet {
  std::vector<LawFit> laws;             // in the order listed above; absent laws are left out
  std::vector<int64_t> batches;         // batches on the surface, ascending
  std::vector<double> k_rel;            // curvature of the relative loss per octave², per batch (best law)
  double edge_log2 = kNaN;              // log2 2(1 + β)/λ_max (median over SGD trials that measured it)
  double cap_log2 = kNaN;               // edge_log2 − options.edge_margin_octaves: no prediction lies above
  double sigma2 = 0;                    // residual variance of the best law
  int points = 0;                       // trials on the surface
  int seeds = 0;                        // seeds resampled (0: trials resampled)
  int64_t largest_batch = 0;            // of the surface
  std::vector<std::string> notes;       // batches left out, and why
  // The anchors: with probes above the sweep (LawOptions::anchor_above), each probed batch's own optimum (its
  // residual's argmin), full-data and per bootstrap replicate, ascending by batch. Between two anchors a law is
  // moved by its misses at both, interpolated in log2 batch; past the last by its miss there; below the first
  // not at all.
  struct Anchor {
    int64_t batch = 0;
    double log2 = kNaN;
    std::vector<double> draws;
    int seeds = 0;     // seeds with 3 or more LRs at the batch
    double sd = 0;     // one seed's scatter over √(seeds at the batch): the anchor's own noise
    double weight = 1; // how much of a law's miss at the batch the anchor moves it (0..1)
  };
  std::vector<Anchor> anchors;
  int64_t anchor_batch = 0;             // the largest anchored batch (anchors.back()); 0: none
  int64_t sweep_largest = 0;            // LawOptions::anchor_above: KAt reads the curvature of the sweep's batches
  // A censored probe (see the header comment): its batch (0: none), +1 when its best LR is the highest it ran
  // (the optimum at or above censor_bound), −1 the lowest; the bound (log2) and its noise (octaves).
  int64_t censor_batch = 0;
  int censored = 0;
  double censor_bound = kNaN;
  double censor_sd = 0;
  const LawFit* Best() const;           // the lowest SSE
  // The relative-loss curvature extrapolated to `global_batch` (see the header comment).
  double KAt(double global_batch) const;
  // A law's full fit at a batch, anchored (see anchors).
  double FitLog2(const LawFit& law, double global_batch) const;
  // The anchors' move of a law (parameters p; its bootstrap replicate, -1: the full fit) at a batch.
  double AnchorShift(const LawFit& law, const LawParams& p, int replicate, double global_batch) const;
  // The anchor at the largest probed batch at or below `global_batch`; nullptr: none.
  const Anchor* AnchorBelow(double global_batch) const;
};

enum class SurgeLaw { kAuto, kAlways, kNever };  // kAuto: when the trials' optimizer is Adam-family

struct LawOptions {
  uint64_t seed = 0;
  int bootstrap = 100;                  // replicates per law
  double window_octaves = 1.0;          // trials within this of each batch's best LR (surface_fit's window)
  int parabola_neighbours = 2;          // the best LR per batch (FindBestLr)
  double reject_delta = 3.84;           // χ²₁ 95%: a law this much worse than the best is not consistent
  bool widen = true;                    // the small-sample widening of the seed bootstrap
  double location_sd_floor = 0.1;       // octaves: each replicate shifts each batch's optimum by N(0, τ²), τ the
                                        //   rms lack of fit of the best law to the batches' own optima (those
                                        //   inside their tables), in [this, 0.5] (a parabola's bias; one seed)
  double edge_margin_octaves = 0.05;    // capped laws and the prediction stay this far below the stability edge
  SurgeLaw surge = SurgeLaw::kAuto;
  int64_t anchor_above = 0;             // batches above this one are probes: at and past the largest of them
                                        //   the prediction is its own optimum plus the law's rise from there
                                        //   (the law supplies the slope, the nearest measurement the level);
                                        //   0: no anchor
  bool log_loss = true;                 // fit ln(loss/best), not loss/best: a seed that scales a whole curve (the
                                        //   noisy quadratic's seeds do) shifts it, and L* per seed absorbs that
};

// Whether a batch's optimum is bracketed by its trials: +1 when its best LR (seed-mean final loss of the
// convergent runs) is the highest LR run there (none diverged above it), −1 when it is the lowest, else 0; `bound`
// gets that LR (log2). 0 with fewer than 2 LRs at the batch.
int Unbracketed(const std::vector<ScaleTrial>& trials, int64_t global_batch, double* bound);

// The trials with a probe's collapsed runs marked diverged: at a batch past `sweep_largest`, the LRs from the top
// down (at least 3, spanning half an octave) whose mean final losses differ by less than a twentieth of what the
// sweep's own basin (the rise of ln loss per octave² about the best LR at its largest batch) would rise over their
// half-span. Past the cliff a network can fall to a plateau where every LR ends at one loss without a NaN; read as
// losses, three such runs look like a bracketed optimum. Order-independent: a function of the whole set.
std::vector<ScaleTrial> CollapsedAsDiverged(std::vector<ScaleTrial> trials, int64_t sweep_largest);

// log2 of the stability edge 2(1 + β)/λ_max: the median over convergent SGD trials that measured λ_max
// (ScaleTrial.sharpness); NaN when none did.
double EdgeLog2(const std::vector<ScaleTrial>& trials);

Fitted<LawSet> FitLaws(const std::vector<ScaleTrial>& trials, const LawOptions& options = {});

// One draw of the mixture: a law's bootstrap parameters and its weight (weights sum to 1).
struct MixtureDraw {
  int law = 0;  // index into LawSet::laws
  LawParams params;
  double weight = 0;
  int replicate = -1;  // the bootstrap replicate (-1: the full fit)
};
// The consistent laws' draws, each law's weight spread evenly over its draws.
std::vector<MixtureDraw> Mixture(const LawSet& set);
// A draw at a batch, anchored like LawSet::FitLog2 (with its replicate's anchor).
double DrawLog2(const LawSet& set, const MixtureDraw& draw, double global_batch);

// The posterior of log2 best LR at a batch, and the predicted regret of its centre.
struct LrPosterior {
  int64_t global_batch = 0;
  double log2_lr = kNaN;               // the prediction (the header comment's combination)
  double lo80 = kNaN, hi80 = kNaN;     // central 80% and 90% intervals, log2 lr
  double lo90 = kNaN, hi90 = kNaN;
  double k_rel = kNaN;                 // LawSet::KAt
  double regret_mean = kNaN;           // relative loss regret of log2_lr, over the draws
  double regret_p80 = kNaN;
  double disagreement = 0;             // octaves between the consistent laws' full fits at this batch
  std::string law_lo, law_hi;          // the consistent laws predicting the lowest and highest LR
  double law_lo_log2 = kNaN, law_hi_log2 = kNaN;
};
LrPosterior PosteriorAt(const LawSet& set, const std::vector<MixtureDraw>& mixture, double global_batch);

// Weighted q-quantile (0..1) of values; weights need not sum to 1. NaN when empty.
double WeightedQuantile(std::vector<std::pair<double, double>> value_weight, double q);

}  // namespace ladder::search
