// The candidate laws of the best LR against the batch, fitted to the loss surface (lr_laws.h): the data, the laws'
// curves, one fit, the seed bootstrap, and the combination.
#include "search/scaling/lr_laws.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <utility>

#include "search/scaling/extrapolation_internal.h"
#include "search/scaling/scale_math.h"

namespace ladder::search {
namespace {

using extrapolation_internal::BatchSse;
using extrapolation_internal::BestLrOf;
using extrapolation_internal::Convergent;
using extrapolation_internal::Group;
using extrapolation_internal::SurfaceBatch;

// Grid, then golden-section search to `tol` around the best grid point (Minimize1D with a coarser tolerance: the
// laws are fitted many times per bootstrap).
template <class F>
double Argmin(const F& f, double lo, double hi, int grid, double tol = 1e-3) {
  const double h = (hi - lo) / (grid - 1);
  int best = 0;
  double best_f = 1e300;
  for (int i = 0; i < grid; ++i) {
    const double fi = f(lo + h * i);
    if (fi < best_f) best_f = fi, best = i;
  }
  double a = lo + h * std::max(best - 1, 0), b = lo + h * std::min(best + 1, grid - 1);
  const double g = (std::sqrt(5.0) - 1) / 2;
  double c = b - g * (b - a), d = a + g * (b - a), fc = f(c), fd = f(d);
  while (b - a > tol) {
    if (fc < fd) {
      b = d, d = c, fd = fc, c = b - g * (b - a), fc = f(c);
    } else {
      a = c, c = d, fc = fd, d = a + g * (b - a), fd = f(d);
    }
  }
  const double x = (a + b) / 2;
  return f(x) <= best_f ? x : lo + h * best;
}

constexpr double kTableStep = 1.0 / 32;  // octaves between the tabulated optima of one batch's residual
constexpr double kCensorAtCap = 0.1;    // octaves: a best LR this close under the edge's cap is closed by the edge
constexpr double kTableReach = 4.0;      // octaves past the batch's swept LRs that the table covers
constexpr double kShapeBelow = 6.0;      // B* / B_noise searched from B_min / 2^6 ...
constexpr double kShapeAbove = 12.0;     // ... to B_max · 2^12
constexpr double kMaxLocationSd = 0.5;   // octaves: the jitter of a batch's optimum at most

// log2(1 + 2^t) without overflow.
double Softplus2(double t) { return t > 30 ? t : std::log2(1.0 + std::exp2(t)); }

// The shape part of a law at log2 batch v: x*(v) = level + Curve(v) − Curve(v_ref).
double Curve(LrLawKind kind, double shape, double v) {
  switch (kind) {
    case LrLawKind::kPower: return shape * v;
    case LrLawKind::kSaturating: return -Softplus2(shape - v);
    case LrLawKind::kSurge: {
      const double d = (v - shape) / 2;  // log2(2^{-d} + 2^{d}) = |d| + log2(1 + 2^{-2|d|})
      return 1.0 - (std::abs(d) + Softplus2(-2 * std::abs(d)));
    }
  }
  return 0;
}

double LawLog2(LrLawKind kind, bool capped, double edge, double ref, const LawParams& p, double v) {
  const double x = p.level + Curve(kind, p.shape, v) - Curve(kind, p.shape, ref);
  return capped && std::isfinite(edge) ? std::min(x, edge) : x;
}

// One batch's residual tabulated against its optimum (linear interpolation; clamped, with a steep rise, outside).
struct Table {
  double v = 0, lo = 0;
  double shift = 0;  // a bootstrap replicate's jitter of this batch's optimum
  std::vector<double> sse;
  double At(double x) const {
    const double t = (x - shift - lo) / kTableStep;
    const double last = static_cast<double>(sse.size() - 1);
    if (t <= 0) return sse.front() + (1 + sse.front()) * t * t;
    if (t >= last) return sse.back() + (1 + sse.back()) * (t - last) * (t - last);
    const size_t i = static_cast<size_t>(t);
    const double f = t - static_cast<double>(i);
    return sse[i] * (1 - f) + sse[std::min(i + 1, sse.size() - 1)] * f;
  }
};

std::vector<Table> Tabulate(const std::vector<SurfaceBatch>& data) {
  std::vector<Table> out;
  for (const SurfaceBatch& b : data) {
    const auto [mn, mx] = std::minmax_element(b.x.begin(), b.x.end());
    Table t;
    t.v = b.log2_batch;
    t.lo = *mn - kTableReach;
    const int n = static_cast<int>(std::ceil((*mx - *mn + 2 * kTableReach) / kTableStep)) + 1;
    for (int i = 0; i < n; ++i) t.sse.push_back(BatchSse(b, t.lo + i * kTableStep));
    out.push_back(std::move(t));
  }
  return out;
}

struct Ranges {
  double level_lo, level_hi, v_lo, v_hi, ref, edge;
};

struct OneLaw {
  LawParams p;
  double sse = 0;
};

OneLaw FitOne(LrLawKind kind, bool capped, const std::vector<Table>& tables, const Ranges& r) {
  auto sse = [&](const LawParams& p) {
    double s = 0;
    for (const Table& t : tables) s += t.At(LawLog2(kind, capped, r.edge, r.ref, p, t.v));
    return s;
  };
  auto best_level = [&](double shape) {
    return Argmin([&](double l) { return sse({l, shape}); }, r.level_lo, r.level_hi, 25);
  };
  const bool power = kind == LrLawKind::kPower;
  const double s_lo = power ? 0.0 : r.v_lo - kShapeBelow, s_hi = power ? 1.0 : r.v_hi + kShapeAbove;
  const double shape =
      Argmin([&](double s) { return sse({best_level(s), s}); }, s_lo, s_hi, power ? 11 : 25);
  OneLaw out;
  out.p = {best_level(shape), shape};
  out.sse = sse(out.p);
  return out;
}

struct LawSpec {
  LrLawKind kind;
  bool capped;
  const char* name;
};

std::vector<LawSpec> LawsFor(bool adam, bool edge, SurgeLaw surge) {
  std::vector<LawSpec> out = {{LrLawKind::kPower, false, "power"}, {LrLawKind::kSaturating, false, "saturating"}};
  if (surge == SurgeLaw::kAlways || (surge == SurgeLaw::kAuto && adam)) {
    out.push_back({LrLawKind::kSurge, false, "surge"});
  }
  if (edge) {
    out.push_back({LrLawKind::kPower, true, "power+edge"});
    out.push_back({LrLawKind::kSaturating, true, "saturating+edge"});
  }
  return out;
}

// The surface's data: batches with at least 3 convergent LRs, their best LRs, the edge and the optimizer.
struct Prepared {
  std::vector<SurfaceBatch> data;
  std::vector<BestLr> best;
  double edge = kNaN;
  bool adam = false;
  std::vector<std::string> notes;
};

Fitted<Prepared> Prepare(const std::vector<ScaleTrial>& trials, const LawOptions& o) {
  if (trials.empty()) return Fitted<Prepared>::Fail("no trials");
  if (std::string e = extrapolation_internal::Validate(trials); !e.empty()) return Fitted<Prepared>::Fail(e);
  std::map<int64_t, Group> by_batch;
  std::map<int64_t, std::pair<double, double>> range;
  Prepared p;
  p.edge = EdgeLog2(trials);
  for (const ScaleTrial& t : trials) {
    if (t.optimizer.find("adam") != std::string::npos) p.adam = true;
    // Past the stability edge the sharpest direction grows: a cliff, not the basin the surface describes.
    if (std::isfinite(p.edge) && std::log2(t.peak_lr) > p.edge + 1e-9) continue;
    by_batch[t.global_batch].push_back(&t);
    auto [it, fresh] = range.try_emplace(t.global_batch, t.peak_lr, t.peak_lr);
    if (!fresh) it->second = {std::min(it->second.first, t.peak_lr), std::max(it->second.second, t.peak_lr)};
  }
  for (const auto& [batch, group] : by_batch) {
    std::set<double> lrs;
    for (const ScaleTrial* t : group) {
      if (Convergent(*t)) lrs.insert(t->peak_lr);
    }
    auto b = lrs.size() >= 3 ? BestLrOf(group, o.parabola_neighbours, range[batch].first, range[batch].second)
                             : std::nullopt;
    if (b) {
      p.best.push_back(*b);
    } else {
      p.notes.push_back("batch " + std::to_string(batch) + ": fewer than 3 convergent learning rates, left out");
    }
  }
  auto data = extrapolation_internal::SurfaceData(by_batch, p.best, o.window_octaves, o.log_loss);
  if (!data) return Fitted<Prepared>::Fail("fewer than 2 batch sizes with 3 convergent learning rates");
  p.data = std::move(*data);
  return Fitted<Prepared>{std::move(p), {}};
}

// Reweighs the surface for one bootstrap replicate: Exp(1) per seed (every seed's trials), else per trial.
std::vector<SurfaceBatch> Reweigh(std::vector<SurfaceBatch> data, bool by_seed, std::mt19937_64& rng) {
  std::exponential_distribution<double> exp1(1.0);
  std::map<int64_t, double> g;
  for (SurfaceBatch& b : data) {
    b.w.resize(b.x.size());
    for (size_t i = 0; i < b.x.size(); ++i) {
      if (!by_seed || b.seed[i] < 0) {
        b.w[i] = exp1(rng);
        continue;
      }
      auto [it, fresh] = g.try_emplace(b.seed[i], 0.0);
      if (fresh) it->second = exp1(rng);
      b.w[i] = it->second;
    }
  }
  return data;
}

Ranges RangesOf(const Prepared& p, double edge_margin) {
  Ranges r{1e300, -1e300, 1e300, -1e300, 0, p.edge - edge_margin};
  for (const BestLr& b : p.best) {
    const double x = std::log2(b.lr.value);
    r.level_lo = std::min(r.level_lo, x - 3), r.level_hi = std::max(r.level_hi, x + 3);
  }
  for (const SurfaceBatch& b : p.data) {
    r.v_lo = std::min(r.v_lo, b.log2_batch), r.v_hi = std::max(r.v_hi, b.log2_batch);
    r.ref += b.log2_batch / static_cast<double>(p.data.size());
  }
  return r;
}

// Weights, the consistent set and σ² from the laws' residuals.
void Combine(LawSet& set, const std::vector<SurfaceBatch>& data, double reject_delta) {
  int dof = set.points - 2;
  for (const SurfaceBatch& b : data) dof -= b.groups + 1;
  const double best = set.Best()->sse;
  set.sigma2 = std::max(best / std::max(dof, 1), 1e-300);
  double total = 0;
  for (LawFit& l : set.laws) {
    l.delta = (l.sse - best) / set.sigma2;
    l.consistent = l.delta <= reject_delta;
    l.weight = std::exp(-l.delta / 2);
    total += l.weight;
  }
  for (LawFit& l : set.laws) l.weight /= total;
}

// The sd of a batch's optimum beyond seed noise: the rms distance between each batch's own optimum (its table's
// argmin) and the best law there, at least `floor` (the parabola's bias in an asymmetric basin, one seed's probe).
double LocationSd(const std::vector<Table>& tables, const LawFit& best, double floor) {
  double ss = 0;
  int n = 0;
  for (const Table& t : tables) {
    const size_t i = static_cast<size_t>(std::min_element(t.sse.begin(), t.sse.end()) - t.sse.begin());
    if (i == 0 || i + 1 == t.sse.size()) continue;  // no optimum of its own inside the table (monotone, or flat)
    const double d = t.lo + kTableStep * static_cast<double>(i) - best.Log2LrOf(best.params, std::exp2(t.v));
    ss += d * d, ++n;
  }
  return std::clamp(n ? std::sqrt(ss / n) : floor, floor, kMaxLocationSd);
}

// A table's own optimum (its argmin, shifted with the replicate), kept within an octave of the batch's swept LRs.
double OwnOptimum(const Table& t, double x_lo, double x_hi) {
  const size_t i = static_cast<size_t>(std::min_element(t.sse.begin(), t.sse.end()) - t.sse.begin());
  return std::clamp(t.lo + kTableStep * static_cast<double>(i) + t.shift, x_lo - 1, x_hi + 1);
}

// The argmin of BatchSse over [lo, hi] on the table's grid.
double SseArgmin(const SurfaceBatch& b, double lo, double hi) {
  double best = lo, best_sse = 1e300;
  for (double x = lo; x <= hi + 1e-9; x += kTableStep) {
    const double e = BatchSse(b, x);
    if (e < best_sse) best_sse = e, best = x;
  }
  return best;
}

// The sd of one seed's optimum about its batch's (all seeds'), over the batches in [lo, hi] whose seeds each
// have 3 or more LRs: how far one seed's probe may lie from the expected loss's optimum. NaN when none.
double SeedScatter(const std::vector<SurfaceBatch>& data, int64_t lo, int64_t hi) {
  double ss = 0;
  int n = 0;
  for (const SurfaceBatch& b : data) {
    if (b.batch < lo || b.batch > hi) continue;
    const auto [mn, mx] = std::minmax_element(b.x.begin(), b.x.end());
    const double pooled = SseArgmin(b, *mn - 1, *mx + 1);
    std::map<int64_t, SurfaceBatch> by_seed;
    for (size_t i = 0; i < b.x.size(); ++i) {
      if (b.seed[i] < 0) continue;
      SurfaceBatch& o = by_seed[b.seed[i]];
      o.x.push_back(b.x[i]), o.y.push_back(b.y[i]), o.group.push_back(0), o.seed.push_back(b.seed[i]);
    }
    const double m = static_cast<double>(by_seed.size());
    for (auto& [seed, o] : by_seed) {
      if (std::set<double>(o.x.begin(), o.x.end()).size() < 3 || m < 2) continue;
      const double d = SseArgmin(o, *mn - 1, *mx + 1) - pooled;
      ss += d * d * m / (m - 1), ++n;
    }
  }
  return n ? std::sqrt(ss / n) : kNaN;
}

// The seeds measured at 3 or more LRs of a batch.
int SeedsWith3Lrs(const SurfaceBatch& b) {
  std::map<int64_t, std::set<double>> lrs;
  for (size_t i = 0; i < b.x.size(); ++i) lrs[b.seed[i]].insert(b.x[i]);
  int n = 0;
  for (const auto& [seed, xs] : lrs) n += xs.size() >= 3 ? 1 : 0;
  return n;
}

// Weighted variance of (value, weight) pairs.
double Variance(const std::vector<std::pair<double, double>>& vw) {
  double sw = 0, m = 0, v = 0;
  for (const auto& [x, w] : vw) sw += w, m += w * x;
  if (!(sw > 0)) return 0;
  m /= sw;
  for (const auto& [x, w] : vw) v += w * (x - m) * (x - m);
  return v / sw;
}

// An anchor's weight against the laws at its batch, by precision: the laws' variance there (their draws' spread,
// plus τ², their lack of fit to a batch's own optimum) over that plus the anchor's (its draws' spread).
double AnchorWeight(const LawSet& set, const LawSet::Anchor& a, double tau) {
  std::vector<std::pair<double, double>> law, anchor;
  const double pb = static_cast<double>(a.batch);
  for (const MixtureDraw& d : Mixture(set)) law.push_back({set.laws[d.law].Log2LrOf(d.params, pb), d.weight});
  for (double x : a.draws) anchor.push_back({x, 1.0});
  const double vl = Variance(law) + tau * tau, va = Variance(anchor);
  return vl + va > 0 ? vl / (vl + va) : 1.0;
}

// The swept LR range (log2) of one batch on the surface.
std::pair<double, double> RangeOf(const SurfaceBatch& b) {
  const auto [mn, mx] = std::minmax_element(b.x.begin(), b.x.end());
  return {*mn, *mx};
}

// An anchor at surface batch i (a probe's batch): its own optimum, its seeds and one seed's scatter there (the
// sweep's, or the batch's own where larger).
LawSet::Anchor MakeAnchor(const std::vector<SurfaceBatch>& data, const std::vector<Table>& tables, size_t i,
                          int64_t sweep_largest) {
  LawSet::Anchor a;
  const SurfaceBatch& b = data[i];
  const auto [lo, hi] = RangeOf(b);
  a.batch = b.batch, a.log2 = OwnOptimum(tables[i], lo, hi), a.seeds = SeedsWith3Lrs(b);
  const double sweep = SeedScatter(data, 0, sweep_largest);
  const double own = SeedScatter(data, b.batch, b.batch);
  const double scatter = std::isfinite(own) ? std::max(std::isfinite(sweep) ? sweep : 0.0, own) : sweep;
  const double m = static_cast<double>(std::set<int64_t>(b.seed.begin(), b.seed.end()).size());
  a.sd = std::isfinite(scatter) ? scatter / std::sqrt(m) : kMaxLocationSd;
  return a;
}

Fitted<LawSet> FitLawsOn(const std::vector<ScaleTrial>& trials, const LawOptions& o);

}  // namespace

double EdgeLog2(const std::vector<ScaleTrial>& trials) {
  std::vector<double> edges;
  for (const ScaleTrial& t : trials) {
    if (Convergent(t) && t.sharpness > 0 && t.optimizer == "sgd") edges.push_back(2 * (1 + t.momentum) / t.sharpness);
  }
  return edges.empty() ? kNaN : std::log2(internal::Median(edges));
}

double LawFit::Log2LrOf(const LawParams& p, double global_batch) const {
  return LawLog2(kind, capped, edge_log2, log2_ref, p, std::log2(global_batch));
}
double LawFit::Log2Lr(double global_batch) const { return Log2LrOf(params, global_batch); }

const LawFit* LawSet::Best() const {
  const LawFit* best = nullptr;
  for (const LawFit& l : laws) {
    if (!best || l.sse < best->sse) best = &l;
  }
  return best;
}

const LawSet::Anchor* LawSet::AnchorBelow(double global_batch) const {
  const Anchor* below = nullptr;
  for (const Anchor& a : anchors) {
    if (static_cast<double>(a.batch) <= global_batch) below = &a;
  }
  return below;
}

double LawSet::AnchorShift(const LawFit& law, const LawParams& p, int replicate, double global_batch) const {
  const Anchor* lo = AnchorBelow(global_batch);
  if (!lo) return 0;
  auto miss = [&](const Anchor& a) {
    const double x = replicate >= 0 && replicate < static_cast<int>(a.draws.size()) ? a.draws[replicate] : a.log2;
    return a.weight * (x - law.Log2LrOf(p, static_cast<double>(a.batch)));
  };
  const double at_lo = miss(*lo);
  if (lo == &anchors.back() || static_cast<double>(lo->batch) == global_batch) return at_lo;
  const Anchor& hi = *(lo + 1);
  const double t = (std::log2(global_batch) - std::log2(static_cast<double>(lo->batch))) /
                   (std::log2(static_cast<double>(hi.batch)) - std::log2(static_cast<double>(lo->batch)));
  return at_lo + t * (miss(hi) - at_lo);
}

double LawSet::FitLog2(const LawFit& law, double global_batch) const {
  return law.Log2Lr(global_batch) + AnchorShift(law, law.params, -1, global_batch);
}

double DrawLog2(const LawSet& set, const MixtureDraw& d, double global_batch) {
  const LawFit& law = set.laws[d.law];
  return law.Log2LrOf(d.params, global_batch) + set.AnchorShift(law, d.params, d.replicate, global_batch);
}

double LawSet::KAt(double global_batch) const {
  std::vector<double> v, lk;
  for (size_t i = batches.size(); i-- > 0 && v.size() < 3;) {
    if (sweep_largest > 0 && batches[i] > sweep_largest) continue;  // a probe's curvature: few one-seed LRs
    if (k_rel[i] > 0) v.push_back(std::log2(static_cast<double>(batches[i]))), lk.push_back(std::log(k_rel[i]));
  }
  if (v.empty()) return 0;
  double slope = 0;
  if (auto line = internal::FitLine(v, lk)) slope = std::clamp(line->b, 0.0, 1.0);
  const double vt = std::log2(global_batch);
  // Anchored at the largest batch's own k (not the line's value there): the nearest measurement.
  return std::exp(lk.front() + slope * std::max(0.0, vt - v.front()));
}

Fitted<LawSet> FitLaws(const std::vector<ScaleTrial>& given, const LawOptions& o) {
  const std::vector<ScaleTrial> trials = CollapsedAsDiverged(given, o.anchor_above);
  // The largest probed batch P with its optimum unbracketed (and not closed by the edge's cap) is a bound, not a
  // measurement: the laws are fitted without it (a parabola through points that only fall extrapolates freely),
  // and the bound weighs their draws (Mixture).
  int64_t largest = 0;
  for (const ScaleTrial& t : trials) largest = std::max(largest, t.global_batch);
  if (o.anchor_above <= 0 || largest <= o.anchor_above) return FitLawsOn(trials, o);
  double bound = kNaN;
  const int side = Unbracketed(trials, largest, &bound);
  const double edge = EdgeLog2(trials) - o.edge_margin_octaves;
  if (side == 0 || (side > 0 && std::isfinite(edge) && bound >= edge - kCensorAtCap)) return FitLawsOn(trials, o);
  std::vector<ScaleTrial> rest;
  for (const ScaleTrial& t : trials) {
    if (t.global_batch != largest) rest.push_back(t);
  }
  auto set = FitLawsOn(rest, o);
  if (!set.ok()) return set;
  set.value->censor_batch = largest, set.value->censored = side, set.value->censor_bound = bound;
  set.value->notes.push_back("batch " + std::to_string(largest) + ": its best LR is its " +
                             (side > 0 ? "highest" : "lowest") + " (the optimum not bracketed): a bound");
  return set;
}

namespace {

Fitted<LawSet> FitLawsOn(const std::vector<ScaleTrial>& trials, const LawOptions& o) {
  auto prepared = Prepare(trials, o);
  if (!prepared.ok()) return Fitted<LawSet>::Fail(prepared.error);
  const Prepared& p = *prepared.value;
  const Ranges r = RangesOf(p, o.edge_margin_octaves);
  LawSet set;
  set.edge_log2 = p.edge;
  set.cap_log2 = r.edge;
  set.notes = p.notes;
  std::set<int64_t> seeds;
  for (const SurfaceBatch& b : p.data) {
    set.batches.push_back(b.batch);
    set.points += static_cast<int>(b.x.size());
    for (int64_t s : b.seed) {
      if (s >= 0) seeds.insert(s);
    }
  }
  set.largest_batch = set.batches.back();
  const bool by_seed = seeds.size() >= 2;
  set.seeds = by_seed ? static_cast<int>(seeds.size()) : 0;
  const std::vector<Table> tables = Tabulate(p.data);
  for (const LawSpec& spec : LawsFor(p.adam, std::isfinite(p.edge), o.surge)) {
    const OneLaw one = FitOne(spec.kind, spec.capped, tables, r);
    LawFit l;
    l.kind = spec.kind, l.capped = spec.capped, l.name = spec.name;
    l.params = one.p, l.sse = one.sse, l.log2_ref = r.ref, l.edge_log2 = r.edge;
    set.laws.push_back(std::move(l));
  }
  Combine(set, p.data, o.reject_delta);
  const double tau = LocationSd(tables, *set.Best(), o.location_sd_floor);
  std::normal_distribution<double> jitter(0.0, tau);
  std::mt19937_64 rng(o.seed);
  int n_min = 1 << 30;
  for (const SurfaceBatch& b : p.data) n_min = std::min(n_min, static_cast<int>(b.x.size()));
  const double n = by_seed ? static_cast<double>(seeds.size()) : static_cast<double>(n_min);
  const double widen = o.widen && n > 1 ? std::sqrt((n + 1) / (n - 1)) : 1.0;
  set.sweep_largest = o.anchor_above;
  std::vector<size_t> anchored;  // surface batches that are anchors
  if (o.anchor_above > 0) {
    for (size_t i = 0; i < p.data.size(); ++i) {
      if (p.data[i].batch > o.anchor_above) anchored.push_back(i), set.anchors.push_back(MakeAnchor(p.data, tables, i, o.anchor_above));
    }
  }
  std::vector<std::normal_distribution<double>> anchor_noise;
  for (const LawSet::Anchor& a : set.anchors) anchor_noise.emplace_back(0.0, std::max(a.sd, 1e-12));
  for (int rep = 0; rep < o.bootstrap; ++rep) {
    std::vector<Table> t = Tabulate(Reweigh(p.data, by_seed, rng));
    for (Table& b : t) b.shift = jitter(rng);
    for (size_t j = 0; j < anchored.size(); ++j) {
      LawSet::Anchor& a = set.anchors[j];
      const auto [lo, hi] = RangeOf(p.data[anchored[j]]);
      a.draws.push_back(a.log2 + widen * (OwnOptimum(t[anchored[j]], lo, hi) - a.log2) + anchor_noise[j](rng));
    }
    for (LawFit& l : set.laws) {
      LawParams d = FitOne(l.kind, l.capped, t, r).p;
      d.level = l.params.level + widen * (d.level - l.params.level);
      d.shape = l.params.shape + widen * (d.shape - l.params.shape);
      d.shape = l.kind == LrLawKind::kPower ? std::clamp(d.shape, 0.0, 1.0)
                                            : std::clamp(d.shape, r.v_lo - kShapeBelow, r.v_hi + kShapeAbove);
      d.level = std::clamp(d.level, r.level_lo, r.level_hi);
      l.draws.push_back(d);
    }
  }
  for (LawSet::Anchor& a : set.anchors) a.weight = AnchorWeight(set, a, tau);
  if (!set.anchors.empty()) set.anchor_batch = set.anchors.back().batch;
  if (o.anchor_above > 0) {
    const double sweep = SeedScatter(p.data, 0, o.anchor_above);
    set.censor_sd = std::isfinite(sweep) ? sweep : kMaxLocationSd;
  }
  const LawFit& best = *set.Best();
  for (const SurfaceBatch& b : p.data) {
    double k = 0;
    BatchSse(b, best.Log2Lr(static_cast<double>(b.batch)), &k);
    set.k_rel.push_back(k);
  }
  return Fitted<LawSet>{std::move(set), {}};
}

}  // namespace

}  // namespace ladder::search
