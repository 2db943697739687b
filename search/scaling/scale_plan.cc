// Design notes (the plan's pieces and where each comes from: scale_plan.h).
//   peak_lr uncertainty  the plan says so when peak_lr's bootstrap interval spans more than
//                        PlanOptions::max_lr_interval_octaves or has no finite positive bounds: on digits-like
//                        sweeps (batches <= 32 extrapolated to 512-1,024) bench/extrapolation measured the fit's
//                        interval 20-25 times wider than the 0.1-0.4-octave window a 1% loss regret needs, and a
//                        bare number would read as a prediction (docs/design/extrapolation.md)
//   stability edge       named, and a peak LR above it flagged, but the LR is not capped at it: a cap was
//                        measured and not adopted (docs/design/extrapolation.md)
#include "search/scaling/scale_plan.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <sstream>

#include "search/scaling/scale_math.h"

namespace ladder::search {
namespace {

std::string Num(double v) {
  std::ostringstream os;
  os.precision(4);
  os << v;
  return os.str();
}
std::string Iv(const Interval& iv) { return FormatInterval(iv); }

int64_t RoundPow2(double x) {
  if (!(x >= 1)) return 1;
  return int64_t{1} << static_cast<int>(std::lround(std::log2(x)));
}

// The trial behind the anchor (schedule and optimizer come from it).
const ScaleTrial* AnchorTrial(const ScalingReport& r, const std::vector<ScaleTrial>& trials) {
  const ScaleTrial* best = nullptr;
  for (const ScaleTrial& t : trials) {
    if (!t.id.empty() && t.id == r.anchor.trial_id) return &t;
    if (t.global_batch == r.anchor.global_batch && !t.diverged && std::isfinite(t.final_loss) &&
        (!best || t.final_loss < best->final_loss)) {
      best = &t;
    }
  }
  return best;
}

// The rule's own out-of-sample error, measured on the sweep: fitted without the largest swept batch, how many
// octaves its prediction of that batch's best LR lands from the measured one.
struct HeldOut {
  int64_t batch = 0;       // the batch held out (the largest swept)
  int64_t next = 0;        // the largest batch the refit saw
  double predicted = kNaN, measured = kNaN, octaves = kNaN;
};

std::optional<HeldOut> HoldOutLargest(const ScalingReport& r, const std::vector<ScaleTrial>& trials, LrRule rule) {
  if (r.best_lr.size() < 3) return std::nullopt;  // 2 batches left would fit any power law exactly
  HeldOut h;
  h.batch = r.best_lr.back().global_batch;
  std::vector<ScaleTrial> rest;
  for (const ScaleTrial& t : trials) {
    if (t.global_batch < h.batch) rest.push_back(t);
  }
  ExtrapolationOptions o;
  o.bootstrap = 0;
  auto sub = FitScaling(rest, o);
  if (!sub.ok()) return std::nullopt;
  auto lr = PredictLr(*sub.value, static_cast<double>(h.batch), rule);
  if (!lr.ok() || !(lr.value->value > 0)) return std::nullopt;
  h.next = sub.value->best_lr.back().global_batch;
  h.predicted = lr.value->value;
  h.measured = r.best_lr.back().lr.value;
  h.octaves = std::fabs(std::log2(h.predicted / h.measured));
  return h;
}

// The loss a swept run had reached after `examples` examples: its validation curve, linear between points in
// log examples; NaN outside the curve (before its first point, past its end) or with fewer than 3 points.
double CurveLossAt(const ScaleTrial& t, double examples) {
  if (t.curve.size() < 3 || !(examples > 0)) return kNaN;
  const double b = static_cast<double>(t.global_batch);
  auto at = [&](size_t i) { return static_cast<double>(t.curve[i].step) * b; };
  if (examples < at(0) || examples > at(t.curve.size() - 1) * (1 + 1e-9)) return kNaN;
  for (size_t i = 1; i < t.curve.size(); ++i) {
    if (examples <= at(i)) {
      const double f = at(i) > at(i - 1) ? std::log(examples / at(i - 1)) / std::log(at(i) / at(i - 1)) : 1.0;
      return t.curve[i - 1].loss + std::clamp(f, 0.0, 1.0) * (t.curve[i].loss - t.curve[i - 1].loss);
    }
  }
  return t.curve.back().loss;
}

// The runs whose validation curves the final loss is read off: at each swept batch, every run at the swept LR
// nearest the batch's best (the parabola's vertex lies between swept LRs).
std::vector<const ScaleTrial*> CurveRuns(const ScalingReport& r, const std::vector<ScaleTrial>& trials) {
  std::vector<const ScaleTrial*> runs;
  for (const BestLr& b : r.best_lr) {
    double nearest = kNaN;
    for (const ScaleTrial& t : trials) {
      if (t.global_batch != b.global_batch || t.diverged || !std::isfinite(t.final_loss)) continue;
      if (std::isnan(nearest) || std::fabs(std::log(t.peak_lr / b.lr.value)) < std::fabs(std::log(nearest / b.lr.value))) {
        nearest = t.peak_lr;
      }
    }
    for (const ScaleTrial& t : trials) {
      if (t.global_batch == b.global_batch && t.peak_lr == nearest && !t.diverged) runs.push_back(&t);
    }
  }
  return runs;
}

// The final loss by McCandlish et al.'s fixed-examples route: reaching a loss takes E_min (1 + B/B_noise)
// examples at batch B, so with E examples a run at batch B gets about as far as a run at a swept batch b got
// after E (1 + b/B_noise) / (1 + B/B_noise) of its own: read off the curves of `runs` (CurveRuns). The value: the
// median over those runs with B_noise the measured noise scale; the interval: everything they give with B_noise
// anywhere in its interval. nullopt when the noise scale was not measured, there are no runs, a run has no curve
// (fewer than 3 points) or the target's examples fall outside a curve (a budget beyond the swept runs' is not
// read off them).
std::optional<Interval> CurveLoss(const Interval& noise, const std::vector<const ScaleTrial*>& runs, double batch,
                                  double examples) {
  if (!(noise.value > 0) || runs.empty()) return std::nullopt;
  std::vector<double> central, all;
  for (double bn : {noise.value, noise.lo, noise.hi}) {
    if (!(bn > 0)) continue;
    for (const ScaleTrial* t : runs) {
      const double v = CurveLossAt(*t, examples * (1 + static_cast<double>(t->global_batch) / bn) / (1 + batch / bn));
      if (!std::isfinite(v)) {
        if (bn == noise.value) return std::nullopt;
        continue;
      }
      (bn == noise.value ? central : all).push_back(v);
    }
  }
  all.insert(all.end(), central.begin(), central.end());
  return Interval{internal::Median(central), *std::min_element(all.begin(), all.end()),
                  *std::max_element(all.begin(), all.end())};
}

}  // namespace

Fitted<ScalePlan> PlanRun(const ScalingReport& r, const std::vector<ScaleTrial>& trials, const PlanTarget& target,
                          const PlanOptions& o) {
  using F = Fitted<ScalePlan>;
  if (r.best_lr.empty()) return F::Fail("the scaling report has no best learning rates (run FitScaling first)");
  ScalePlan p;
  p.nodes = target.nodes;
  p.interval_level = r.interval_level;
  const double b_crit = r.tradeoff ? r.tradeoff->b_crit.value : r.measured_noise_scale.value;
  const std::string b_crit_src = r.tradeoff ? "tradeoff B_crit=" + Iv(r.tradeoff->b_crit)
                                            : "measured noise scale B_simple=" + Iv(r.measured_noise_scale);
  double examples = target.examples;
  if (!(examples > 0) && target.compute > 0) {
    if (!(target.compute_per_example > 0)) {
      return F::Fail("target.compute_per_example must be > 0 with a compute budget, got " +
                     Num(target.compute_per_example));
    }
    examples = target.compute / target.compute_per_example;
  }

  // Global batch.
  if (target.global_batch > 0) {
    p.global_batch = target.global_batch;
    p.sources.push_back("global_batch: given");
  } else if (target.nodes > 0 && target.per_node_batch > 0) {
    p.global_batch = int64_t{target.nodes} * target.per_node_batch;
    p.sources.push_back("global_batch: nodes " + std::to_string(target.nodes) + " x per-node batch " +
                        std::to_string(target.per_node_batch));
  } else if (examples > 0 && std::isfinite(b_crit)) {
    p.global_batch = std::clamp<int64_t>(RoundPow2(b_crit), r.best_lr.front().global_batch, o.max_global_batch);
    p.sources.push_back("global_batch: the critical batch, " + b_crit_src + ", as a power of two");
  } else {
    return F::Fail("target: give global_batch, nodes and per_node_batch, or a budget (examples or compute) "
                   "with a tradeoff fit or a measured noise scale to size the batch");
  }
  if (p.global_batch > o.max_global_batch) {
    return F::Fail("target: global batch " + std::to_string(p.global_batch) + " exceeds max_global_batch " +
                   std::to_string(o.max_global_batch));
  }
  const double batch = static_cast<double>(p.global_batch);
  const int64_t largest_swept = r.best_lr.back().global_batch;

  // Peak LR and the baselines.
  auto lr = PredictLr(r, batch, o.lr_rule);
  if (!lr.ok()) return F::Fail("peak_lr: " + lr.error);
  p.peak_lr = *lr.value;
  {
    const char* name = "";
    const LrBatchFit* fit = FitForRule(r, o.lr_rule, &name);
    const bool noise = fit && ((r.noise_fit && fit == &*r.noise_fit) || (r.joint_fit && fit == &*r.joint_fit));
    std::string src = "peak_lr: " + Iv(p.peak_lr) + " from ";
    if (const PowerLaw* law = DefaultLaw(r, o.lr_rule)) {
      const bool surface = r.surface_fit && law == &*r.surface_fit;
      src += std::string(surface ? "surface_fit" : "power_fit") + " lr = c B^a, c=" + Iv(law->coefficient) +
             ", a=" + Iv(law->exponent) +
             (surface ? " over the loss surface of every trial near the best LRs of "
                      : " over the best LRs of ") +
             std::to_string(r.best_lr.size()) + " swept batches";
      if (r.joint_fit) {
        src += "; check: joint_fit eps_opt(B) = eps_max/(1 + B_noise/B) gives " + Num(r.joint_fit->Lr(batch)) +
               " (B_noise=" + Iv(r.joint_fit->b_noise) + ", measured B_simple=" + Iv(r.measured_noise_scale) + ")";
      }
    } else if (o.lr_rule == LrRule::kLinear || o.lr_rule == LrRule::kSqrt) {
      src += std::string(LrRuleName(o.lr_rule)) + " rule from batch " + std::to_string(r.anchor.global_batch);
    } else if (fit) {
      src += std::string(name) + " eps_opt(B) = eps_max/(1 + B_noise/B), eps_max=" + Iv(fit->eps_max) +
             ", B_noise=" + Iv(fit->b_noise) +
             (noise ? ", measured B_simple=" + Iv(r.measured_noise_scale) : std::string(" (from the best LRs)"));
    }
    p.sources.push_back(src);
  }
  p.lr_rule = LrRuleName(o.lr_rule);
  if (const PowerLaw* law = DefaultLaw(r, o.lr_rule); law && o.lr_rule == LrRule::kFit) {
    const bool surface = r.surface_fit && law == &*r.surface_fit;
    p.lr_rule = surface ? "surface_fit" : "power_fit";
    p.lr_rule_why = surface
        ? "the default rule (no --lr-rule): the loss surface of every trial near each batch's best LR, "
          "exponent a=" + Iv(law->exponent) + " in [0, 1]"
        : "the default rule (no --lr-rule): the loss surface could not be fitted (fewer than 3 LRs near a "
          "batch's best), so a line through the " + std::to_string(law->points) + " best LRs, exponent a=" +
          Iv(law->exponent);
  } else {
    p.lr_rule_why = "asked for (--lr-rule " + std::string(LrRuleName(o.lr_rule)) + ")";
  }
  // What the sweep cannot support.
  if (static_cast<int>(r.best_lr.size()) < o.min_batch_sizes) {
    p.warnings.push_back("only " + std::to_string(r.best_lr.size()) + " swept batch size(s) with a convergent "
                         "trial: any power law passes through 2 points, so nothing checks the extrapolation; sweep "
                         "at least " + std::to_string(o.min_batch_sizes));
  }
  for (const BestLr& b : r.best_lr) {
    if (b.at_edge) {
      p.warnings.push_back("batch " + std::to_string(b.global_batch) + ": its best LR " + Num(b.lr.value) +
                           " is the smallest or largest it swept: the optimum may lie outside; extend its LR "
                           "range (scales: extend)");
    }
  }
  if (batch > o.max_extrapolation * static_cast<double>(largest_swept)) {
    p.warnings.push_back("batch " + std::to_string(p.global_batch) + " is " + Num(batch / largest_swept) +
                         "x the largest swept batch (" + std::to_string(largest_swept) + "), beyond " +
                         Num(o.max_extrapolation) + "x: sweep larger batches");
  }
  // The stated interval: the bootstrap's (the fit's parameters given its law) widened by the law's own held-out
  // error carried to the target: an error of e octaves over the one doubling-or-more held out is a slope error
  // that grows with every doubling beyond the sweep (bench/extrapolation: the bootstrap intervals alone held the
  // oracle's LR at 2 of 4 gated targets).
  if (auto h = HoldOutLargest(r, trials, o.lr_rule); h && batch > static_cast<double>(largest_swept)) {
    const double ratio = std::log2(batch / static_cast<double>(h->batch)) /
                         std::log2(static_cast<double>(h->batch) / static_cast<double>(h->next));
    const double widen = h->octaves * ratio;
    const double lo = p.peak_lr.value * std::exp2(-widen), hi = p.peak_lr.value * std::exp2(widen);
    p.peak_lr.lo = std::isnan(p.peak_lr.lo) ? lo : std::min(p.peak_lr.lo, lo);
    p.peak_lr.hi = std::isnan(p.peak_lr.hi) ? hi : std::max(p.peak_lr.hi, hi);
    p.sources.push_back("peak_lr held-out check: fitted without batch " + std::to_string(h->batch) + ", " +
                        p.lr_rule + " predicts its best LR " + Num(h->predicted) + " against the measured " +
                        Num(h->measured) + " (" + Num(h->octaves) + " octave off); carried " + Num(ratio) +
                        "x as far to batch " + std::to_string(p.global_batch) + ", the interval spans at least +-" +
                        Num(widen) + " octave: " + Iv(p.peak_lr));
    p.lr_rule_why += "; held out, it predicted batch " + std::to_string(h->batch) + "'s best LR within " +
                     Num(h->octaves) + " octave";
  }
  if (!std::isnan(p.peak_lr.lo) && !std::isnan(p.peak_lr.hi)) {  // NaN: no bootstrap, nothing to judge
    const bool bounded = p.peak_lr.lo > 0 && std::isfinite(p.peak_lr.hi) && p.peak_lr.hi >= p.peak_lr.lo;
    const double octaves = bounded ? std::log2(p.peak_lr.hi / p.peak_lr.lo) : kNaN;
    const std::string why = ": the swept trials do not pin the LR at batch " + std::to_string(p.global_batch) +
                            "; swept batches closer to it, or more seeds per LR, narrow it";
    if (!bounded) {
      p.sources.push_back("peak_lr uncertainty: its interval [" + Num(p.peak_lr.lo) + ", " +
                          Num(p.peak_lr.hi) + "] has no finite positive bounds" + why);
    } else if (octaves > o.max_lr_interval_octaves) {
      p.sources.push_back("peak_lr uncertainty: its interval spans " + Num(octaves) +
                          " octaves (more than " + Num(o.max_lr_interval_octaves) + ")" + why);
    }
  }
  if (std::isfinite(r.stability_edge.value)) {
    p.stability_edge = r.stability_edge.value;
    std::string line = "stability edge: 2(1 + momentum)/lambda_max = " + Iv(r.stability_edge) +
                       " from the sharpness the swept SGD trials measured";
    if (p.peak_lr.value > r.stability_edge.value) {
      line += "; the peak LR is " + Num(p.peak_lr.value / r.stability_edge.value) +
              "x above it: heavy-ball SGD is unstable there unless the large batch's sharpness is lower";
    }
    p.sources.push_back(line);
  }
  if (r.lr_fit && std::isfinite(r.measured_noise_scale.value)) {
    // McCandlish et al.'s two routes to B_noise, side by side: the bend of the best LRs against the batch, and
    // the gradient noise scale the trials measured.
    const Interval& from_lr = r.lr_fit->b_noise;
    const Interval& measured = r.measured_noise_scale;
    const bool known = std::isfinite(from_lr.lo) && std::isfinite(from_lr.hi) && std::isfinite(measured.lo) &&
                       std::isfinite(measured.hi);
    const bool overlap = known && !(from_lr.hi < measured.lo || measured.hi < from_lr.lo);
    p.sources.push_back("noise check: B_noise from the best LRs (lr_fit) " + Iv(from_lr) +
                        (r.lr_fit->identified ? "" : " (at its bound: not identified)") + " vs the measured B_simple " +
                        Iv(measured) + ": ratio " + Num(r.noise_ratio) +
                        (!known ? "; no intervals to compare (no bootstrap)"
                         : overlap ? "; the intervals overlap"
                                   : "; the intervals do not overlap: the two disagree"));
  }
  for (const auto& [law, what] : {std::pair{&r.lr_vs_compute, "near-optimal lr"},
                                  std::pair{&r.batch_vs_compute, "near-optimal global batch"}}) {
    if (!*law) continue;
    const PowerLaw& l = **law;
    std::string line = std::string("compute law: ") + what + " = c C^a, c=" + Iv(l.coefficient) + ", a=" +
                       Iv(l.exponent) + " over " + std::to_string(l.points) + " configurations at " +
                       std::to_string(l.budgets) + " compute budgets";
    if (l.budgets < 3) line += " (a line through 2 budgets: nothing checks that a power law holds; sweep a third)";
    if (target.compute > 0) line += "; at the budget's compute " + Num(target.compute) + ": " + Num(l.At(target.compute));
    p.sources.push_back(line);
  }
  if (auto a = PredictLr(r, batch, LrRule::kLinear); a.ok()) p.linear_rule_lr = a.value->value;
  if (auto a = PredictLr(r, batch, LrRule::kSqrt); a.ok()) p.sqrt_rule_lr = a.value->value;

  // Schedule and optimizer from the anchor trial.
  const ScaleTrial* anchor = AnchorTrial(r, trials);
  double warmup_fraction = 0;
  std::string base_optimizer = "sgd";
  if (anchor) {
    p.decay = anchor->decay;
    base_optimizer = anchor->optimizer;
    if (anchor->steps > 0) warmup_fraction = static_cast<double>(anchor->warmup_steps) / anchor->steps;
  }
  if (p.global_batch > largest_swept) warmup_fraction = std::max(warmup_fraction, o.min_warmup_fraction);
  p.optimizer = base_optimizer;
  const bool big = p.global_batch >= o.layerwise_batch ||
                   (std::isfinite(b_crit) && batch >= o.layerwise_noise_multiple * b_crit);
  if (big && (base_optimizer == "sgd" || base_optimizer == "adam" || base_optimizer == "adamw")) {
    p.optimizer = base_optimizer == "sgd" ? (o.prefer_larc ? "larc" : "lars") : "lamb";
    p.sources.push_back("optimizer: " + p.optimizer + " (layer-wise trust ratio) replaces " + base_optimizer +
                        ": batch " + std::to_string(p.global_batch) + " >= " +
                        (p.global_batch >= o.layerwise_batch
                             ? std::to_string(o.layerwise_batch)
                             : Num(o.layerwise_noise_multiple) + " x B_crit (" + b_crit_src + ")"));
  } else {
    p.sources.push_back("optimizer: " + p.optimizer + " as in the anchor trial" +
                        (anchor && !anchor->id.empty() ? " " + anchor->id : std::string()));
  }

  // Ramp: start near the early noise scale, double up to the batch.
  std::vector<double> early;
  for (const ScaleTrial& t : trials) {
    if (t.noise_scale_start > 0 && !t.diverged) early.push_back(t.noise_scale_start);
  }
  int doublings = 0;
  int64_t start = p.global_batch;
  if (!early.empty()) {
    const double e = internal::Median(early);
    start = std::clamp<int64_t>(RoundPow2(e), std::max<int64_t>(1, p.global_batch >> o.max_ramp_doublings),
                                p.global_batch);
    while ((start << doublings) < p.global_batch) ++doublings;
    if ((start << doublings) != p.global_batch) doublings = 0;  // not a power-of-two multiple: no ramp
  }

  // Steps: from the budget (accounting for the ramp's smaller batches), else from the tradeoff.
  if (examples > 0) {
    double deficit = 0;  // Σ over ramp stages of (final − stage batch), per unit of stage length
    for (int i = 0; i < doublings; ++i) deficit += batch - static_cast<double>(start << i);
    const double denom = batch - (doublings > 0 ? o.ramp_fraction / doublings * deficit : 0.0);
    p.steps = std::max<int64_t>(1, std::llround(examples / denom));
    p.sources.push_back("steps: the budget of " + Num(examples) + " examples at this batch" +
                        std::string(doublings > 0 ? " and its ramp" : ""));
  }
  if (r.tradeoff) {
    const TradeoffFit& t = *r.tradeoff;
    p.target_loss = t.target_loss;
    const double f = 1 + t.b_crit.value / batch;
    p.steps_to_target = {t.s_min.value * f, t.s_min.lo * (1 + t.b_crit.lo / batch),
                         t.s_min.hi * (1 + t.b_crit.hi / batch)};
    if (p.steps_to_target.lo > p.steps_to_target.hi) std::swap(p.steps_to_target.lo, p.steps_to_target.hi);
    if (p.steps == 0) {
      p.steps = std::max<int64_t>(1, std::llround(p.steps_to_target.value * o.steps_margin));
      p.sources.push_back("steps: steps to the target loss " + Num(t.target_loss) + " from the tradeoff S_min=" +
                          Iv(t.s_min) + ", B_crit=" + Iv(t.b_crit));
    }
  }
  if (p.steps == 0) {
    return F::Fail("steps: no budget (target.examples or target.compute) and no tradeoff fit (trials need "
                   "loss curves) to size the run");
  }
  if (doublings > 0) {
    const int64_t ramp_steps = std::llround(o.ramp_fraction * static_cast<double>(p.steps));
    for (int i = 0; i <= doublings; ++i) {
      p.ramp.push_back({ramp_steps * i / doublings, start << i});
    }
    p.sources.push_back("ramp: from " + std::to_string(start) + " (median early B_simple " +
                        Num(internal::Median(early)) + ") doubling over the first " + Num(o.ramp_fraction * 100) +
                        "% of the steps");
  }
  p.warmup_steps = std::llround(warmup_fraction * static_cast<double>(p.steps));
  p.sources.push_back("warmup: " + Num(warmup_fraction * 100) + "% of the steps" +
                      (p.global_batch > largest_swept ? " (at least " + Num(o.min_warmup_fraction * 100) +
                                                            "% beyond the swept batches)"
                                                      : std::string()) +
                      "; decay: " + p.decay + " as in the anchor trial");

  // Loss model: the best loss per swept batch against log S_eff, and the swept runs' curves read at the
  // target's effective examples; the plan states the hull of both (below).
  if (std::isfinite(b_crit)) {
    std::map<int64_t, std::vector<double>> steps_at;
    for (const ScaleTrial& t : trials) {
      if (!t.diverged && std::isfinite(t.final_loss) && t.steps > 0) {
        steps_at[t.global_batch].push_back(static_cast<double>(t.steps));
      }
    }
    std::vector<double> x, y;
    for (const BestLr& b : r.best_lr) {
      auto it = steps_at.find(b.global_batch);
      if (it == steps_at.end() || !std::isfinite(b.loss)) continue;
      x.push_back(std::log(internal::Median(it->second) / (1 + b_crit / static_cast<double>(b.global_batch))));
      y.push_back(b.loss);
    }
    auto line = internal::FitLine(x, y);
    if (line) {
      // The line's prediction interval for a new run (Student's t over the swept batches' residuals, wider
      // the farther the target's S_eff lies from theirs): a bootstrap of 3-4 points spans only their own
      // scatter, and bench/extrapolation measured the hero's loss outside such an interval at every target.
      auto at = [&](double steps) {
        const double ls = std::log(steps / (1 + b_crit / batch));
        const internal::Bounds b = internal::LinePrediction(x, y, *line, ls, r.interval_level);
        return Interval{line->a + line->b * ls, b.lo, b.hi};
      };
      const Interval end = at(static_cast<double>(p.steps));
      const double longest = std::exp(*std::max_element(x.begin(), x.end()));  // the largest swept S_eff
      const double reach = static_cast<double>(p.steps) / (1 + b_crit / batch) / longest;
      if (!(line->b < 0)) {
        // The model is a loss that falls with the effective steps; a line that rises says the sweep cannot tell.
        p.sources.push_back("final_loss: not predicted: the swept batches' best losses do not fall with S_eff "
                            "(loss = " + Num(line->a) + " + " + Num(line->b) + " ln(S / (1 + B_crit/B)))");
      } else if (!(end.value > 0)) {
        // A loss is not negative: the log-linear model has been carried past where the sweep can speak.
        p.sources.push_back("final_loss: not predicted: loss = " + Num(line->a) + " + " + Num(line->b) +
                            " ln(S / (1 + B_crit/B)) gives " + Num(end.value) + " at " + std::to_string(p.steps) +
                            " steps, " + Num(reach) + "x the longest swept run's S_eff");
      } else {
        auto floor0 = [](Interval iv) {
          if (iv.lo < 0) iv.lo = 0;  // a loss is not negative
          return iv;
        };
        p.final_loss = floor0(end);
        for (int i = 1; i <= 10; ++i) {
          const int64_t s = std::max<int64_t>(1, p.steps * i / 10);
          p.loss_band.push_back({s, floor0(at(static_cast<double>(s)))});
        }
        p.sources.push_back("final_loss: " + Iv(p.final_loss) + " from loss = " + Num(line->a) + " + " +
                            Num(line->b) + " ln(S / (1 + B_crit/B)) over " + std::to_string(x.size()) +
                            " swept batches, " + b_crit_src +
                            (reach > 10 ? "; extrapolated to " + Num(reach) + "x the longest swept run's S_eff"
                                        : std::string()));
      }
    } else {
      p.sources.push_back("final_loss: not predicted (the swept batches give fewer than 2 distinct S_eff)");
    }
  }
  // The curves' reading is biased high (a run's loss mid-schedule is above the end loss of a shorter run with
  // its own decay, and a noise scale measured low puts the target too far down the curve) and the S_eff line low
  // (it reads the flat losses of batches far below the noise scale); bench/extrapolation measured the oracle's
  // final loss outside each alone and between the two. With both, the plan states their hull, centred between.
  const double plan_examples = examples > 0 ? examples : static_cast<double>(p.steps) * batch;
  const std::vector<const ScaleTrial*> curve_runs = CurveRuns(r, trials);
  if (auto curve = CurveLoss(r.measured_noise_scale, curve_runs, batch, plan_examples)) {
    auto hull = [](const Interval& a, const Interval& b) {
      auto lo = [](const Interval& i) { return std::isnan(i.lo) ? i.value : i.lo; };
      auto hi = [](const Interval& i) { return std::isnan(i.hi) ? i.value : i.hi; };
      return Interval{(a.value + b.value) / 2, std::min(lo(a), lo(b)), std::max(hi(a), hi(b))};
    };
    const bool both = std::isfinite(p.final_loss.value);
    // Without the line, the other side of the bracket: with no more examples than the swept runs had, a larger
    // batch does not end below the best swept loss (reaching a loss takes E_min (1 + B/B_noise) examples, more
    // the larger the batch).
    double floor_loss = kNaN;
    int64_t fewest = 0;  // the fewest examples a swept batch's runs had
    for (const ScaleTrial& t : trials) {
      if (t.steps > 0 && (fewest == 0 || t.steps * t.global_batch < fewest)) fewest = t.steps * t.global_batch;
    }
    for (const BestLr& b : r.best_lr) {
      if (std::isfinite(b.loss) && (std::isnan(floor_loss) || b.loss < floor_loss)) floor_loss = b.loss;
    }
    const bool floored = !both && std::isfinite(floor_loss) && plan_examples <= 1.01 * static_cast<double>(fewest) &&
                         floor_loss < curve->lo;
    p.final_loss = both      ? hull(p.final_loss, *curve)
                   : floored ? Interval{(floor_loss + curve->value) / 2, floor_loss, curve->hi}
                             : *curve;
    for (int i = 1; i <= 10; ++i) {
      const int64_t s = std::max<int64_t>(1, p.steps * i / 10);
      auto at = CurveLoss(r.measured_noise_scale, curve_runs, batch, plan_examples * i / 10);
      auto it = std::find_if(p.loss_band.begin(), p.loss_band.end(), [&](const LossBandPoint& b) { return b.step == s; });
      if (at && it != p.loss_band.end()) {
        it->loss = hull(it->loss, *at);
      } else if (at && !both) {
        p.loss_band.push_back({s, *at});
      }
    }
    p.sources.push_back("final_loss" + std::string(both ? " (with the line above)" : "") + ": " + Iv(*curve) +
                        " read off the swept runs' validation curves at the examples that take them as far as " +
                        Num(plan_examples) + " examples take batch " + std::to_string(p.global_batch) +
                        " (E (1 + b/B_noise) / (1 + B/B_noise), McCandlish et al.), B_noise the measured noise "
                        "scale " + Iv(r.measured_noise_scale) + " over its interval" +
                        (both ? "; stated: both models' hull " + Iv(p.final_loss)
                         : floored ? "; a reading biased high (a mid-schedule loss), so the interval reaches down to "
                                     "the best swept loss " + Num(floor_loss) + ", which a larger batch on no more "
                                     "examples does not beat: " + Iv(p.final_loss)
                                   : std::string()));
  }
  return F{p, ""};
}

}  // namespace ladder::search
