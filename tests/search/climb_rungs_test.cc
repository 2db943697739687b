// The climb's rungs (search/scaling/lr_laws.h anchors, probe_plan.h candidates): every probed batch pins the laws
// at its own optimum, and the ladder climbs past its top rung to the target only once that rung is settled.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "search/scaling/climb.h"

namespace ladder::search {
namespace {

// One seed's runs at a batch about its optimum x* (log2 lr): ln loss rises 0.07 per octave² (teacher_lowrank's
// basin), a seed scales the whole curve a little (as the noisy quadratic's seeds do).
void Basin(std::vector<ScaleTrial>& out, int64_t batch, double x_star, int64_t seed, double half_span = 1.5) {
  for (double d = -half_span; d <= half_span + 1e-9; d += 0.5) {
    ScaleTrial t;
    t.global_batch = batch, t.peak_lr = std::exp2(x_star + d), t.seed = seed, t.steps = 1000;
    t.final_loss = 0.08 * (1 + 0.002 * static_cast<double>(seed)) * std::exp(0.07 * d * d);
    t.id = std::to_string(batch) + "/" + std::to_string(t.peak_lr) + "/" + std::to_string(seed);
    out.push_back(t);
  }
}

// A sweep 32..256 whose best LR grows linearly with the batch (x* = log2 B − 10), 3 seeds.
std::vector<ScaleTrial> LinearSweep() {
  std::vector<ScaleTrial> trials;
  for (int64_t b = 32; b <= 256; b *= 2) {
    for (int64_t s = 0; s < 3; ++s) Basin(trials, b, std::log2(static_cast<double>(b)) - 10, s);
  }
  return trials;
}

double PosteriorLog2(const LawSet& set, int64_t batch) {
  return PosteriorAt(set, Mixture(set), static_cast<double>(batch)).log2_lr;
}

LawOptions Anchored() {
  LawOptions o;
  o.anchor_above = 256;
  return o;
}

// Probes at 1,024 and 4,096: the first finds the best LR 0.6 octave under the sweep's line, the second on it. Each
// probed batch's prediction is its own optimum, not only the largest's: before, only the largest probe anchored
// the laws, and a target at 1,024 read the laws' compromise through every point (near the line).
TEST(ClimbRungs, EveryProbedBatchAnchorsTheLawsAtItsOwnOptimum) {
  std::vector<ScaleTrial> trials = LinearSweep();
  for (int64_t s = 100; s < 102; ++s) Basin(trials, 1024, -0.6, s), Basin(trials, 4096, 2.0, s);
  auto set = FitLaws(trials, Anchored());
  ASSERT_TRUE(set.ok()) << set.error;
  ASSERT_EQ(set.value->anchors.size(), 2u);
  EXPECT_EQ(set.value->anchor_batch, 4096);
  EXPECT_NEAR(PosteriorLog2(*set.value, 1024), -0.6, 0.15);
  EXPECT_NEAR(PosteriorLog2(*set.value, 4096), 2.0, 0.15);
  // Between the rungs: between their optima; past the top: the laws' rise from it.
  const double mid = PosteriorLog2(*set.value, 2048);
  EXPECT_GT(mid, -0.6);
  EXPECT_LT(mid, 2.0);
  EXPECT_GE(PosteriorLog2(*set.value, 8192), 2.0 - 1e-9);
}

std::optional<Probe> Propose(const std::vector<ScaleTrial>& trials, int64_t target) {
  auto set = FitLaws(trials, Anchored());
  EXPECT_TRUE(set.ok()) << set.error;
  if (!set.ok()) return std::nullopt;
  ProbeOptions o;
  o.sweep_largest_batch = 256;
  return ProposeProbe(*set.value, Mixture(*set.value), trials, target, o);
}

// The target 8,192 lies past the top rung (16 × 256). With one seed at 4,096 that rung is not settled (one seed
// cannot measure its own scatter): the next probe is another seed there, not a jump to the target. Once two
// seeds agree at 4,096, the target itself is the probe.
TEST(ClimbRungs, TheTargetPastTheTopRungIsProbedOnceThatRungIsSettled) {
  std::vector<ScaleTrial> trials = LinearSweep();
  Basin(trials, 4096, 0.5, 100);
  auto first = Propose(trials, 8192);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->global_batch, 4096);
  Basin(trials, 4096, 0.5, 101);
  auto second = Propose(trials, 8192);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->global_batch, 8192);
  EXPECT_EQ(second->micro_batches, 32);
  EXPECT_EQ(second->nodes, 1);
}

// A target measured with one seed is a candidate itself even where the rung below it is not settled: another seed
// at the target. Before, every batch below the target's own measurement was passed over and no probe was left
// ("no probe batch lies between the sweep and the target") with budget to spare.
TEST(ClimbRungs, AnUnsettledMeasurementAtTheTargetIsMeasuredAgain) {
  std::vector<ScaleTrial> trials = LinearSweep();
  Basin(trials, 4096, 0.5, 100);
  Basin(trials, 8192, 0.8, 101);
  auto next = Propose(trials, 8192);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->global_batch, 8192);
}

// A sweep (32..256, 3 seeds) whose best LR bends (x* = log2 1/(1 + 512/B)) under a seed's scatter of a fifth of an
// octave: the power law and the saturating law both fit it, and part by over an octave at 4,096.
std::vector<ScaleTrial> BendingSweep() {
  std::vector<ScaleTrial> trials;
  const double jitter[3] = {-0.2, 0.0, 0.2};
  int i = 0;
  for (int64_t b = 32; b <= 256; b *= 2) {
    for (int64_t s = 0; s < 3; ++s) {
      Basin(trials, b, -std::log2(1 + 512.0 / static_cast<double>(b)) + jitter[(s + i) % 3], s);
    }
    ++i;
  }
  return trials;
}

// While the budget affords later probes, a probe keeps fine steps (half an octave) about the laws' weighted median:
// later probes and extensions climb from there. A probe the budget cannot follow (the last) must tell the laws
// apart itself: its LRs span them, coarser (up to an octave apart), centred between them. teacher_lowrank's --quick
// sweep (4 runs of budget) put its only probe about the saturating law's 0.18 at 1,024, every LR below the
// oracle's 0.52: 0.33 / 0.83 octave off at 1,024 / 2,048; spanning the laws, 0.02 / 0.46.
TEST(ClimbRungs, ALastProbeSpansTheLawsItMustTellApart) {
  const std::vector<ScaleTrial> sweep = BendingSweep();
  auto set = FitLaws(sweep, Anchored());
  ASSERT_TRUE(set.ok()) << set.error;
  const auto mixture = Mixture(*set.value);
  ProbeOptions o;
  o.sweep_largest_batch = 256;
  o.factors = {16};  // one candidate: 4,096
  double low = 1e300, high = -1e300;
  for (const LawFit& l : set.value->laws) {
    if (!l.consistent) continue;
    const double x = set.value->FitLog2(l, 4096);
    low = std::min(low, x), high = std::max(high, x);
  }
  ASSERT_GT(high - low, 1.0) << "the laws must part by more than the fine window less its margins";
  auto span = [](const Probe& p) { return std::log2(p.lrs.back() / p.lrs.front()); };
  auto fine = ProposeProbe(*set.value, mixture, sweep, 8192, o);
  ASSERT_TRUE(fine.has_value());
  ASSERT_EQ(fine->global_batch, 4096);
  EXPECT_NEAR(span(*fine), 1.0, 1e-9);  // 3 LRs, half an octave apart
  o.runs_left = 5;                      // 3 for this probe, 2 left: no other probe fits
  auto last = ProposeProbe(*set.value, mixture, sweep, 8192, o);
  ASSERT_TRUE(last.has_value());
  ASSERT_EQ(last->lrs.size(), 3u);
  const double lo = std::log2(last->lrs.front()), hi = std::log2(last->lrs.back());
  EXPECT_GT(hi - lo, 1.5);
  EXPECT_LE(hi - lo, 2.0 + 1e-9);
  EXPECT_NEAR(std::log2(last->lrs[1]), (low + high) / 2, 1e-6);  // between the laws, not on the likelier one
  EXPECT_LE(lo, low);
  EXPECT_GE(hi, high);
  o.runs_left = 6;  // 3 left after it: another probe fits, and the first keeps fine steps
  auto again = ProposeProbe(*set.value, mixture, sweep, 8192, o);
  ASSERT_TRUE(again.has_value());
  EXPECT_NEAR(span(*again), 1.0, 1e-9);
}

// The climb tells ProposeProbe what the budget leaves. The sweep's 84 runs of 1,000 steps cost 39.4 runs at its
// largest batch (a run's cost grows with its batch): with room for one probe (10%: 3.9 runs) that probe spans the
// laws; with room for two (20%), the first keeps fine steps.
TEST(ClimbRungs, TheClimbsBudgetDecidesWhichProbeIsTheLast) {
  const std::vector<ScaleTrial> sweep = BendingSweep();
  auto first_span = [&](double budget) {
    ClimbOptions o;
    o.probe_budget = budget;
    o.probe.factors = {16};
    std::vector<Probe> seen;
    auto run = [&](const Probe& p) {
      seen.push_back(p);
      std::vector<ScaleTrial> got;
      for (double lr : p.lrs) {
        ScaleTrial t;
        t.global_batch = p.global_batch, t.peak_lr = lr, t.seed = 100, t.steps = 1000;
        t.final_loss = 0.08 * std::exp(0.07 * std::pow(std::log2(lr) - 0.8, 2));
        t.id = "probe/" + std::to_string(lr);
        got.push_back(t);
      }
      return got;
    };
    auto r = Climb(sweep, {8192}, run, o);
    EXPECT_TRUE(r.ok()) << r.error;
    EXPECT_FALSE(seen.empty());
    return seen.empty() ? 0.0 : std::log2(seen.front().lrs.back() / seen.front().lrs.front());
  };
  EXPECT_GT(first_span(0.1), 1.5);
  EXPECT_NEAR(first_span(0.2), 1.0, 1e-9);
}

}  // namespace
}  // namespace ladder::search
