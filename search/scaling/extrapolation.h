#pragma once
// Scale extrapolation: from completed small-scale trials (several global batch sizes, node counts, compute
// budgets) fit how the optimal learning rate and batch size move with scale, with bootstrap intervals.
//
//   best LR per batch     a parabola in log2(lr) through the argmin of each batch's sweep and its neighbours
//                         (its vertex, kept inside the points it was fitted to), not the plain argmin
//   lr_fit                ε_opt(B) = ε_max / (1 + B_noise/B) (McCandlish et al. 2018) fitted to those best LRs
//                         alone, least squares in log ε
//   noise_fit             the same law with B_noise = the measured gradient noise scale B_simple (median over
//                         the trials near each batch's best LR), ε_max fitted; the two B_noise are compared
//   joint_fit             both parameters, the best LRs weighed against the measurement: least squares of the
//                         log-LR residuals (sd options.lr_sigma_octaves) plus a log-normal term tying B_noise to
//                         B_simple (sd ln options.noise_sigma_factor). Small swept batches, which cannot locate
//                         the bend of ε_opt(B), leave B_noise near B_simple; sweeps across the bend move it
//   power_fit             ε_opt(B) = c·B^α, a line in log-log through the best LRs, α kept in [0, 1] (the range of
//                         d ln ε_opt / d ln B under the law above: 1 far below B_noise, 0 far above)
//   surface_fit           the same power law fitted to every convergent trial at once, not to the per-batch best
//                         LRs: loss(x, B) ≈ L*(B) + k(B)·(x − x*(B))², x = log2 lr, x*(B) = log2 c + α log2 B,
//                         L*(B) and k(B) >= 0 free per batch, (c, α) shared, α in [0, 1]; least squares of the
//                         losses relative to each batch's best, over the trials within options.surface_window_
//                         octaves of each batch's best LR (at least 3 LRs per batch). Trials that name their
//                         seed (ScaleTrial.seed) get one L* per batch and seed: a seed's init and data order
//                         shift its whole LR curve (by ±25% on digits at 60 epochs, 5x its scatter around the
//                         shifted curve), so paired comparisons within a seed remove most of the noise. A batch whose loss curve
//                         is flat (small k) or noisy pulls less on x* than a sharp one, and every trial counts,
//                         so it is less noisy than a line through argmins. The default rule (LrRule::kFit;
//                         power_fit when the surface cannot be fitted): with a fixed budget in epochs, the best
//                         LR of the MLP tasks in bench/extrapolation kept growing about linearly far past the
//                         measured B_simple, so the law with B_noise = B_simple bent too early there. Where the
//                         best LR levels off past the noise scale (the 200,000-row synthetic task) joint_fit is
//                         the better rule (LrRule::kJointFit, ladder promote --lr-rule joint_fit); on digits no
//                         rule reaches 1% regret at both targets (docs/design/extrapolation.md)
//   stability edge        2(1 + β)/λ_max, λ_max the largest top Hessian eigenvalue an SGD trial measured along
//                         its run (ScaleTrial.sharpness), median over the trials within 1 octave of each batch's
//                         best LR: the LR at which heavy-ball SGD with momentum β turns unstable along the
//                         sharpest direction. Small batches' best LRs sit far below it, so they do not show it;
//                         a large batch's best LR cannot exceed it by much (every oracle LR bench/extrapolation
//                         measured it against lay below it). Not a rule: capping the fit at it halved the full
//                         synthetic task's miss but did not meet the goal, and it did not bind elsewhere
//                         (docs/design/extrapolation.md)
//   tradeoff              (S/S_min − 1)(E/E_min − 1) = 1, i.e. S(B) = S_min (1 + B_crit/B), fitted to the
//                         fewest steps to a target loss at each batch; B_crit = E_min / S_min
//   lr/batch vs compute   power laws lr = a·C^α and B = b·C^β over every configuration within a tolerance of
//                         the best loss at its budget (DeepSeek LLM, 2024, section 3.1)
//   baselines             linear scaling (Goyal et al. 2017, lr ∝ B, used with warmup) and the square-root rule
//                         (lr ∝ √B), anchored at a swept configuration (ScaleAnchor)
//
// Bootstrap: every replicate resamples the trials with replacement within each batch size (within each compute
// budget for the power laws), so each group keeps its size, and refits everything; intervals are percentiles
// of the replicates. Deterministic for a given options.seed. Pure: no I/O, no threads, no global state.
// Errors (too few batch sizes, no convergent trial, bad fields) come back as messages that name the trial and
// field; nothing aborts on input.
//
// Sources: best_lr.cc (best LR per batch, FindBestLr), lr_batch_law.cc (lr_fit, noise_fit, joint_fit),
// loss_surface.cc (surface_fit), tradeoff_fit.cc (steps to a target loss, tradeoff), compute_laws.cc (lr/batch vs
// compute), lr_rules.cc (LrRule, PredictLr), extrapolation.cc (validation, power_fit, the stability edge, the
// bootstrap, FitScaling); extrapolation_internal.h declares what they share.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ladder::search {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A value or an error message (Status-style; the message names the field or trial at fault).
template <class T>
struct Fitted {
  std::optional<T> value;
  std::string error;
  bool ok() const { return value.has_value(); }
  static Fitted Fail(std::string message) { return Fitted{std::nullopt, std::move(message)}; }
};

struct LossPoint {
  int64_t step = 0;  // optimizer steps done when the loss was measured
  double loss = kNaN;
};

// One completed trial, as the coordinator stores it.
struct ScaleTrial {
  std::string id;               // for error messages and reports
  int64_t global_batch = 0;     // examples per optimizer step: ranks × per-rank batch (× micro-batches)
  int nodes = 1;
  double peak_lr = 0;
  std::string optimizer = "sgd";
  int64_t warmup_steps = 0;
  std::string decay = "none";   // the trainer's --decay name
  int64_t steps = 0;            // optimizer steps run
  double compute = 0;           // budget in any unit proportional to FLOPs; 0: examples = steps × global_batch
  double final_loss = kNaN;     // validation loss at the end; not finite: the trial diverged
  double best_loss = kNaN;      // best validation loss seen; NaN: the final loss
  double noise_scale = 0;       // measured B_simple summarised over the run; <= 0: not measured
  double noise_scale_start = 0; // B_simple early in the run (after warmup); <= 0: not measured (batch ramp)
  double sharpness = 0;         // the largest top Hessian eigenvalue λ_max measured along the run (ladder-train
                                //   --curvature-every); <= 0: not measured
  double momentum = 0.9;        // heavy-ball momentum β of SGD (the stability edge is 2(1 + β)/λ_max)
  std::vector<LossPoint> curve; // validation loss along the run (steps to a target loss); may be empty
  bool diverged = false;        // the trainer stopped on NaN/inf
  int64_t seed = -1;            // the run's seed (init, data order) when configurations are repeated; -1: unknown
};

struct Interval {
  double value = kNaN;  // the fit on all trials
  double lo = kNaN;     // bootstrap percentiles (options.interval, central); NaN: no interval (internal::Spread)
  double hi = kNaN;
  bool Contains(double x) const { return x >= lo && x <= hi; }
};
// "0.153 [0.12, 0.19]", or "0.153 (no interval)" when the bounds are NaN; 4 significant digits.
std::string FormatInterval(const Interval& iv);

enum class ScaleAnchor {
  kLargestBatch,  // the best LR at the largest swept batch (the nearest tuned point; the stronger baseline)
  kBestOverall,   // the configuration with the lowest loss of all
};

struct ExtrapolationOptions {
  uint64_t seed = 0;
  int bootstrap = 200;                  // replicates; 0: no intervals (lo = hi = NaN)
  double interval = 0.90;               // central coverage of the intervals
  int parabola_neighbours = 2;          // sweep points each side of the argmin in the best-LR parabola (fewer
                                        //   when a cliff among them bends it below every trial)
  double near_optimal_tolerance = 0.005;   // power laws: loss within this fraction of its budget's best
  double compute_group_tolerance = 0.05;   // compute budgets closer than this (relative) are one budget
  double target_loss = kNaN;            // tradeoff fit; NaN: the loss every batch's best run reaches, + 1%
  double max_noise_factor = 1000;       // lr_fit searches B_noise in [B_min/100, B_max × this]
  double lr_sigma_octaves = 0.25;       // joint_fit: sd of a best LR around the law (half a half-octave step)
  double noise_sigma_factor = 2.0;      // joint_fit: B_noise / B_simple is within this factor at 1 sd
  double surface_window_octaves = 1.0;  // surface_fit: trials within this of each batch's best LR (log2)
  ScaleAnchor anchor = ScaleAnchor::kLargestBatch;
};

// The best learning rate of one batch size's sweep.
struct BestLr {
  int64_t global_batch = 0;
  Interval lr;
  double loss = kNaN;     // the lowest loss swept (mean over trials at one LR); the parabola sets only the LR
  int trials = 0;         // convergent trials at this batch
  bool at_edge = false;   // the argmin is the smallest or largest LR swept: the optimum may lie outside
  bool parabola = false;  // false: the plain argmin (fewer than 3 distinct LRs near it, or not convex)
};

// ε_opt(B) = ε_max / (1 + B_noise/B).
struct LrBatchFit {
  Interval eps_max, b_noise;
  bool identified = true;         // false: B_noise ran into its search bound (the data are one regime)
  double rms_log2_residual = 0;   // of the best LRs around the fit, in octaves
  std::vector<std::pair<double, double>> draws;  // bootstrap (ε_max, B_noise) pairs, for PredictLr intervals
  double Lr(double global_batch) const;          // ε_opt at that batch, from the full-data fit
};

// S(B) = S_min (1 + B_crit/B), E = S·B, B_crit = E_min / S_min.
struct TradeoffFit {
  double target_loss = kNaN;
  Interval s_min, e_min, b_crit;
  std::vector<std::pair<int64_t, double>> steps_by_batch;  // fewest steps to the target at each batch
};

// y = coefficient × x^exponent (x: compute, or the global batch for power_fit).
struct PowerLaw {
  Interval coefficient, exponent;
  int points = 0;   // configurations (or best LRs) it was fitted to
  int budgets = 0;  // compute budgets (compute laws only)
  std::vector<std::pair<double, double>> draws;  // bootstrap (coefficient, exponent) pairs (power_fit only)
  double At(double x) const;
};

struct ScaleAnchorPoint {
  int64_t global_batch = 0;
  double lr = kNaN;
  double loss = kNaN;
  std::string trial_id;  // the trial the anchor came from (the batch's best trial)
};

struct ScalingReport {
  std::vector<BestLr> best_lr;                // one per batch size, ascending
  std::optional<LrBatchFit> lr_fit;           // from the best LRs alone (needs 2 batch sizes)
  std::optional<LrBatchFit> noise_fit;        // B_noise = measured noise scale (needs a measurement)
  std::optional<LrBatchFit> joint_fit;        // best LRs and the measurement together (needs one)
  std::optional<PowerLaw> power_fit;          // best LR = c·B^α against the global batch
  std::optional<PowerLaw> surface_fit;        // the same law fitted to the loss surface of all trials
  Interval measured_noise_scale;              // median B_simple near the best LRs
  Interval stability_edge;                    // 2(1 + β)/λ_max of SGD trials near the best LRs (median; NaN when
                                              //   none measured its sharpness): the peak LR above which
                                              //   heavy-ball SGD is unstable along the top Hessian eigenvector
  double noise_ratio = kNaN;                  // lr_fit B_noise / measured B_simple
  std::optional<TradeoffFit> tradeoff;        // needs curves reaching a common target at 2 batch sizes
  std::optional<PowerLaw> lr_vs_compute;      // need 2 compute budgets
  std::optional<PowerLaw> batch_vs_compute;
  ScaleAnchorPoint anchor;                    // baselines' anchor (options.anchor)
  ScaleAnchorPoint best_overall;              // the lowest-loss configuration of all
  std::vector<std::string> notes;             // why an optional fit is absent, and warnings
  int convergent_trials = 0, diverged_trials = 0;
  double interval_level = 0.90;               // options.interval
  int bootstrap = 0;                          // replicates behind the intervals
};

// Fits everything the trials allow. Errors: no trials, a trial with a bad field (batch < 1, lr <= 0), no
// convergent trial, or fewer than 2 batch sizes with a convergent trial. Optional fits that the data do not
// allow are left empty with a note.
Fitted<ScalingReport> FitScaling(const std::vector<ScaleTrial>& trials, const ExtrapolationOptions& options = {});

enum class LrRule {
  kFit,     // surface_fit, else power_fit (the library's default rule)
  kPowerFit,
  kSurfaceFit,
  kLrFit,   // lr_fit (the best LRs alone)
  kNoiseFit,
  kJointFit,
  kLinear,  // anchor.lr × B / anchor.batch
  kSqrt,    // anchor.lr × √(B / anchor.batch)
};
const char* LrRuleName(LrRule rule);
// The rule named by LrRuleName ("fit", "joint_fit", "linear", ...); nullopt for any other name.
std::optional<LrRule> ParseLrRule(const std::string& name);
// Every rule's name, in the enum's order (for help texts and error messages).
std::vector<std::string> LrRuleNames();
// The ε_opt(B) fit behind kLrFit, kNoiseFit or kJointFit and its name; nullptr when absent or for the other
// rules.
const LrBatchFit* FitForRule(const ScalingReport& report, LrRule rule, const char** name = nullptr);

// The power law behind kFit (surface_fit, else power_fit), kPowerFit or kSurfaceFit; nullptr when absent or
// for the other rules.
const PowerLaw* DefaultLaw(const ScalingReport& report, LrRule rule);

// The learning rate a rule predicts at `global_batch`, with its bootstrap interval (the rules: the anchor's).
Fitted<Interval> PredictLr(const ScalingReport& report, double global_batch, LrRule rule);

// Exposed for tests and the benchmark: the best LR of one sweep (all trials at one batch size).
Fitted<BestLr> FindBestLr(const std::vector<ScaleTrial>& sweep, int neighbours);

}  // namespace ladder::search
