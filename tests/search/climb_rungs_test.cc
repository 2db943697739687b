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

}  // namespace
}  // namespace ladder::search
