// FitScaling: validates the trials, runs every fit on the full data and on each bootstrap replicate (FitOnce),
// and turns the replicates into intervals; FormatInterval. The fits themselves: extrapolation.h names their files.
#include "search/scaling/extrapolation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <random>
#include <sstream>

#include "search/scaling/extrapolation_internal.h"
#include "search/scaling/scale_math.h"

namespace ladder::search {
namespace extrapolation_internal {
namespace {

std::string TrialName(const ScaleTrial& t, size_t index) {
  return t.id.empty() ? "trials[" + std::to_string(index) + "]" : "trial " + t.id;
}

}  // namespace

std::string Num(double v) {
  std::ostringstream os;
  os.precision(4);
  os << v;
  return os.str();
}

std::string Validate(const std::vector<ScaleTrial>& trials) {
  if (trials.empty()) return "no trials: the fit needs completed trials at 2 or more global batch sizes";
  for (size_t i = 0; i < trials.size(); ++i) {
    const ScaleTrial& t = trials[i];
    if (t.global_batch < 1) {
      return TrialName(t, i) + ": global_batch must be >= 1, got " + std::to_string(t.global_batch);
    }
    if (!(t.peak_lr > 0) || !std::isfinite(t.peak_lr)) {
      return TrialName(t, i) + ": peak_lr must be a finite number > 0, got " + Num(t.peak_lr);
    }
    if (t.steps < 0) return TrialName(t, i) + ": steps must be >= 0, got " + std::to_string(t.steps);
    if (t.compute < 0 || !std::isfinite(t.compute)) {
      return TrialName(t, i) + ": compute must be >= 0, got " + Num(t.compute);
    }
  }
  return "";
}

Interval Spread(double value, const std::vector<double>& draws, double level) {
  const internal::Bounds b = internal::Spread(value, draws, level);
  return Interval{value, b.lo, b.hi};
}

}  // namespace extrapolation_internal

namespace {

using extrapolation_internal::BestLrOf;
using extrapolation_internal::ComputeGroups;
using extrapolation_internal::Convergent;
using extrapolation_internal::FitComputeLaws;
using extrapolation_internal::FitLawFixedNoise;
using extrapolation_internal::FitLawFree;
using extrapolation_internal::FitLawJoint;
using extrapolation_internal::FitSurface;
using extrapolation_internal::FitTradeoff;
using extrapolation_internal::Group;
using extrapolation_internal::LawFit;
using extrapolation_internal::LawPair;
using extrapolation_internal::LawPoint;
using extrapolation_internal::Num;
using extrapolation_internal::Spread;
using extrapolation_internal::StepsToTarget;
using extrapolation_internal::TradeoffPoint;
using extrapolation_internal::Validate;
using internal::FitLine;
using internal::Median;

double LowestLoss(const ScaleTrial& t) {
  double m = t.final_loss;
  if (std::isfinite(t.best_loss)) m = std::min(m, t.best_loss);
  for (const auto& p : t.curve) {
    if (std::isfinite(p.loss)) m = std::min(m, p.loss);
  }
  return m;
}

// ---- everything from one set of groups (the full data or one bootstrap replicate) --------------------------

struct Sweeps {
  std::map<int64_t, Group> by_batch;              // all trials (diverged too)
  std::map<int64_t, std::pair<double, double>> lr_range;  // smallest and largest LR swept
};

struct OneFit {
  std::vector<BestLr> best;
  std::optional<LawFit> free_law, noise_law, joint_law;
  std::optional<internal::Line> power;  // ln lr = a + b ln B, b in [0, 1]
  std::optional<internal::Line> surface;  // the same from the loss surface
  double noise = kNaN;
  double edge = kNaN;  // stability edge 2(1 + β)/λ_max
  std::optional<std::pair<double, double>> tradeoff;  // S_min, B_crit
  std::vector<TradeoffPoint> steps;
  std::optional<LawPair> compute_laws;
};

// Calls f(trial, near) for every convergent trial of a batch with a best LR; near: within 1 octave of it.
template <class F>
void ForEachConvergent(const std::map<int64_t, Group>& by_batch, const std::vector<BestLr>& best, F f) {
  for (const BestLr& b : best) {
    for (const ScaleTrial* t : by_batch.at(b.global_batch)) {
      if (Convergent(*t)) f(*t, std::abs(std::log2(t->peak_lr / b.lr.value)) <= 1.0);
    }
  }
}

double NoiseNearBest(const std::map<int64_t, Group>& by_batch, const std::vector<BestLr>& best) {
  std::vector<double> near, all;
  ForEachConvergent(by_batch, best, [&](const ScaleTrial& t, bool is_near) {
    if (!(t.noise_scale > 0)) return;
    all.push_back(t.noise_scale);
    if (is_near) near.push_back(t.noise_scale);
  });
  return Median(near.empty() ? all : near);
}

// Median of 2(1 + β)/λ_max over the SGD trials within 1 octave of their batch's best LR that measured λ_max.
double EdgeNearBest(const std::map<int64_t, Group>& by_batch, const std::vector<BestLr>& best) {
  std::vector<double> near;
  ForEachConvergent(by_batch, best, [&](const ScaleTrial& t, bool is_near) {
    if (is_near && t.sharpness > 0 && t.optimizer == "sgd") near.push_back(2 * (1 + t.momentum) / t.sharpness);
  });
  return Median(near);
}

OneFit FitOnce(const Sweeps& sw, const ExtrapolationOptions& o, double target, const std::vector<Group>& budgets) {
  OneFit f;
  for (const auto& [batch, group] : sw.by_batch) {
    const auto [lo, hi] = sw.lr_range.at(batch);
    if (auto b = BestLrOf(group, o.parabola_neighbours, lo, hi)) f.best.push_back(*b);
  }
  std::vector<LawPoint> pts;
  for (const BestLr& b : f.best) pts.push_back({static_cast<double>(b.global_batch), b.lr.value});
  f.free_law = FitLawFree(pts, o.max_noise_factor);
  {
    std::vector<double> lx, ly;
    for (const auto& p : pts) lx.push_back(std::log(p.batch)), ly.push_back(std::log(p.lr));
    f.power = FitLine(lx, ly);
    if (f.power && (f.power->b < 0 || f.power->b > 1)) {
      f.power->b = std::clamp(f.power->b, 0.0, 1.0);
      double s = 0;
      for (size_t i = 0; i < lx.size(); ++i) s += ly[i] - f.power->b * lx[i];
      f.power->a = s / static_cast<double>(lx.size());
    }
  }
  f.surface = FitSurface(sw.by_batch, f.best, o.surface_window_octaves);
  f.noise = NoiseNearBest(sw.by_batch, f.best);
  f.edge = EdgeNearBest(sw.by_batch, f.best);
  if (std::isfinite(f.noise) && !pts.empty()) {
    f.noise_law = FitLawFixedNoise(pts, f.noise);
    f.joint_law = FitLawJoint(pts, f.noise, o.lr_sigma_octaves * std::log(2.0), std::log(o.noise_sigma_factor),
                              o.max_noise_factor);
  }
  if (std::isfinite(target)) {
    for (const auto& [batch, group] : sw.by_batch) {
      double s = kNaN;
      for (const ScaleTrial* t : group) {
        const double st = StepsToTarget(*t, target);
        if (std::isfinite(st) && st > 0 && !(st >= s)) s = st;
      }
      if (std::isfinite(s)) f.steps.push_back({static_cast<double>(batch), s});
    }
    f.tradeoff = FitTradeoff(f.steps);
  }
  if (budgets.size() >= 2) f.compute_laws = FitComputeLaws(budgets, o.near_optimal_tolerance);
  return f;
}

Group Resample(const Group& g, std::mt19937_64& rng) {
  std::uniform_int_distribution<size_t> pick(0, g.size() - 1);
  Group out(g.size());
  for (auto& t : out) t = g[pick(rng)];
  return out;
}

}  // namespace

std::string FormatInterval(const Interval& iv) {
  char buf[96];
  if (std::isnan(iv.lo) || std::isnan(iv.hi)) {
    std::snprintf(buf, sizeof buf, "%.4g (no interval)", iv.value);
  } else {
    std::snprintf(buf, sizeof buf, "%.4g [%.4g, %.4g]", iv.value, iv.lo, iv.hi);
  }
  return buf;
}

namespace {

// The steps of FitScaling, in order: group the trials by batch (GroupSweeps), the trade-off's target loss
// (TargetLoss), the full fit and its bootstrap replicates (Bootstrap), each fit with its interval (the Report*
// steps), the baselines' anchors (Anchors).

// Groups the trials by batch, counts convergent and diverged ones, and leaves out batches with no convergent
// trial (noted). Returns an error message, or empty.
std::string GroupSweeps(const std::vector<ScaleTrial>& trials, ScalingReport& r, Sweeps& sw,
                        std::vector<const ScaleTrial*>& convergent) {
  for (const ScaleTrial& t : trials) {
    sw.by_batch[t.global_batch].push_back(&t);
    auto [it, fresh] = sw.lr_range.try_emplace(t.global_batch, t.peak_lr, t.peak_lr);
    it->second.first = std::min(it->second.first, t.peak_lr);
    it->second.second = std::max(it->second.second, t.peak_lr);
    if (Convergent(t)) {
      convergent.push_back(&t);
      ++r.convergent_trials;
    } else {
      ++r.diverged_trials;
    }
  }
  if (convergent.empty()) {
    return "no convergent trial: all " + std::to_string(trials.size()) +
           " trials diverged or have no finite final loss";
  }
  // Batches with no convergent trial take no part (noted); the LR law needs 2 that have one.
  for (auto it = sw.by_batch.begin(); it != sw.by_batch.end();) {
    const bool any = std::any_of(it->second.begin(), it->second.end(), [](auto* t) { return Convergent(*t); });
    if (!any) {
      r.notes.push_back("global batch " + std::to_string(it->first) + ": every trial diverged; left out");
      sw.lr_range.erase(it->first);
      it = sw.by_batch.erase(it);
    } else {
      ++it;
    }
  }
  if (sw.by_batch.size() < 2) {
    return "too few batch sizes: the fit needs convergent trials at 2 or more global batch sizes, got " +
           std::to_string(sw.by_batch.size()) + " (batch " + std::to_string(sw.by_batch.begin()->first) + ")";
  }
  return "";
}

// The target loss of the steps-examples trade-off: the loss every batch's best run reaches, plus 1% (NaN without
// loss curves), unless the options give one.
double TargetLoss(const Sweeps& sw, const ExtrapolationOptions& o) {
  if (std::isfinite(o.target_loss)) return o.target_loss;
  double worst = -std::numeric_limits<double>::infinity();
  bool any_curve = false;
  for (const auto& [batch, group] : sw.by_batch) {
    double best = std::numeric_limits<double>::infinity();
    for (const ScaleTrial* t : group) {
      if (Convergent(*t) && !t->curve.empty()) best = std::min(best, LowestLoss(*t)), any_curve = true;
    }
    if (std::isfinite(best)) worst = std::max(worst, best);
  }
  return any_curve && std::isfinite(worst) ? worst + 0.01 * std::abs(worst) : o.target_loss;
}

// Every fit's bootstrap replicates.
struct Replicates {
  std::map<int64_t, std::vector<double>> best;
  std::vector<double> free_eps, free_noise, fixed_eps, noise, joint_eps, joint_noise, smin, bcrit, emin;
  std::vector<double> lr_coef, lr_exp, b_coef, b_exp, edge;
  std::vector<std::pair<double, double>> free_pairs, fixed_pairs, joint_pairs;
  std::vector<internal::Line> power, surface;  // bootstrap lines log(lr) = a + b log(B)
};

// Resamples within each batch (and, for the compute laws, within each budget) and fits again, o.bootstrap times.
Replicates Bootstrap(const Sweeps& sw, const ExtrapolationOptions& o, double target, const std::vector<Group>& budgets) {
  Replicates d;
  std::mt19937_64 rng(o.seed);
  for (int rep = 0; rep < o.bootstrap; ++rep) {
    Sweeps s;
    s.lr_range = sw.lr_range;
    for (const auto& [batch, group] : sw.by_batch) s.by_batch[batch] = Resample(group, rng);
    std::vector<Group> bb;
    if (budgets.size() >= 2) {
      for (const Group& g : budgets) bb.push_back(Resample(g, rng));
    }
    const OneFit f = FitOnce(s, o, target, bb);
    for (const BestLr& b : f.best) d.best[b.global_batch].push_back(b.lr.value);
    if (f.free_law) {
      d.free_eps.push_back(f.free_law->eps_max), d.free_noise.push_back(f.free_law->b_noise);
      d.free_pairs.emplace_back(f.free_law->eps_max, f.free_law->b_noise);
    }
    if (f.noise_law) {
      d.fixed_eps.push_back(f.noise_law->eps_max), d.noise.push_back(f.noise);
      d.fixed_pairs.emplace_back(f.noise_law->eps_max, f.noise_law->b_noise);
    }
    if (std::isfinite(f.edge)) d.edge.push_back(f.edge);
    if (f.power) d.power.push_back(*f.power);
    if (f.surface) d.surface.push_back(*f.surface);
    if (f.joint_law) {
      d.joint_eps.push_back(f.joint_law->eps_max), d.joint_noise.push_back(f.joint_law->b_noise);
      d.joint_pairs.emplace_back(f.joint_law->eps_max, f.joint_law->b_noise);
    }
    if (f.tradeoff) {
      d.smin.push_back(f.tradeoff->first), d.bcrit.push_back(f.tradeoff->second);
      d.emin.push_back(f.tradeoff->first * f.tradeoff->second);
    }
    if (f.compute_laws) {
      d.lr_coef.push_back(std::exp(f.compute_laws->lr.a)), d.lr_exp.push_back(f.compute_laws->lr.b);
      d.b_coef.push_back(std::exp(f.compute_laws->batch.a)), d.b_exp.push_back(f.compute_laws->batch.b);
    }
  }
  return d;
}

// The per-batch best LRs and the ε_opt(B) laws (free, tied to the measured noise scale, joint), with intervals.
void ReportLrLaws(const OneFit& full, const Replicates& d, double lv, ScalingReport& r) {
  for (BestLr& b : r.best_lr) {
    auto it = d.best.find(b.global_batch);
    b.lr = Spread(b.lr.value, it == d.best.end() ? std::vector<double>{} : it->second, lv);
    if (b.at_edge) {
      r.notes.push_back("global batch " + std::to_string(b.global_batch) + ": the best LR (" + Num(b.lr.value) +
                        ") is at the edge of its sweep; the optimum may lie outside it");
    }
  }
  if (full.free_law) {
    LrBatchFit f;
    f.eps_max = Spread(full.free_law->eps_max, d.free_eps, lv);
    f.b_noise = Spread(full.free_law->b_noise, d.free_noise, lv);
    f.identified = full.free_law->identified;
    f.rms_log2_residual = full.free_law->rms_log2;
    f.draws = d.free_pairs;
    r.lr_fit = f;
    if (!f.identified) {
      r.notes.push_back("lr_fit: B_noise ran into its search bound (" + Num(f.b_noise.value) +
                        "): the best LRs do not show both regimes of ε_opt(B)");
    }
  } else {
    r.notes.push_back("lr_fit: needs best LRs at 2 or more batch sizes");
  }
  if (full.noise_law) {
    LrBatchFit f;
    f.eps_max = Spread(full.noise_law->eps_max, d.fixed_eps, lv);
    f.b_noise = Spread(full.noise, d.noise, lv);
    f.rms_log2_residual = full.noise_law->rms_log2;
    f.draws = d.fixed_pairs;
    r.measured_noise_scale = f.b_noise;
    r.noise_fit = f;
    if (r.lr_fit) r.noise_ratio = r.lr_fit->b_noise.value / full.noise;
    LrBatchFit j;
    j.eps_max = Spread(full.joint_law->eps_max, d.joint_eps, lv);
    j.b_noise = Spread(full.joint_law->b_noise, d.joint_noise, lv);
    j.rms_log2_residual = full.joint_law->rms_log2;
    j.draws = d.joint_pairs;
    r.joint_fit = j;
  } else {
    r.notes.push_back("noise_fit: no trial reports a measured noise scale (noise_scale > 0)");
  }
  if (std::isfinite(full.edge)) r.stability_edge = Spread(full.edge, d.edge, lv);
}

// A power law lr = c B^a from the full fit's line and its bootstrap lines (log c = line.a, a = line.b).
PowerLaw LawOf(const internal::Line& fit, const std::vector<internal::Line>& draws, double lv, int points) {
  PowerLaw pl;
  std::vector<double> coef, expo;
  for (const auto& l : draws) {
    coef.push_back(std::exp(l.a)), expo.push_back(l.b);
    pl.draws.emplace_back(std::exp(l.a), l.b);
  }
  pl.coefficient = Spread(std::exp(fit.a), coef, lv);
  pl.exponent = Spread(fit.b, expo, lv);
  pl.points = points;
  return pl;
}

// The power laws of the best LR, the steps-examples trade-off and the compute laws, with intervals.
void ReportPowerAndComputeLaws(const OneFit& full, const Replicates& d, double lv, double target,
                               const std::vector<Group>& budgets, ScalingReport& r) {
  const int points = static_cast<int>(full.best.size());
  if (full.power) r.power_fit = LawOf(*full.power, d.power, lv, points);
  if (full.surface) {
    r.surface_fit = LawOf(*full.surface, d.surface, lv, points);
  } else {
    r.notes.push_back("surface_fit: needs 3 or more convergent LRs at each of 2 or more batch sizes; the default "
                      "rule falls back to power_fit");
  }
  if (full.tradeoff) {
    TradeoffFit t;
    t.target_loss = target;
    t.s_min = Spread(full.tradeoff->first, d.smin, lv);
    t.b_crit = Spread(full.tradeoff->second, d.bcrit, lv);
    t.e_min = Spread(full.tradeoff->first * full.tradeoff->second, d.emin, lv);
    for (const auto& p : full.steps) t.steps_by_batch.emplace_back(static_cast<int64_t>(p.batch), p.steps);
    r.tradeoff = t;
  } else {
    r.notes.push_back(std::isfinite(target)
                          ? "tradeoff: fewer than 2 batch sizes reach the target loss " + Num(target)
                          : "tradeoff: no loss curves (ScaleTrial.curve) to find steps to a target loss");
  }
  if (full.compute_laws) {
    const LawPair& l = *full.compute_laws;
    PowerLaw lr, b;
    lr.coefficient = Spread(std::exp(l.lr.a), d.lr_coef, lv);
    lr.exponent = Spread(l.lr.b, d.lr_exp, lv);
    b.coefficient = Spread(std::exp(l.batch.a), d.b_coef, lv);
    b.exponent = Spread(l.batch.b, d.b_exp, lv);
    lr.points = b.points = l.points;
    lr.budgets = b.budgets = static_cast<int>(budgets.size());
    r.lr_vs_compute = lr;
    r.batch_vs_compute = b;
  } else {
    r.notes.push_back("lr/batch vs compute: needs near-optimal trials at 2 or more compute budgets, got " +
                      std::to_string(budgets.size()));
  }
}

// The baselines' anchors: the best trial overall, and the anchor the options name (the largest batch's best).
void Anchors(const Sweeps& sw, const std::vector<const ScaleTrial*>& convergent, const ExtrapolationOptions& o,
             ScalingReport& r) {
  const ScaleTrial* best_trial = convergent.front();
  for (const ScaleTrial* t : convergent) {
    if (t->final_loss < best_trial->final_loss) best_trial = t;
  }
  auto anchor_at = [&](int64_t batch) {
    ScaleAnchorPoint a;
    a.global_batch = batch;
    const ScaleTrial* bt = nullptr;
    for (const ScaleTrial* t : sw.by_batch.at(batch)) {
      if (Convergent(*t) && (!bt || t->final_loss < bt->final_loss)) bt = t;
    }
    a.trial_id = bt ? bt->id : "";
    for (const BestLr& b : r.best_lr) {
      if (b.global_batch == batch) a.lr = b.lr.value, a.loss = b.loss;
    }
    return a;
  };
  r.best_overall = anchor_at(best_trial->global_batch);
  r.anchor = o.anchor == ScaleAnchor::kBestOverall ? r.best_overall : anchor_at(sw.by_batch.rbegin()->first);
}

}  // namespace

Fitted<ScalingReport> FitScaling(const std::vector<ScaleTrial>& trials, const ExtrapolationOptions& o) {
  if (std::string e = Validate(trials); !e.empty()) return Fitted<ScalingReport>::Fail(e);
  if (o.bootstrap < 0 || !(o.interval > 0 && o.interval < 1) || o.parabola_neighbours < 1) {
    return Fitted<ScalingReport>::Fail(
        "options: bootstrap must be >= 0, interval in (0, 1), parabola_neighbours >= 1");
  }
  ScalingReport r;
  r.interval_level = o.interval;
  r.bootstrap = o.bootstrap;
  Sweeps sw;
  std::vector<const ScaleTrial*> convergent;
  if (std::string e = GroupSweeps(trials, r, sw, convergent); !e.empty()) return Fitted<ScalingReport>::Fail(e);
  const double target = TargetLoss(sw, o);
  const std::vector<Group> budgets = ComputeGroups(convergent, o.compute_group_tolerance);
  const OneFit full = FitOnce(sw, o, target, budgets);
  r.best_lr = full.best;
  const Replicates draws = Bootstrap(sw, o, target, budgets);
  ReportLrLaws(full, draws, o.interval, r);
  ReportPowerAndComputeLaws(full, draws, o.interval, target, budgets, r);
  Anchors(sw, convergent, o, r);
  return Fitted<ScalingReport>{r, ""};
}

}  // namespace ladder::search
