#include "search/extrapolation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "search/scale_math.h"

namespace ladder::search {
namespace {

using internal::FitLine;
using internal::Median;
using internal::Minimize1D;
using internal::Quantile;
using Group = std::vector<const ScaleTrial*>;

bool Convergent(const ScaleTrial& t) { return !t.diverged && std::isfinite(t.final_loss); }
double ComputeOf(const ScaleTrial& t) {
  return t.compute > 0 ? t.compute : static_cast<double>(t.steps) * static_cast<double>(t.global_batch);
}
std::string Num(double v) {
  std::ostringstream os;
  os.precision(4);
  os << v;
  return os.str();
}
std::string TrialName(const ScaleTrial& t, size_t index) {
  return t.id.empty() ? "trials[" + std::to_string(index) + "]" : "trial " + t.id;
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

// ---- best LR of one sweep -----------------------------------------------------------------------------------

// `lr_lo` / `lr_hi`: the smallest and largest LR swept at this batch, diverged trials included.
std::optional<BestLr> BestLrOf(const Group& sweep, int neighbours, double lr_lo, double lr_hi) {
  std::map<double, std::vector<double>> by_lr;  // log2 lr -> losses
  for (const ScaleTrial* t : sweep) {
    if (Convergent(*t)) by_lr[std::log2(t->peak_lr)].push_back(t->final_loss);
  }
  if (by_lr.empty()) return std::nullopt;
  std::vector<double> xs, means;
  for (const auto& [x, losses] : by_lr) {
    xs.push_back(x);
    double s = 0;
    for (double l : losses) s += l;
    means.push_back(s / static_cast<double>(losses.size()));
  }
  const size_t best = static_cast<size_t>(std::min_element(means.begin(), means.end()) - means.begin());
  BestLr out;
  out.global_batch = sweep.front()->global_batch;
  out.trials = 0;
  for (const auto& kv : by_lr) out.trials += static_cast<int>(kv.second.size());
  out.lr.value = std::exp2(xs[best]);
  out.loss = means[best];
  const double eps = 1e-9;
  out.at_edge = xs[best] <= std::log2(lr_lo) + eps || xs[best] >= std::log2(lr_hi) - eps;
  // Quadratic in x around the argmin: loss ≈ c0 + c1 (x − x*) + c2 (x − x*)², every trial a point, over
  // `neighbours` swept LRs each side. A cliff among them (the loss doubling one step above the best LR) bends it
  // under the trials: a minimum that lies below every trial by more than the parabola dips between two
  // neighbouring swept LRs (c2 (step/2)², a vertex halfway between them) does not describe the sweep, and the
  // window narrows by one LR each side; with none left, the argmin stands. (Any loss scale: no sign assumed.)
  for (int n = neighbours; n >= 1 && !out.parabola; --n) {  // neighbours >= 1 (FindBestLr, FitScaling check)
    const size_t lo = best >= static_cast<size_t>(n) ? best - n : 0;
    const size_t hi = std::min(xs.size() - 1, best + n);
    if (hi - lo + 1 < 3) break;
    std::vector<double> design, y;
    double half_step = std::numeric_limits<double>::infinity();
    for (size_t i = lo; i <= hi; ++i) {
      if (i > lo) half_step = std::min(half_step, (xs[i] - xs[i - 1]) / 2);
      for (double l : by_lr[xs[i]]) {
        const double d = xs[i] - xs[best];
        design.insert(design.end(), {1.0, d, d * d});
        y.push_back(l);
      }
    }
    auto c = internal::LeastSquares(design, y, {}, 3);
    if (!c || !((*c)[2] > 0)) continue;
    const double d = std::clamp(-(*c)[1] / (2 * (*c)[2]), xs[lo] - xs[best], xs[hi] - xs[best]);
    const double floor = (*c)[0] + (*c)[1] * d + (*c)[2] * d * d;
    // The lowest single trial, not the lowest mean: the trials' spread is the test's allowance for noise.
    const double lowest = *std::min_element(y.begin(), y.end());
    if (floor < lowest - (*c)[2] * half_step * half_step - 1e-12) continue;
    out.lr.value = std::exp2(xs[best] + d);
    out.parabola = true;
  }
  out.lr.lo = out.lr.hi = out.lr.value;
  return out;
}

// ---- ε_opt(B) = ε_max / (1 + B_noise/B) --------------------------------------------------------------------

struct LawPoint {
  double batch, lr;
};

// log ε_max minimizing the squared log residuals for a fixed B_noise, and their sum.
std::pair<double, double> LogEpsMaxFor(const std::vector<LawPoint>& pts, double b_noise) {
  double s = 0;
  for (const auto& p : pts) s += std::log(p.lr) + std::log1p(b_noise / p.batch);
  const double log_eps = s / static_cast<double>(pts.size());
  double sse = 0;
  for (const auto& p : pts) {
    const double r = std::log(p.lr) - (log_eps - std::log1p(b_noise / p.batch));
    sse += r * r;
  }
  return {log_eps, sse};
}

struct LawFit {
  double eps_max, b_noise, rms_log2;
  bool identified;
};

std::optional<LawFit> FitLawFree(const std::vector<LawPoint>& pts, double max_noise_factor) {
  if (pts.size() < 2) return std::nullopt;
  double bmin = pts.front().batch, bmax = bmin;
  for (const auto& p : pts) bmin = std::min(bmin, p.batch), bmax = std::max(bmax, p.batch);
  if (!(bmax > bmin)) return std::nullopt;
  const double lo = std::log(bmin / 100), hi = std::log(bmax * max_noise_factor);
  const double u = Minimize1D([&](double v) { return LogEpsMaxFor(pts, std::exp(v)).second; }, lo, hi, 96);
  const auto [log_eps, sse] = LogEpsMaxFor(pts, std::exp(u));
  const double margin = 0.02 * (hi - lo);
  return LawFit{std::exp(log_eps), std::exp(u), std::sqrt(sse / pts.size()) / std::log(2.0),
                u - lo > margin && hi - u > margin};
}

// B_noise weighed between the best LRs (sd lr_sigma in ln) and the measurement (sd noise_sigma in ln).
LawFit FitLawJoint(const std::vector<LawPoint>& pts, double measured, double lr_sigma, double noise_sigma,
                   double max_noise_factor) {
  double bmin = pts.front().batch, bmax = bmin;
  for (const auto& p : pts) bmin = std::min(bmin, p.batch), bmax = std::max(bmax, p.batch);
  const double lo = std::min(std::log(bmin / 100), std::log(measured) - 5 * noise_sigma);
  const double hi = std::max(std::log(bmax * max_noise_factor), std::log(measured) + 5 * noise_sigma);
  const double m = std::log(measured);
  const double u = Minimize1D(
      [&](double v) {
        const double z = (v - m) / noise_sigma;
        return LogEpsMaxFor(pts, std::exp(v)).second / (lr_sigma * lr_sigma) + z * z;
      },
      lo, hi, 96);
  const auto [log_eps, sse] = LogEpsMaxFor(pts, std::exp(u));
  return LawFit{std::exp(log_eps), std::exp(u), std::sqrt(sse / pts.size()) / std::log(2.0), true};
}

LawFit FitLawFixedNoise(const std::vector<LawPoint>& pts, double b_noise) {
  const auto [log_eps, sse] = LogEpsMaxFor(pts, b_noise);
  return LawFit{std::exp(log_eps), b_noise, std::sqrt(sse / pts.size()) / std::log(2.0), true};
}

// ---- the loss surface: loss(x, B) ≈ L*(B) + k(B)·(x − c − α·u(B))², x = log2 lr, u = log2 B − mean ------------

struct SurfaceBatch {
  double u = 0;                  // log2 B minus the mean over batches
  std::vector<double> x, y;      // log2 lr and loss / the batch's best mean loss
  std::vector<int> group;        // the trial's seed group (0..groups-1): one L* per batch and seed
  int groups = 1;
};

// Sum of squares of the best per-batch (L* per seed group, one k >= 0) for a given optimum line (c, α).
double SurfaceSse(const std::vector<SurfaceBatch>& batches, double c, double alpha) {
  double total = 0;
  std::vector<double> mz, my;
  std::vector<int> count;
  for (const SurfaceBatch& b : batches) {
    const double xs = c + alpha * b.u;
    const size_t n = b.x.size();
    mz.assign(b.groups, 0.0), my.assign(b.groups, 0.0), count.assign(b.groups, 0);
    std::vector<double> z(n);
    for (size_t i = 0; i < n; ++i) {
      z[i] = (b.x[i] - xs) * (b.x[i] - xs);
      mz[b.group[i]] += z[i], my[b.group[i]] += b.y[i], ++count[b.group[i]];
    }
    for (int g = 0; g < b.groups; ++g) {
      if (count[g] > 0) mz[g] /= count[g], my[g] /= count[g];
    }
    double szz = 0, szy = 0;
    for (size_t i = 0; i < n; ++i) {
      const double zc = z[i] - mz[b.group[i]];
      szz += zc * zc, szy += zc * (b.y[i] - my[b.group[i]]);
    }
    const double k = szz > 0 ? std::max(0.0, szy / szz) : 0.0;
    for (size_t i = 0; i < n; ++i) {
      const double r = b.y[i] - my[b.group[i]] - k * (z[i] - mz[b.group[i]]);
      total += r * r;
    }
  }
  return total;
}

// The trials of each batch within `window` octaves of its best LR (at least its 3 LRs nearest that), losses
// relative to the batch's best. nullopt when a batch has fewer than 3 distinct LRs or there are < 2 batches.
std::optional<std::vector<SurfaceBatch>> SurfaceData(const std::map<int64_t, Group>& by_batch,
                                                     const std::vector<BestLr>& best, double window) {
  if (best.size() < 2) return std::nullopt;
  std::vector<SurfaceBatch> out;
  double mean_u = 0;
  for (const BestLr& bl : best) {
    const double xb = std::log2(bl.lr.value);
    std::map<double, std::vector<std::pair<double, int64_t>>> by_x;  // log2 lr -> (loss, seed)
    for (const ScaleTrial* t : by_batch.at(bl.global_batch)) {
      if (Convergent(*t)) by_x[std::log2(t->peak_lr)].push_back({t->final_loss, t->seed});
    }
    if (by_x.size() < 3) return std::nullopt;
    std::vector<double> dist;
    for (const auto& kv : by_x) dist.push_back(std::abs(kv.first - xb));
    std::sort(dist.begin(), dist.end());
    const double reach = std::max(window, dist[2]);
    SurfaceBatch sb;
    sb.u = std::log2(static_cast<double>(bl.global_batch));
    mean_u += sb.u;
    const double scale = bl.loss > 0 ? bl.loss : 1.0;
    std::map<int64_t, int> groups;  // seed -> group; a seed seen at fewer than 2 LRs joins the unknown group
    std::map<int64_t, std::set<double>> seed_lrs;
    for (const auto& [x, runs] : by_x) {
      if (std::abs(x - xb) > reach + 1e-9) continue;
      for (const auto& run : runs) seed_lrs[run.second].insert(x);
    }
    for (const auto& [seed, lrs] : seed_lrs) {
      if (seed >= 0 && lrs.size() >= 2) groups.emplace(seed, static_cast<int>(groups.size()) + 1);
    }
    sb.groups = static_cast<int>(groups.size()) + 1;  // group 0: unknown seeds
    for (const auto& [x, runs] : by_x) {
      if (std::abs(x - xb) > reach + 1e-9) continue;
      for (const auto& [l, seed] : runs) {
        auto g = groups.find(seed);
        sb.x.push_back(x), sb.y.push_back(l / scale), sb.group.push_back(g == groups.end() ? 0 : g->second);
      }
    }
    out.push_back(std::move(sb));
  }
  mean_u /= static_cast<double>(out.size());
  for (SurfaceBatch& b : out) b.u -= mean_u;
  return out;
}

// Fits (c, α), α in [0, 1]; returns ln lr = a + b ln B like the power fit.
std::optional<internal::Line> FitSurface(const std::map<int64_t, Group>& by_batch, const std::vector<BestLr>& best,
                                         double window) {
  auto data = SurfaceData(by_batch, best, window);
  if (!data) return std::nullopt;
  double xlo = std::numeric_limits<double>::infinity(), xhi = -xlo, mean_log2b = 0;
  for (const BestLr& b : best) {
    xlo = std::min(xlo, std::log2(b.lr.value)), xhi = std::max(xhi, std::log2(b.lr.value));
    mean_log2b += std::log2(static_cast<double>(b.global_batch));
  }
  mean_log2b /= static_cast<double>(best.size());
  auto best_c = [&](double alpha, double* sse) {
    const double c = Minimize1D([&](double v) { return SurfaceSse(*data, v, alpha); }, xlo - 2, xhi + 2, 48);
    if (sse) *sse = SurfaceSse(*data, c, alpha);
    return c;
  };
  const double alpha = Minimize1D(
      [&](double a) {
        double sse;
        best_c(a, &sse);
        return sse;
      },
      0.0, 1.0, 21);
  const double c = best_c(alpha, nullptr);
  // log2 lr = c + α (log2 B − m)  ⇒  ln lr = ln2·(c − α m) + α ln B.
  return internal::Line{std::log(2.0) * (c - alpha * mean_log2b), alpha};
}

// ---- steps to a target loss ---------------------------------------------------------------------------------

double StepsToTarget(const ScaleTrial& t, double target) {
  if (!Convergent(t)) return kNaN;
  std::vector<LossPoint> c = t.curve;
  std::sort(c.begin(), c.end(), [](const LossPoint& a, const LossPoint& b) { return a.step < b.step; });
  for (size_t i = 0; i < c.size(); ++i) {
    if (!(c[i].loss <= target)) continue;
    if (i == 0 || !std::isfinite(c[i - 1].loss)) return static_cast<double>(c[i].step);
    const double f = (c[i - 1].loss - target) / (c[i - 1].loss - c[i].loss);
    return static_cast<double>(c[i - 1].step) + f * static_cast<double>(c[i].step - c[i - 1].step);
  }
  return kNaN;
}

double LowestLoss(const ScaleTrial& t) {
  double m = t.final_loss;
  if (std::isfinite(t.best_loss)) m = std::min(m, t.best_loss);
  for (const auto& p : t.curve) {
    if (std::isfinite(p.loss)) m = std::min(m, p.loss);
  }
  return m;
}

struct TradeoffPoint {
  double batch, steps;
};

// S(B) = S_min (1 + B_crit/B) in log space; returns {S_min, B_crit}.
std::optional<std::pair<double, double>> FitTradeoff(const std::vector<TradeoffPoint>& pts) {
  if (pts.size() < 2) return std::nullopt;
  double bmin = pts.front().batch, bmax = bmin;
  for (const auto& p : pts) bmin = std::min(bmin, p.batch), bmax = std::max(bmax, p.batch);
  if (!(bmax > bmin)) return std::nullopt;
  auto log_smin = [&](double bc, double* sse) {
    double s = 0;
    for (const auto& p : pts) s += std::log(p.steps) - std::log1p(bc / p.batch);
    const double ls = s / static_cast<double>(pts.size());
    if (sse) {
      *sse = 0;
      for (const auto& p : pts) {
        const double r = std::log(p.steps) - ls - std::log1p(bc / p.batch);
        *sse += r * r;
      }
    }
    return ls;
  };
  const double u = Minimize1D(
      [&](double v) {
        double sse;
        log_smin(std::exp(v), &sse);
        return sse;
      },
      std::log(bmin / 1000), std::log(bmax * 1000), 96);
  return std::make_pair(std::exp(log_smin(std::exp(u), nullptr)), std::exp(u));
}

// ---- power laws against compute ----------------------------------------------------------------------------

std::vector<Group> ComputeGroups(const std::vector<const ScaleTrial*>& convergent, double tolerance) {
  std::vector<const ScaleTrial*> sorted = convergent;
  std::sort(sorted.begin(), sorted.end(),
            [](const ScaleTrial* a, const ScaleTrial* b) { return ComputeOf(*a) < ComputeOf(*b); });
  std::vector<Group> groups;
  for (const ScaleTrial* t : sorted) {
    if (groups.empty() || ComputeOf(*t) > ComputeOf(*groups.back().front()) * (1 + tolerance)) groups.emplace_back();
    groups.back().push_back(t);
  }
  return groups;
}

struct LawPair {
  internal::Line lr, batch;
  int points;
};

std::optional<LawPair> FitComputeLaws(const std::vector<Group>& groups, double tolerance) {
  std::vector<double> lc, llr, lb;
  for (const Group& g : groups) {
    if (g.empty()) continue;
    double best = g.front()->final_loss, c = 0;
    for (const ScaleTrial* t : g) best = std::min(best, t->final_loss), c += std::log(ComputeOf(*t));
    c /= static_cast<double>(g.size());
    for (const ScaleTrial* t : g) {
      if (t->final_loss <= best + tolerance * std::abs(best)) {
        lc.push_back(c);
        llr.push_back(std::log(t->peak_lr));
        lb.push_back(std::log(static_cast<double>(t->global_batch)));
      }
    }
  }
  auto lr = FitLine(lc, llr);
  auto b = FitLine(lc, lb);
  if (!lr || !b) return std::nullopt;
  return LawPair{*lr, *b, static_cast<int>(lc.size())};
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

Interval Spread(double value, const std::vector<double>& draws, double level) {
  const internal::Bounds b = internal::Spread(value, draws, level);
  return Interval{value, b.lo, b.hi};
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

double LrBatchFit::Lr(double global_batch) const { return eps_max.value / (1 + b_noise.value / global_batch); }

double PowerLaw::At(double x) const { return coefficient.value * std::pow(x, exponent.value); }

const char* LrRuleName(LrRule rule) {
  switch (rule) {
    case LrRule::kFit: return "fit";
    case LrRule::kPowerFit: return "power_fit";
    case LrRule::kSurfaceFit: return "surface_fit";
    case LrRule::kLrFit: return "lr_fit";
    case LrRule::kNoiseFit: return "noise_fit";
    case LrRule::kJointFit: return "joint_fit";
    case LrRule::kLinear: return "linear";
    case LrRule::kSqrt: return "sqrt";
  }
  return "?";
}

namespace {
constexpr LrRule kAllRules[] = {LrRule::kFit,     LrRule::kPowerFit,  LrRule::kSurfaceFit, LrRule::kLrFit,
                                LrRule::kNoiseFit, LrRule::kJointFit, LrRule::kLinear,     LrRule::kSqrt};
}  // namespace

std::optional<LrRule> ParseLrRule(const std::string& name) {
  for (LrRule rule : kAllRules) {
    if (name == LrRuleName(rule)) return rule;
  }
  return std::nullopt;
}

std::vector<std::string> LrRuleNames() {
  std::vector<std::string> names;
  for (LrRule rule : kAllRules) names.emplace_back(LrRuleName(rule));
  return names;
}

Fitted<BestLr> FindBestLr(const std::vector<ScaleTrial>& sweep, int neighbours) {
  if (neighbours < 1) {
    return Fitted<BestLr>::Fail("FindBestLr: neighbours must be >= 1, got " + std::to_string(neighbours));
  }
  if (std::string e = Validate(sweep); !e.empty()) return Fitted<BestLr>::Fail(e);
  Group g;
  double lo = sweep.front().peak_lr, hi = lo;
  for (const ScaleTrial& t : sweep) {
    if (t.global_batch != sweep.front().global_batch) {
      return Fitted<BestLr>::Fail("FindBestLr: trials at several global batch sizes (" +
                                  std::to_string(sweep.front().global_batch) + " and " +
                                  std::to_string(t.global_batch) + "); pass one sweep");
    }
    g.push_back(&t);
    lo = std::min(lo, t.peak_lr), hi = std::max(hi, t.peak_lr);
  }
  auto b = BestLrOf(g, neighbours, lo, hi);
  if (!b) {
    return Fitted<BestLr>::Fail("global batch " + std::to_string(sweep.front().global_batch) +
                                ": no convergent trial (every one diverged or has no finite final loss)");
  }
  return Fitted<BestLr>{b, ""};
}

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
    return Fitted<ScalingReport>::Fail("no convergent trial: all " + std::to_string(trials.size()) +
                                       " trials diverged or have no finite final loss");
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
    return Fitted<ScalingReport>::Fail(
        "too few batch sizes: the fit needs convergent trials at 2 or more global batch sizes, got " +
        std::to_string(sw.by_batch.size()) + " (batch " + std::to_string(sw.by_batch.begin()->first) + ")");
  }

  // Target loss for the steps-examples trade-off: the loss every batch's best run reaches, plus 1%.
  double target = o.target_loss;
  bool any_curve = false;
  if (!std::isfinite(target)) {
    double worst = -std::numeric_limits<double>::infinity();
    for (const auto& [batch, group] : sw.by_batch) {
      double best = std::numeric_limits<double>::infinity();
      for (const ScaleTrial* t : group) {
        if (Convergent(*t) && !t->curve.empty()) best = std::min(best, LowestLoss(*t)), any_curve = true;
      }
      if (std::isfinite(best)) worst = std::max(worst, best);
    }
    if (any_curve && std::isfinite(worst)) target = worst + 0.01 * std::abs(worst);
  }
  const std::vector<Group> budgets = ComputeGroups(convergent, o.compute_group_tolerance);

  const OneFit full = FitOnce(sw, o, target, budgets);
  r.best_lr = full.best;

  // Bootstrap replicates: resample within each batch (and, for the compute laws, within each budget).
  std::mt19937_64 rng(o.seed);
  std::map<int64_t, std::vector<double>> best_draws;
  std::vector<double> free_eps, free_noise, fixed_eps, noise_draws, joint_eps, joint_noise, smin, bcrit, emin;
  std::vector<double> lr_coef, lr_exp, b_coef, b_exp, edge_draws;
  std::vector<std::pair<double, double>> free_pairs, fixed_pairs, joint_pairs;
  std::vector<internal::Line> pow_draws, surf_draws;  // bootstrap lines log(lr) = a + b log(B)
  for (int rep = 0; rep < o.bootstrap; ++rep) {
    Sweeps s;
    s.lr_range = sw.lr_range;
    for (const auto& [batch, group] : sw.by_batch) s.by_batch[batch] = Resample(group, rng);
    std::vector<Group> bb;
    if (budgets.size() >= 2) {
      for (const Group& g : budgets) bb.push_back(Resample(g, rng));
    }
    const OneFit f = FitOnce(s, o, target, bb);
    for (const BestLr& b : f.best) best_draws[b.global_batch].push_back(b.lr.value);
    if (f.free_law) {
      free_eps.push_back(f.free_law->eps_max), free_noise.push_back(f.free_law->b_noise);
      free_pairs.emplace_back(f.free_law->eps_max, f.free_law->b_noise);
    }
    if (f.noise_law) {
      fixed_eps.push_back(f.noise_law->eps_max), noise_draws.push_back(f.noise);
      fixed_pairs.emplace_back(f.noise_law->eps_max, f.noise_law->b_noise);
    }
    if (std::isfinite(f.edge)) edge_draws.push_back(f.edge);
    if (f.power) pow_draws.push_back(*f.power);
    if (f.surface) surf_draws.push_back(*f.surface);
    if (f.joint_law) {
      joint_eps.push_back(f.joint_law->eps_max), joint_noise.push_back(f.joint_law->b_noise);
      joint_pairs.emplace_back(f.joint_law->eps_max, f.joint_law->b_noise);
    }
    if (f.tradeoff) {
      smin.push_back(f.tradeoff->first), bcrit.push_back(f.tradeoff->second);
      emin.push_back(f.tradeoff->first * f.tradeoff->second);
    }
    if (f.compute_laws) {
      lr_coef.push_back(std::exp(f.compute_laws->lr.a)), lr_exp.push_back(f.compute_laws->lr.b);
      b_coef.push_back(std::exp(f.compute_laws->batch.a)), b_exp.push_back(f.compute_laws->batch.b);
    }
  }
  const double lv = o.interval;
  for (BestLr& b : r.best_lr) {
    b.lr = Spread(b.lr.value, best_draws[b.global_batch], lv);
    if (b.at_edge) {
      r.notes.push_back("global batch " + std::to_string(b.global_batch) + ": the best LR (" + Num(b.lr.value) +
                        ") is at the edge of its sweep; the optimum may lie outside it");
    }
  }
  if (full.free_law) {
    LrBatchFit f;
    f.eps_max = Spread(full.free_law->eps_max, free_eps, lv);
    f.b_noise = Spread(full.free_law->b_noise, free_noise, lv);
    f.identified = full.free_law->identified;
    f.rms_log2_residual = full.free_law->rms_log2;
    f.draws = free_pairs;
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
    f.eps_max = Spread(full.noise_law->eps_max, fixed_eps, lv);
    f.b_noise = Spread(full.noise, noise_draws, lv);
    f.rms_log2_residual = full.noise_law->rms_log2;
    f.draws = fixed_pairs;
    r.measured_noise_scale = f.b_noise;
    r.noise_fit = f;
    if (r.lr_fit) r.noise_ratio = r.lr_fit->b_noise.value / full.noise;
    LrBatchFit j;
    j.eps_max = Spread(full.joint_law->eps_max, joint_eps, lv);
    j.b_noise = Spread(full.joint_law->b_noise, joint_noise, lv);
    j.rms_log2_residual = full.joint_law->rms_log2;
    j.draws = joint_pairs;
    r.joint_fit = j;
  } else {
    r.notes.push_back("noise_fit: no trial reports a measured noise scale (noise_scale > 0)");
  }
  if (std::isfinite(full.edge)) r.stability_edge = Spread(full.edge, edge_draws, lv);
  // A power law lr = c B^a from the full fit's line and its bootstrap lines (log c = line.a, a = line.b).
  auto law = [&](const internal::Line& fit, const std::vector<internal::Line>& draws) {
    PowerLaw pl;
    std::vector<double> coef, expo;
    for (const auto& l : draws) {
      coef.push_back(std::exp(l.a)), expo.push_back(l.b);
      pl.draws.emplace_back(std::exp(l.a), l.b);
    }
    pl.coefficient = Spread(std::exp(fit.a), coef, lv);
    pl.exponent = Spread(fit.b, expo, lv);
    pl.points = static_cast<int>(full.best.size());
    return pl;
  };
  if (full.power) r.power_fit = law(*full.power, pow_draws);
  if (full.surface) {
    r.surface_fit = law(*full.surface, surf_draws);
  } else {
    r.notes.push_back("surface_fit: needs 3 or more convergent LRs at each of 2 or more batch sizes; the default "
                      "rule falls back to power_fit");
  }
  if (full.tradeoff) {
    TradeoffFit t;
    t.target_loss = target;
    t.s_min = Spread(full.tradeoff->first, smin, lv);
    t.b_crit = Spread(full.tradeoff->second, bcrit, lv);
    t.e_min = Spread(full.tradeoff->first * full.tradeoff->second, emin, lv);
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
    lr.coefficient = Spread(std::exp(l.lr.a), lr_coef, lv);
    lr.exponent = Spread(l.lr.b, lr_exp, lv);
    b.coefficient = Spread(std::exp(l.batch.a), b_coef, lv);
    b.exponent = Spread(l.batch.b, b_exp, lv);
    lr.points = b.points = l.points;
    lr.budgets = b.budgets = static_cast<int>(budgets.size());
    r.lr_vs_compute = lr;
    r.batch_vs_compute = b;
  } else {
    r.notes.push_back("lr/batch vs compute: needs near-optimal trials at 2 or more compute budgets, got " +
                      std::to_string(budgets.size()));
  }

  // Anchors of the baselines.
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
  return Fitted<ScalingReport>{r, ""};
}

const PowerLaw* DefaultLaw(const ScalingReport& r, LrRule rule) {
  if (rule == LrRule::kSurfaceFit || (rule == LrRule::kFit && r.surface_fit)) {
    return r.surface_fit ? &*r.surface_fit : nullptr;
  }
  if (rule == LrRule::kFit || rule == LrRule::kPowerFit) return r.power_fit ? &*r.power_fit : nullptr;
  return nullptr;
}

const LrBatchFit* FitForRule(const ScalingReport& r, LrRule rule, const char** name) {
  const LrBatchFit* fit = nullptr;
  LrRule used = rule;
  if (rule == LrRule::kJointFit) fit = r.joint_fit ? &*r.joint_fit : nullptr;
  if (rule == LrRule::kNoiseFit) fit = r.noise_fit ? &*r.noise_fit : nullptr;
  if (rule == LrRule::kLrFit) fit = r.lr_fit ? &*r.lr_fit : nullptr;
  if (name) *name = LrRuleName(used);
  return fit;
}

Fitted<Interval> PredictLr(const ScalingReport& r, double batch, LrRule rule) {
  if (!(batch >= 1)) return Fitted<Interval>::Fail("global_batch must be >= 1, got " + Num(batch));
  const double lv = r.interval_level;
  if (rule == LrRule::kLinear || rule == LrRule::kSqrt) {
    if (!std::isfinite(r.anchor.lr)) return Fitted<Interval>::Fail("no anchor: the report has no best LR");
    const double ratio = batch / static_cast<double>(r.anchor.global_batch);
    const double f = rule == LrRule::kLinear ? ratio : std::sqrt(ratio);
    Interval iv{r.anchor.lr * f, kNaN, kNaN};  // the anchor's own interval, when it is a swept batch's best
    for (const BestLr& b : r.best_lr) {
      if (b.global_batch == r.anchor.global_batch) iv.lo = b.lr.lo * f, iv.hi = b.lr.hi * f;
    }
    return Fitted<Interval>{iv, ""};
  }
  if (rule == LrRule::kFit || rule == LrRule::kPowerFit || rule == LrRule::kSurfaceFit) {
    const PowerLaw* law = DefaultLaw(r, rule);
    if (!law) {
      return Fitted<Interval>::Fail(std::string("rule ") + LrRuleName(rule) +
                                    ": the report has no such fit (see its notes)");
    }
    std::vector<double> draws;
    for (const auto& [c, a] : law->draws) draws.push_back(c * std::pow(batch, a));
    return Fitted<Interval>{Spread(law->At(batch), draws, lv), ""};
  }
  const LrBatchFit* fit = FitForRule(r, rule);
  if (!fit) {
    return Fitted<Interval>::Fail(std::string("rule ") + LrRuleName(rule) +
                                  ": the report has no such fit (see its notes)");
  }
  std::vector<double> draws;
  for (const auto& [eps, noise] : fit->draws) draws.push_back(eps / (1 + noise / batch));
  return Fitted<Interval>{Spread(fit->Lr(batch), draws, lv), ""};
}

}  // namespace ladder::search
