// Flags a target, lists the candidate probes and picks one by its expected drop in p80 regret per node-hour
// (probe_plan.h).
#include "search/scaling/probe_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <set>
#include <utility>

namespace ladder::search {
namespace {

constexpr double kMinEdgeStep = 1.0 / 16;  // octaves: an extension closer than this to the best LR is not run
constexpr double kEdgeResolution = 0.25;   // octaves: a best LR at the cap is resolved this finely from below

std::string Fixed(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// The nodes and the batch of the sweep's largest-batch trials: a probe uses no more nodes than they did.
std::pair<int64_t, int> SweepBase(const std::vector<ScaleTrial>& trials, int64_t largest) {
  int64_t batch = largest;
  if (batch <= 0) {
    for (const ScaleTrial& t : trials) batch = std::max(batch, t.global_batch);
  }
  int nodes = 1;
  for (const ScaleTrial& t : trials) {
    if (t.global_batch == batch) nodes = std::max(nodes, t.nodes);
  }
  return {batch, nodes};
}

// The probe's LRs at batch P: spanning the consistent laws' predictions there, below any LR that diverged at P.
std::vector<double> ProbeLrs(const LawSet& set, const std::vector<ScaleTrial>& trials, int64_t batch,
                             const ProbeOptions& o) {
  double lo = 1e300, hi = -1e300;
  std::vector<std::pair<double, double>> fits;
  for (const LawFit& l : set.laws) {
    if (!l.consistent) continue;
    double x = set.FitLog2(l, static_cast<double>(batch));
    if (std::isfinite(set.cap_log2)) x = std::min(x, set.cap_log2);
    lo = std::min(lo, x), hi = std::max(hi, x), fits.push_back({x, l.weight});
  }
  lo -= o.lr_margin_octaves, hi += o.lr_margin_octaves;
  const int n = std::max(o.lrs, 2);
  // A last probe (no other fits the budget after it) must tell the laws apart itself: it spans them, coarser.
  const bool last = o.runs_left - n < n;
  const double span = std::max(1.0, (n - 1) * (last ? o.last_probe_step_octaves : o.max_lr_step_octaves));
  if (hi - lo < 1.0 || hi - lo > span) {  // too wide: centred on the laws' weighted median, steps kept fine
    const double mid = hi - lo < 1.0 || last ? (lo + hi) / 2 : WeightedQuantile(fits, 0.5);
    const double half = hi - lo < 1.0 ? 0.5 : span / 2;
    lo = mid - half, hi = mid + half;
  }
  double diverged = 1e300;
  for (const ScaleTrial& t : trials) {
    if (t.global_batch == batch && (t.diverged || !std::isfinite(t.final_loss))) {
      diverged = std::min(diverged, std::log2(t.peak_lr));
    }
  }
  // Kept half an octave below a diverged LR, and at or below the stability edge's cap: past it lies the cliff.
  const double top = std::min(diverged - 0.5, std::isfinite(set.cap_log2) ? set.cap_log2 : 1e300);
  if (hi > top) {
    const double shift = hi - top;
    lo -= shift, hi -= shift;
  }
  std::vector<double> out;
  for (int i = 0; i < n; ++i) out.push_back(std::exp2(lo + (hi - lo) * i / (n - 1)));
  return out;
}

// Whether an anchor pins its batch's optimum: 2 or more seeds measured at 3 LRs there, and its own noise leaves no
// more than max_miss_probability beyond max_miss_octaves.
bool Settled(const LawSet::Anchor& a, const ProbeOptions& o) {
  const double miss = std::erfc(o.max_miss_octaves / (std::sqrt(2.0) * std::max(a.sd, 1e-12)));
  return a.seeds >= 2 && miss <= o.max_miss_probability;
}

// The largest probed batch that is settled (the sweep's largest batch when none is).
int64_t SettledTop(const LawSet& set, int64_t sweep_batch, const ProbeOptions& o) {
  int64_t top = sweep_batch;
  for (const LawSet::Anchor& a : set.anchors) {
    if (Settled(a, o)) top = std::max(top, a.batch);
  }
  return top;
}

// The p80 regret at the target about the weighted median of the draws, with weights w.
double P80About(const std::vector<double>& xt, const std::vector<double>& w, double k) {
  std::vector<std::pair<double, double>> vw;
  for (size_t i = 0; i < xt.size(); ++i) vw.push_back({xt[i], w[i]});
  const double centre = WeightedQuantile(vw, 0.5);
  for (auto& e : vw) e.first = k * (e.first - centre) * (e.first - centre);
  return WeightedQuantile(std::move(vw), 0.8);
}

}  // namespace

TargetCheck CheckTarget(const LawSet& set, const std::vector<MixtureDraw>& mixture, int64_t target,
                        const ProbeOptions& o) {
  TargetCheck c;
  c.posterior = PosteriorAt(set, mixture, static_cast<double>(target));
  if (c.posterior.disagreement > o.max_disagreement) {
    c.why = "laws part by " + Fixed("%.2f", c.posterior.disagreement) + " octave";
  }
  if (std::isfinite(set.cap_log2) && c.posterior.log2_lr >= set.cap_log2 - 1e-9) {
    c.why += (c.why.empty() ? "" : ", ") + std::string("the prediction is at the stability edge");
  }
  if (c.posterior.regret_p80 > o.max_regret) {
    c.why += (c.why.empty() ? "" : ", ") + std::string("p80 regret ") + Fixed("%.2f", 100 * c.posterior.regret_p80) +
             "%";
  }
  double miss = 0, total = 0;
  for (const MixtureDraw& d : mixture) {
    double x = DrawLog2(set, d, static_cast<double>(target));
    if (std::isfinite(set.edge_log2)) x = std::min(x, set.edge_log2);
    miss += std::abs(x - c.posterior.log2_lr) > o.max_miss_octaves ? d.weight : 0, total += d.weight;
  }
  if (total > 0 && miss / total > o.max_miss_probability) {
    c.why += (c.why.empty() ? "" : ", ") + Fixed("%.0f%%", 100 * miss / total) + " of the posterior lies over " +
             Fixed("%.2g", o.max_miss_octaves) + " octave from the prediction";
  }
  if (const LawSet::Anchor* a = set.AnchorBelow(static_cast<double>(target))) {
    // The nearest measurement at or below the target must pin its batch's optimum as the posterior must: the laws
    // past the sweep lean on it.
    if (a->seeds < 2) {
      c.why += (c.why.empty() ? "" : ", ") + std::string("one seed at the probe's batch");
    } else if (target > set.anchor_batch) {
      c.why += (c.why.empty() ? "" : ", ") + std::string("past the largest probe (a law's slope from there)");
    } else if (!Settled(*a, o)) {
      c.why += (c.why.empty() ? "" : ", ") + std::string("the probe's optimum is known to ±") +
               Fixed("%.2f", a->sd) + " octave";
    }
  }
  if (set.censored != 0 && target >= set.censor_batch) {
    c.why += (c.why.empty() ? "" : ", ") + std::string("the best LR at batch ") + std::to_string(set.censor_batch) +
             " is the " + (set.censored > 0 ? "highest" : "lowest") + " it ran (its optimum not bracketed)";
  }
  c.needs_probe = !c.why.empty();
  return c;
}

double ExpectedP80After(const LawSet& set, const std::vector<MixtureDraw>& mixture, double probe_batch,
                        double target, const ProbeOptions& o) {
  const size_t n = mixture.size();
  if (n == 0) return 0;
  std::vector<double> xp(n), xt(n), w(n), cw(n);
  for (size_t i = 0; i < n; ++i) {
    xp[i] = DrawLog2(set, mixture[i], probe_batch), xt[i] = DrawLog2(set, mixture[i], target);
    w[i] = mixture[i].weight;
  }
  const double k = set.KAt(target);
  const size_t stride = std::max<size_t>(1, n / static_cast<size_t>(std::max(o.max_truths, 1)));
  const double s2 = 2 * o.probe_sigma_octaves * o.probe_sigma_octaves;
  double expected = 0, total = 0;
  for (size_t j = 0; j < n; j += stride) {
    for (size_t i = 0; i < n; ++i) cw[i] = w[i] * std::exp(-(xp[i] - xp[j]) * (xp[i] - xp[j]) / s2);
    expected += w[j] * P80About(xt, cw, k), total += w[j];
  }
  return total > 0 ? expected / total : 0;
}

std::vector<int64_t> CandidateBatches(int64_t sweep_batch, int64_t measured, int64_t target, const ProbeOptions& o) {
  std::vector<int64_t> batches;
  for (int f : o.factors) {
    if (sweep_batch * f <= target) batches.push_back(sweep_batch * f);
  }
  // A target past the ladder's top rung is a candidate itself once that rung is measured: past the largest probe
  // its LR would rest on a law's slope that no measurement checked (a best LR that turns down past the last rung
  // cannot be seen from below it), and the rung below places the target's LRs (from the sweep alone, a jump of 32×
  // can land every LR past the edge of stability, where the loss is a noisy plateau that looks bracketed).
  const int64_t top = o.factors.empty() ? sweep_batch : sweep_batch * *std::max_element(o.factors.begin(), o.factors.end());
  if (o.probe_target && target > top && measured >= top && sweep_batch > 0 && target % sweep_batch == 0) {
    batches.push_back(target);
  }
  return batches;
}

std::optional<Probe> ProposeProbe(const LawSet& set, const std::vector<MixtureDraw>& mixture,
                                  const std::vector<ScaleTrial>& given, int64_t target, const ProbeOptions& o) {
  const auto [sweep_batch, nodes] = SweepBase(given, o.sweep_largest_batch);
  const std::vector<ScaleTrial> trials = CollapsedAsDiverged(given, sweep_batch);
  const double before = PosteriorAt(set, mixture, static_cast<double>(target)).regret_p80;
  std::optional<Probe> best;
  double best_gain = -1e300;
  const LawSet::Anchor* below = set.AnchorBelow(static_cast<double>(target));
  std::vector<int64_t> batches = CandidateBatches(sweep_batch, SettledTop(set, sweep_batch, o), target, o);
  // A target measured but not settled (one seed, or seeds that scatter) is a candidate itself: another seed there.
  if (below && below->batch == target && std::find(batches.begin(), batches.end(), target) == batches.end()) {
    batches.push_back(target);
  }
  for (const int64_t batch : batches) {
    // A probe below the nearest measurement does not move a target at or past it (anchored there).
    if (below && batch < below->batch) continue;
    Probe p;
    p.global_batch = batch, p.target_batch = target, p.nodes = nodes;
    p.micro_batches = static_cast<int>(std::max<int64_t>(1, (batch + sweep_batch - 1) / std::max<int64_t>(sweep_batch, 1)));
    p.lrs = ProbeLrs(set, trials, batch, o);
    p.node_hours = static_cast<double>(p.lrs.size()) * o.node_hours_per_run;
    p.p80_before = before;
    p.p80_after = ExpectedP80After(set, mixture, static_cast<double>(batch), static_cast<double>(target), o);
    const double gain = (before - p.p80_after) / std::max(p.node_hours, 1e-12);
    if (gain > best_gain) best_gain = gain, best = p;
  }
  return best;
}

std::optional<Probe> ExtendProbe(const std::vector<ScaleTrial>& given, const Probe& last, const ProbeOptions& o,
                                 double cap_log2) {
  const std::vector<ScaleTrial> trials = CollapsedAsDiverged(given, SweepBase(given, o.sweep_largest_batch).first);
  double best = 0;
  const int side = Unbracketed(trials, last.global_batch, &best);  // lr_laws.h: the seed-mean best LR's side
  if (side == 0) return std::nullopt;
  std::set<double> lrs;  // log2 of every LR run at the batch
  for (const ScaleTrial& t : trials) {
    if (t.global_batch == last.global_batch) lrs.insert(std::log2(t.peak_lr));
  }
  const double step = std::max(0.5, (*lrs.rbegin() - *lrs.begin()) / static_cast<double>(lrs.size() - 1));
  Probe p = last;
  if (side < 0) {
    p.lrs = {std::exp2(best - step)};
  } else {
    // Not past the stability edge's cap: a best LR at the cap is bracketed by the edge.
    const double up = std::isfinite(cap_log2) ? std::min(best + step, cap_log2) : best + step;
    const double below = *std::prev(lrs.find(best));
    if (up >= best + kMinEdgeStep) {
      p.lrs = {std::exp2(up)};
    } else if (best - below > kEdgeResolution) {
      p.lrs = {std::exp2((best + below) / 2)};  // at the cap: halve the gap below it
    } else {
      return std::nullopt;
    }
  }
  p.node_hours = o.node_hours_per_run;
  p.extension = true;
  return p;
}

double SweepNodeHours(const std::vector<ScaleTrial>& trials, double node_hours_per_run) {
  auto cost = [](const ScaleTrial& t) {
    const double c = t.compute > 0 ? t.compute : static_cast<double>(t.steps) * static_cast<double>(t.global_batch);
    return static_cast<double>(std::max(t.nodes, 1)) * c;
  };
  const ScaleTrial* ref = nullptr;
  for (const ScaleTrial& t : trials) {
    if (!ref || t.global_batch > ref->global_batch) ref = &t;
  }
  if (!ref || !(cost(*ref) > 0)) return static_cast<double>(trials.size()) * node_hours_per_run;
  double total = 0;
  for (const ScaleTrial& t : trials) total += cost(t) / cost(*ref);
  return total * node_hours_per_run;
}

}  // namespace ladder::search
