// Scale extrapolation fits: recover known parameters from trials generated from the models (with noise), interval
// coverage, the baselines, the compute laws, the stability edge, and clear errors on degenerate inputs.
#include "search/scaling/extrapolation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "search/scaling/scale_plan.h"
#include "tests/search/extrapolation_testing.h"

namespace ladder::search {
namespace {

using namespace extrapolation_testing;  // NOLINT: the generators

TEST(FindBestLrTest, ParabolaVertexBetweenGridPoints) {
  std::vector<ScaleTrial> sweep;
  const double vertex = std::log2(0.05) + 0.3;  // between grid points
  for (int k = -4; k <= 4; ++k) {
    ScaleTrial t;
    t.global_batch = 64;
    t.peak_lr = 0.05 * std::exp2(k * 0.5);
    const double d = std::log2(t.peak_lr) - vertex;
    t.final_loss = 1.0 + 0.1 * d * d;
    sweep.push_back(t);
  }
  auto best = FindBestLr(sweep, 2);
  ASSERT_TRUE(best.ok()) << best.error;
  EXPECT_TRUE(best.value->parabola);
  EXPECT_FALSE(best.value->at_edge);
  EXPECT_NEAR(std::log2(best.value->lr.value), vertex, 1e-9);
  EXPECT_NEAR(best.value->loss, 1.0 + 0.1 * 0.2 * 0.2, 1e-9);  // the lowest swept point, 0.2 octave away
  EXPECT_EQ(best.value->trials, 9);
}

TEST(FindBestLrTest, ACliffNextToTheBestLrDoesNotBendTheVertexAway) {
  // The seed-mean losses of bench/extrapolation --quick's synthetic sweep at batch 2,048: the loss doubles one
  // octave above the best LR. A parabola over 2 LRs each side puts its minimum at 1.590, below every trial, and
  // its vertex at LR 0.88; over 1 LR each side it follows the trials (vertex near LR 1.02).
  const std::vector<std::pair<double, double>> points = {
      {-1.5, 1.9186}, {-1.0, 1.7488}, {-0.5, 1.6501}, {0.0, 1.6271}, {0.5, 1.6453}, {1.0, 1.9950}};
  std::vector<ScaleTrial> sweep;
  for (const auto& [x, loss] : points) {
    ScaleTrial t;
    t.global_batch = 2048;
    t.peak_lr = std::exp2(x);
    t.final_loss = loss;
    sweep.push_back(t);
  }
  auto best = FindBestLr(sweep, 2);
  ASSERT_TRUE(best.ok()) << best.error;
  EXPECT_TRUE(best.value->parabola);
  auto none = FindBestLr(sweep, 0);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error.find("neighbours must be >= 1, got 0"), std::string::npos) << none.error;
  EXPECT_GT(best.value->lr.value, 0.97);
  EXPECT_LT(best.value->lr.value, 1.1);
  // Without the cliff the same points keep the 2-LR window (and the vertex between the best LR's neighbours).
  sweep.back().final_loss = 1.7;
  auto smooth = FindBestLr(sweep, 2);
  ASSERT_TRUE(smooth.ok()) << smooth.error;
  EXPECT_TRUE(smooth.value->parabola);
  EXPECT_GT(smooth.value->lr.value, std::exp2(-0.5));
  EXPECT_LT(smooth.value->lr.value, std::exp2(0.5));
}

TEST(FindBestLrTest, EdgeOfSweepIsFlaggedAndVertexStaysInside) {
  std::vector<ScaleTrial> sweep;
  for (int k = 0; k < 5; ++k) {
    ScaleTrial t;
    t.global_batch = 32;
    t.peak_lr = 0.01 * std::exp2(k);
    t.final_loss = 2.0 - 0.1 * k;  // still falling at the largest LR
    sweep.push_back(t);
  }
  auto best = FindBestLr(sweep, 2);
  ASSERT_TRUE(best.ok());
  EXPECT_TRUE(best.value->at_edge);
  EXPECT_LE(best.value->lr.value, 0.16 * (1 + 1e-12));
  EXPECT_GE(best.value->lr.value, 0.04);
}

TEST(FindBestLrTest, LargestConvergentBelowDivergedIsNotAnEdge) {
  std::vector<ScaleTrial> sweep;
  for (int k = 0; k < 5; ++k) {
    ScaleTrial t;
    t.global_batch = 32;
    t.peak_lr = 0.01 * std::exp2(k);
    t.final_loss = 2.0 - 0.1 * k;
    if (k == 4) t.diverged = true, t.final_loss = kNaN;
    sweep.push_back(t);
  }
  auto best = FindBestLr(sweep, 2);
  ASSERT_TRUE(best.ok());
  EXPECT_FALSE(best.value->at_edge);
  EXPECT_NEAR(best.value->lr.value, 0.08, 1e-12);  // not convex: the argmin
}

TEST(FitScalingTest, RecoversTheLawFromBothRegimes) {
  Truth truth;
  auto trials = MakeSweeps(truth, {16, 64, 256, 1024, 4096}, 1);
  ExtrapolationOptions o;
  o.bootstrap = 100;
  auto r = FitScaling(trials, o);
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_TRUE(r.value->lr_fit);
  const LrBatchFit& f = *r.value->lr_fit;
  EXPECT_TRUE(f.identified);
  EXPECT_NEAR(std::log2(f.eps_max.value / truth.eps_max), 0, 0.25);
  EXPECT_NEAR(std::log2(f.b_noise.value / truth.b_noise), 0, 0.5);
  EXPECT_LE(f.eps_max.lo, f.eps_max.value);
  EXPECT_GE(f.eps_max.hi, f.eps_max.value);
  ASSERT_TRUE(r.value->noise_fit);
  EXPECT_NEAR(std::log2(r.value->measured_noise_scale.value / truth.b_noise), 0, 0.15);
  EXPECT_NEAR(std::log2(r.value->noise_fit->eps_max.value / truth.eps_max), 0, 0.2);
  EXPECT_NEAR(std::log2(r.value->noise_ratio), 0, 0.6);
  EXPECT_EQ(r.value->best_lr.size(), 5u);
  EXPECT_GT(r.value->diverged_trials, 0);
}

TEST(FitScalingTest, NoiseAnchoredFitExtrapolates32xFromSmallBatches) {
  // Swept only at B <= 256, where eps_opt is nearly linear in B; the measured noise scale pins the bend.
  const auto [truth, trials, r] = SweepBelowTheBend(7);
  ASSERT_TRUE(r.ok()) << r.error;
  for (double b : {4096.0, 8192.0}) {
    for (LrRule rule : {LrRule::kNoiseFit, LrRule::kJointFit}) {
      auto fit = PredictLr(*r.value, b, rule);
      ASSERT_TRUE(fit.ok()) << fit.error;
      EXPECT_NEAR(std::log2(fit.value->value / EpsOpt(truth, b)), 0, 0.35) << "batch " << b;
    }
    auto lin = PredictLr(*r.value, b, LrRule::kLinear);
    ASSERT_TRUE(lin.ok());
    // The linear rule keeps growing past the noise scale: far too high here.
    EXPECT_GT(std::log2(lin.value->value / EpsOpt(truth, b)), 1.5) << "batch " << b;
  }
}

TEST(FitScalingTest, JointFitFollowsTheSweepsWhenTheySpanTheBend) {
  // The measured noise scale is 3x off; sweeps across the bend of eps_opt(B) pull B_noise back to the truth.
  Truth truth;
  truth.loss_noise = 0.001;
  auto trials = MakeSweeps(truth, {16, 64, 256, 1024, 4096}, 21);
  for (auto& t : trials) t.noise_scale *= 3;
  auto r = FitScaling(trials, {});
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_TRUE(r.value->joint_fit && r.value->noise_fit);
  EXPECT_NEAR(std::log2(r.value->measured_noise_scale.value / truth.b_noise), std::log2(3.0), 0.2);
  EXPECT_NEAR(std::log2(r.value->joint_fit->b_noise.value / truth.b_noise), 0, 0.6);
  const char* name = nullptr;
  EXPECT_EQ(FitForRule(*r.value, LrRule::kJointFit, &name), &*r.value->joint_fit);
  EXPECT_STREQ(name, "joint_fit");
  EXPECT_EQ(FitForRule(*r.value, LrRule::kFit), nullptr);

  // Swept only far below the bend: the LRs say nothing about B_noise, the joint fit stays at the measurement.
  auto small = MakeSweeps(truth, {8, 16, 32}, 22);
  auto s = FitScaling(small, {});
  ASSERT_TRUE(s.ok()) << s.error;
  EXPECT_NEAR(std::log2(s.value->joint_fit->b_noise.value / s.value->measured_noise_scale.value), 0, 0.5);
}

TEST(FitScalingTest, PowerFitRecoversTheExponentAndKeepsItInZeroToOne) {
  std::mt19937_64 rng(4);
  std::normal_distribution<double> n01(0, 1);
  auto sweeps = [&](double alpha) {
    std::vector<ScaleTrial> out;
    for (int64_t b : {8, 16, 32, 64, 128}) {
      const double opt = 0.002 * std::pow(static_cast<double>(b), alpha);
      for (int k = -6; k <= 6; ++k) {
        ScaleTrial t;
        t.global_batch = b;
        t.peak_lr = 0.001 * std::exp2(0.5 * k) * std::pow(2.0, std::round(std::log2(opt / 0.001)));
        const double d = std::log2(t.peak_lr / opt);
        t.final_loss = 1.0 + 0.05 * d * d + 0.001 * n01(rng);
        out.push_back(t);
      }
    }
    return out;
  };
  auto r = FitScaling(sweeps(0.8), {});
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_TRUE(r.value->power_fit);
  EXPECT_NEAR(r.value->power_fit->exponent.value, 0.8, 0.05);
  EXPECT_TRUE(r.value->power_fit->exponent.Contains(0.8));
  auto p = PredictLr(*r.value, 2048, LrRule::kFit);
  ASSERT_TRUE(p.ok()) << p.error;
  EXPECT_NEAR(std::log2(p.value->value / (0.002 * std::pow(2048.0, 0.8))), 0, 0.25);
  EXPECT_LE(p.value->lo, p.value->value);
  EXPECT_GE(p.value->hi, p.value->value);

  auto steep = FitScaling(sweeps(1.3), {});
  ASSERT_TRUE(steep.ok());
  EXPECT_DOUBLE_EQ(steep.value->power_fit->exponent.value, 1.0);  // never faster than the linear rule
}

TEST(FitScalingTest, SurfaceFitRecoversTheOptimumLawAndIsTheDefaultRule) {
  const double c = 0.0005, alpha = 0.75;
  auto r = FitScaling(MakeSurface(c, alpha, {8, 16, 32}, 3, 0.004, 11), {});
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_TRUE(r.value->surface_fit);
  EXPECT_NEAR(r.value->surface_fit->exponent.value, alpha, 0.1);
  EXPECT_TRUE(r.value->surface_fit->exponent.Contains(alpha));
  for (double target : {512.0, 1024.0}) {
    auto p = PredictLr(*r.value, target, LrRule::kFit);
    ASSERT_TRUE(p.ok()) << p.error;
    const double truth = c * std::pow(target, alpha);
    EXPECT_NEAR(std::log2(p.value->value / truth), 0, 0.5) << "batch " << target;
    EXPECT_TRUE(p.value->Contains(truth)) << "batch " << target << ": [" << p.value->lo << ", " << p.value->hi
                                          << "] vs " << truth;
    EXPECT_EQ(p.value->value, PredictLr(*r.value, target, LrRule::kSurfaceFit).value->value);
  }
  EXPECT_EQ(DefaultLaw(*r.value, LrRule::kFit), &*r.value->surface_fit);
  EXPECT_EQ(DefaultLaw(*r.value, LrRule::kPowerFit), &*r.value->power_fit);
  EXPECT_EQ(DefaultLaw(*r.value, LrRule::kLinear), nullptr);
}

TEST(FitScalingTest, SurfaceFitIsMoreAccurateThanALineThroughNoisyArgmins) {
  // Over many noisy data sets the surface fit's mean |log2 error| at 32x is below the power fit's: every trial
  // counts, and the nearly flat batch (whose argmin is mostly noise) pulls little on the optimum line.
  const double c = 0.001, alpha = 0.9;
  double surface_err = 0, power_err = 0;
  const int datasets = 40;
  for (int s = 0; s < datasets; ++s) {
    ExtrapolationOptions o;
    o.bootstrap = 0;
    auto r = FitScaling(MakeSurface(c, alpha, {8, 16, 32, 64}, 2, 0.006, 500 + s, 16), o);
    ASSERT_TRUE(r.ok()) << r.error;
    const double truth = std::log2(c * std::pow(2048.0, alpha));
    surface_err += std::abs(std::log2(PredictLr(*r.value, 2048, LrRule::kSurfaceFit).value->value) - truth);
    power_err += std::abs(std::log2(PredictLr(*r.value, 2048, LrRule::kPowerFit).value->value) - truth);
  }
  EXPECT_LT(surface_err, 0.9 * power_err) << "surface " << surface_err / datasets << " power "
                                          << power_err / datasets << " octaves";
}

TEST(FitScalingTest, DefaultRuleFallsBackToThePowerFitWithoutThreeLrsPerBatch) {
  std::vector<ScaleTrial> trials;
  for (int64_t b : {16, 64}) {
    for (double lr : {0.01, 0.02}) {  // two LRs per batch: no surface, but a best LR (argmin) per batch
      ScaleTrial t;
      t.global_batch = b;
      t.peak_lr = lr * static_cast<double>(b) / 16;
      t.final_loss = lr == 0.01 ? 0.5 : 0.6;
      trials.push_back(t);
    }
  }
  auto r = FitScaling(trials, {});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_FALSE(r.value->surface_fit);
  ASSERT_TRUE(r.value->power_fit);
  EXPECT_EQ(DefaultLaw(*r.value, LrRule::kFit), &*r.value->power_fit);
  EXPECT_FALSE(PredictLr(*r.value, 1024, LrRule::kSurfaceFit).ok());
  auto p = PredictLr(*r.value, 1024, LrRule::kFit);
  ASSERT_TRUE(p.ok()) << p.error;
  EXPECT_NEAR(p.value->value, 0.01 * 1024 / 16, 1e-9);  // the argmins 0.01 @16 and 0.04 @64: linear
}

TEST(FitScalingTest, BootstrapIntervalsCoverTheTruth) {
  Truth truth;
  truth.loss_noise = 0.004;
  int covered_eps = 0, covered_lr = 0;
  const int datasets = 30;
  for (int s = 0; s < datasets; ++s) {
    auto trials = MakeSweeps(truth, {32, 64, 128, 256, 512}, 100 + s);
    ExtrapolationOptions o;
    o.seed = s;
    o.bootstrap = 150;
    auto r = FitScaling(trials, o);
    ASSERT_TRUE(r.ok()) << r.error;
    ASSERT_TRUE(r.value->noise_fit);
    covered_eps += r.value->noise_fit->eps_max.Contains(truth.eps_max);
    auto p = PredictLr(*r.value, 4096, LrRule::kNoiseFit);
    ASSERT_TRUE(p.ok());
    covered_lr += p.value->Contains(EpsOpt(truth, 4096));
  }
  // Nominal 90%; the percentile bootstrap of a few sweeps is somewhat narrow, so ask for 2/3.
  EXPECT_GE(covered_eps, datasets * 2 / 3) << covered_eps << "/" << datasets;
  EXPECT_GE(covered_lr, datasets * 2 / 3) << covered_lr << "/" << datasets;
}

TEST(FitScalingTest, SameSeedSameIntervals) {
  auto trials = MakeSweeps(Truth{}, {32, 128, 512}, 3);
  ExtrapolationOptions o;
  o.seed = 42;
  auto a = FitScaling(trials, o), b = FitScaling(trials, o);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a.value->lr_fit->eps_max.lo, b.value->lr_fit->eps_max.lo);
  EXPECT_EQ(a.value->lr_fit->b_noise.hi, b.value->lr_fit->b_noise.hi);
}

TEST(FitScalingTest, BaselinesFollowTheirDefinitions) {
  Truth exact;
  exact.loss_noise = 0;
  auto trials = MakeSweeps(exact, {32, 64, 128}, 5);
  ExtrapolationOptions o;
  o.bootstrap = 20;
  auto r = FitScaling(trials, o);
  ASSERT_TRUE(r.ok()) << r.error;
  const ScaleAnchorPoint& a = r.value->anchor;
  EXPECT_EQ(a.global_batch, 128);  // the largest swept batch by default
  EXPECT_NEAR(a.lr, r.value->best_lr.back().lr.value, 0);
  auto lin = PredictLr(*r.value, 2048, LrRule::kLinear);
  auto sq = PredictLr(*r.value, 2048, LrRule::kSqrt);
  ASSERT_TRUE(lin.ok() && sq.ok());
  EXPECT_DOUBLE_EQ(lin.value->value, a.lr * 16);
  EXPECT_DOUBLE_EQ(sq.value->value, a.lr * 4);
  EXPECT_LE(lin.value->lo, lin.value->value);
  EXPECT_GE(lin.value->hi, lin.value->value);

  o.anchor = ScaleAnchor::kBestOverall;
  auto best = FitScaling(trials, o);
  ASSERT_TRUE(best.ok());
  // Loss grows with the batch in MakeSweeps, so the best configuration is at the smallest batch.
  EXPECT_EQ(best.value->anchor.global_batch, 32);
  auto lin32 = PredictLr(*best.value, 2048, LrRule::kLinear);
  ASSERT_TRUE(lin32.ok());
  EXPECT_DOUBLE_EQ(lin32.value->value, best.value->anchor.lr * 64);
}

// Loss curves whose best run at batch B reaches `target` after S_min (1 + B_crit/B) steps.
TEST(FitScalingTest, RecoversTheCriticalBatchFromStepsToTarget) {
  const double s_min = 2000, b_crit = 300, target = 0.3;
  std::mt19937_64 rng(11);
  std::normal_distribution<double> n01(0, 1);
  std::vector<ScaleTrial> trials;
  for (int64_t b : {16, 32, 64, 128, 256, 512, 1024, 2048}) {
    const double s_best = s_min * (1 + b_crit / static_cast<double>(b)) * std::exp(0.03 * n01(rng));
    for (int k = -2; k <= 2; ++k) {
      ScaleTrial t;
      t.global_batch = b;
      t.peak_lr = 0.1 * std::exp2(k);
      const double s_hit = s_best * (1 + 0.3 * k * k);  // mistuned LRs need more steps
      t.steps = static_cast<int64_t>(4 * s_best);
      for (int i = 1; i <= 40; ++i) {
        const int64_t step = t.steps * i / 40;
        t.curve.push_back({step, target * std::pow(s_hit / static_cast<double>(step), 0.5)});
      }
      t.final_loss = t.curve.back().loss;
      trials.push_back(t);
    }
  }
  ExtrapolationOptions o;
  o.target_loss = target;
  auto r = FitScaling(trials, o);
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_TRUE(r.value->tradeoff);
  const TradeoffFit& t = *r.value->tradeoff;
  EXPECT_NEAR(std::log2(t.b_crit.value / b_crit), 0, 0.2);
  EXPECT_NEAR(std::log2(t.s_min.value / s_min), 0, 0.1);
  EXPECT_NEAR(t.e_min.value, t.s_min.value * t.b_crit.value, 1e-6 * t.e_min.value);
  EXPECT_TRUE(t.b_crit.Contains(b_crit)) << t.b_crit.lo << " " << t.b_crit.hi;
  EXPECT_EQ(t.steps_by_batch.size(), 8u);

  // Without an explicit target one is chosen that every batch reaches.
  auto automatic = FitScaling(trials, {});
  ASSERT_TRUE(automatic.ok());
  ASSERT_TRUE(automatic.value->tradeoff);
  EXPECT_EQ(automatic.value->tradeoff->steps_by_batch.size(), 8u);
}

// A fit the resampling cannot vary — here each batch's steps to the target come from its one LR that reaches it,
// so a replicate either redraws the same two points or fails — has no interval (NaN bounds), printed as such,
// not [value, value]; with a third batch the same data gives one. The plan built on it says the same.
TEST(FitScalingTest, AFitTheResamplingCannotVaryHasNoInterval) {
  const double s_min = 2000, b_crit = 300, target = 0.3;
  auto sweep = [&](const std::vector<int64_t>& batches) {
    std::vector<ScaleTrial> trials;
    for (int64_t b : batches) {
      const double s_best = s_min * (1 + b_crit / static_cast<double>(b)) * (b == 64 ? 1.04 : 1.0);
      for (int k = -1; k <= 1; ++k) {
        ScaleTrial t;
        t.global_batch = b;
        t.peak_lr = 0.1 * std::exp2(k);
        t.steps = static_cast<int64_t>(2 * s_best);
        const double s_hit = k == 0 ? s_best : 10 * s_best;  // only the middle LR reaches the target
        for (int i = 1; i <= 40; ++i) {
          const int64_t step = t.steps * i / 40;
          t.curve.push_back({step, target * std::pow(s_hit / static_cast<double>(step), 0.5)});
        }
        t.final_loss = t.curve.back().loss;
        trials.push_back(t);
      }
    }
    return trials;
  };
  ExtrapolationOptions o;
  o.target_loss = target;
  const auto two = sweep({16, 1024});
  auto r = FitScaling(two, o);
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_TRUE(r.value->tradeoff);
  const TradeoffFit& t = *r.value->tradeoff;
  EXPECT_NEAR(t.b_crit.value, b_crit, 1e-3 * b_crit);  // two exact points (steps read off the curves)
  EXPECT_TRUE(std::isnan(t.b_crit.lo) && std::isnan(t.b_crit.hi)) << t.b_crit.lo << " " << t.b_crit.hi;
  EXPECT_TRUE(std::isnan(t.s_min.lo));
  EXPECT_EQ(FormatInterval(t.b_crit), "300 (no interval)");

  PlanTarget at;
  at.global_batch = 4096;
  at.examples = 4096.0 * 1000;
  auto p = PlanRun(*r.value, two, at);
  ASSERT_TRUE(p.ok()) << p.error;
  EXPECT_TRUE(std::isfinite(p.value->steps_to_target.value));
  EXPECT_TRUE(std::isnan(p.value->steps_to_target.lo)) << p.value->steps_to_target.lo;
  EXPECT_TRUE(std::isfinite(p.value->final_loss.value));
  EXPECT_TRUE(std::isnan(p.value->final_loss.lo)) << "a loss line through 2 swept batches";
  bool said = false;
  for (const auto& src : p.value->sources) said |= src.find("B_crit=300 (no interval)") != std::string::npos;
  EXPECT_TRUE(said);

  auto three = FitScaling(sweep({16, 64, 1024}), o);
  ASSERT_TRUE(three.ok()) << three.error;
  ASSERT_TRUE(three.value->tradeoff);
  const Interval& b3 = three.value->tradeoff->b_crit;
  EXPECT_LT(b3.lo, b3.hi) << "three points, one off the law: the resampling moves the fit";
  EXPECT_TRUE(b3.Contains(b3.value));
  EXPECT_EQ(FormatInterval(b3).find("no interval"), std::string::npos);
}

// DeepSeek-style: near-optimal (lr, batch) at each compute budget follow power laws.
TEST(FitScalingTest, RecoversPowerLawsAgainstCompute) {
  const double a_lr = 0.3, alpha = -0.125, a_b = 0.3, beta = 0.33;
  std::mt19937_64 rng(5);
  std::normal_distribution<double> n01(0, 1);
  std::vector<ScaleTrial> trials;
  for (double c : {1e14, 1e15, 1e16, 1e17, 1e18}) {
    const double lr_opt = a_lr * std::pow(c, alpha), b_opt = a_b * std::pow(c, beta);
    for (int i = -3; i <= 3; ++i) {
      for (int j = -3; j <= 3; ++j) {
        ScaleTrial t;
        t.global_batch = std::max<int64_t>(1, std::llround(b_opt * std::exp2(0.5 * j)));
        t.peak_lr = lr_opt * std::exp2(0.5 * i);
        t.compute = c;
        const double di = std::log2(t.peak_lr / lr_opt), dj = std::log2(t.global_batch / b_opt);
        t.final_loss = 2.0 * std::pow(c, -0.05) * (1 + 0.01 * (di * di + dj * dj)) + 1e-4 * n01(rng);
        trials.push_back(t);
      }
    }
  }
  ExtrapolationOptions o;
  o.near_optimal_tolerance = 0.01;
  o.bootstrap = 50;
  auto r = FitScaling(trials, o);
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_TRUE(r.value->lr_vs_compute && r.value->batch_vs_compute);
  EXPECT_NEAR(r.value->lr_vs_compute->exponent.value, alpha, 0.03);
  EXPECT_NEAR(r.value->batch_vs_compute->exponent.value, beta, 0.03);
  EXPECT_NEAR(std::log2(r.value->lr_vs_compute->At(1e16) / (a_lr * std::pow(1e16, alpha))), 0, 0.3);
  EXPECT_EQ(r.value->lr_vs_compute->budgets, 5);
  // A plan reports both laws, and with a compute budget what they give there.
  PlanTarget target;
  target.global_batch = 4096;
  target.compute = 1e19;
  target.compute_per_example = 1e12;
  auto plan = PlanRun(*r.value, trials, target);
  ASSERT_TRUE(plan.ok()) << plan.error;
  int laws = 0;
  for (const auto& line : plan.value->sources) {
    if (line.rfind("compute law: ", 0) != 0) continue;
    ++laws;
    EXPECT_NE(line.find("at 5 compute budgets; at the budget's compute 1e+19: "), std::string::npos) << line;
    EXPECT_EQ(line.find("a line through 2 budgets"), std::string::npos) << line;
  }
  EXPECT_EQ(laws, 2);
}

TEST(FitScalingTest, DegenerateInputsGiveClearErrors) {
  EXPECT_NE(FitScaling({}).error.find("no trials"), std::string::npos);

  auto one = MakeSweeps(Truth{}, {64}, 1);
  auto r1 = FitScaling(one);
  EXPECT_FALSE(r1.ok());
  EXPECT_NE(r1.error.find("too few batch sizes"), std::string::npos) << r1.error;

  auto diverged = MakeSweeps(Truth{}, {32, 64}, 1);
  for (auto& t : diverged) t.diverged = true;
  auto r2 = FitScaling(diverged);
  EXPECT_FALSE(r2.ok());
  EXPECT_NE(r2.error.find("no convergent trial"), std::string::npos) << r2.error;

  auto bad = MakeSweeps(Truth{}, {32, 64}, 1);
  bad[3].peak_lr = -1;
  auto r3 = FitScaling(bad);
  EXPECT_FALSE(r3.ok());
  EXPECT_NE(r3.error.find("trial " + bad[3].id + ": peak_lr"), std::string::npos) << r3.error;

  // One batch converges, the other only diverges: too few batch sizes, and it says which.
  auto half = MakeSweeps(Truth{}, {32, 64}, 1);
  for (auto& t : half) {
    if (t.global_batch == 64) t.diverged = true;
  }
  auto r4 = FitScaling(half);
  EXPECT_FALSE(r4.ok());
  EXPECT_NE(r4.error.find("got 1 (batch 32)"), std::string::npos) << r4.error;

  // No curves, one budget, no noise: the optional fits are absent with notes, the LR law is there.
  auto bare = MakeSweeps(Truth{}, {32, 256}, 1);
  for (auto& t : bare) t.noise_scale = 0;
  auto r5 = FitScaling(bare);
  ASSERT_TRUE(r5.ok()) << r5.error;
  EXPECT_FALSE(r5.value->noise_fit);
  EXPECT_FALSE(r5.value->tradeoff);
  EXPECT_FALSE(r5.value->lr_vs_compute);
  EXPECT_GE(r5.value->notes.size(), 3u);
  EXPECT_FALSE(PredictLr(*r5.value, 1024, LrRule::kNoiseFit).ok());
  EXPECT_TRUE(PredictLr(*r5.value, 1024, LrRule::kFit).ok());  // falls back to lr_fit
  EXPECT_FALSE(PredictLr(*r5.value, 0, LrRule::kFit).ok());

  std::vector<ScaleTrial> mixed = MakeSweeps(Truth{}, {32, 64}, 1);
  EXPECT_NE(FindBestLr(mixed, 2).error.find("several global batch sizes"), std::string::npos);
}


TEST(FitScalingTest, StabilityEdgeIsTwoOnePlusMomentumOverTheSharpnessNearTheBestLrs) {
  Truth truth;
  auto trials = MakeSweeps(truth, {32, 64, 128}, 3);
  {
    auto r = FitScaling(trials, {});
    ASSERT_TRUE(r.ok()) << r.error;
    EXPECT_TRUE(std::isnan(r.value->stability_edge.value)) << "no trial measured its sharpness";
  }
  // λ_max = 4 near each batch's best LR and 100 far from it (those runs must not count), momentum 0.9:
  // the edge is 2 (1 + 0.9) / 4 = 0.95.
  for (ScaleTrial& t : trials) {
    if (t.diverged) continue;
    const double d = std::abs(std::log2(t.peak_lr / EpsOpt(truth, static_cast<double>(t.global_batch))));
    t.sharpness = d <= 0.5 ? 4.0 : d > 1.6 ? 100.0 : 0.0;
  }
  auto r = FitScaling(trials, {});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_NEAR(r.value->stability_edge.value, 0.95, 1e-9);
  EXPECT_LE(r.value->stability_edge.lo, 0.95);
  EXPECT_GE(r.value->stability_edge.hi, 0.95);
  // Momentum enters as 2 (1 + β); Adam's trials have no such edge and are left out.
  for (ScaleTrial& t : trials) t.momentum = 0;
  EXPECT_NEAR(FitScaling(trials, {}).value->stability_edge.value, 0.5, 1e-9);
  for (ScaleTrial& t : trials) t.optimizer = "adam";
  EXPECT_TRUE(std::isnan(FitScaling(trials, {}).value->stability_edge.value));
}

TEST(LrRuleTest, EveryRuleNameParsesBackToItsRuleAndOtherNamesDoNot) {
  const std::vector<std::string> names = LrRuleNames();
  ASSERT_EQ(names.size(), 8u);
  for (const std::string& name : names) {
    auto rule = ParseLrRule(name);
    ASSERT_TRUE(rule.has_value()) << name;
    EXPECT_EQ(LrRuleName(*rule), name);
  }
  EXPECT_EQ(ParseLrRule("joint_fit"), LrRule::kJointFit);
  EXPECT_EQ(ParseLrRule("fit"), LrRule::kFit);
  EXPECT_FALSE(ParseLrRule("Joint_fit").has_value());
  EXPECT_FALSE(ParseLrRule("").has_value());
  EXPECT_FALSE(ParseLrRule("mccandlish").has_value());
}
}  // namespace
}  // namespace ladder::search
