// Scale extrapolation: recover known parameters from trials generated from the models (with noise), interval
// coverage, the baselines, the plan, and clear errors on degenerate inputs.
#include "search/scaling/extrapolation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "search/scaling/scale_plan.h"

namespace ladder::search {
namespace {

struct Truth {
  double eps_max = 0.8;
  double b_noise = 400;
  double loss_noise = 0.002;   // sd of the final loss around the model
  double noise_scale_sd = 0.15;  // log-normal spread of each trial's measured B_simple
};

double EpsOpt(const Truth& t, double b) { return t.eps_max / (1 + t.b_noise / b); }

// A sweep over a fixed LR grid (quarter octaves... here half octaves) at each batch; loss is a parabola in
// log2(lr / eps_opt(B)) plus noise; LRs beyond 4x the optimum diverge.
std::vector<ScaleTrial> MakeSweeps(const Truth& truth, const std::vector<int64_t>& batches, uint64_t seed,
                                   double lr_lo = 1e-3, double lr_hi = 8) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01(0, 1);
  std::vector<ScaleTrial> out;
  for (int64_t b : batches) {
    const double opt = EpsOpt(truth, static_cast<double>(b));
    for (double lr = lr_lo; lr <= lr_hi * 1.0001; lr *= std::sqrt(2.0)) {
      const double d = std::log2(lr / opt);
      if (d < -3.01) continue;  // a sweep of ±3 octaves around wherever it lands
      ScaleTrial t;
      t.id = "b" + std::to_string(b) + "-lr" + std::to_string(lr);
      t.global_batch = b;
      t.peak_lr = lr;
      t.steps = 1000000 / b;
      t.warmup_steps = t.steps / 10;
      t.decay = "cosine";
      if (d > 2.0) {
        t.diverged = true;
        t.final_loss = kNaN;
      } else {
        t.final_loss = 0.5 + 0.002 * b / 64.0 + 0.02 * d * d + truth.loss_noise * n01(rng);
        t.noise_scale = truth.b_noise * std::exp(truth.noise_scale_sd * n01(rng));
        t.noise_scale_start = truth.b_noise / 4 * std::exp(truth.noise_scale_sd * n01(rng));
      }
      out.push_back(t);
    }
  }
  return out;
}

// Sweeps at global batches 32..256 only, below the bend of ε_opt(B) at B_noise = 1500 (where it is nearly linear
// in B; the noise scale is measured), and their fit.
struct BelowTheBend {
  Truth truth;
  std::vector<ScaleTrial> trials;
  Fitted<ScalingReport> fit;
};
BelowTheBend SweepBelowTheBend(uint64_t seed) {
  BelowTheBend s;
  s.truth.b_noise = 1500;
  s.trials = MakeSweeps(s.truth, {32, 64, 128, 256}, seed);
  s.fit = FitScaling(s.trials, {});
  return s;
}

// A plan target: this global batch for a budget of 1,000 steps' examples.
PlanTarget ThousandStepsAt(int64_t batch) {
  PlanTarget t;
  t.global_batch = batch;
  t.examples = static_cast<double>(batch) * 1000;
  return t;
}

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

// Seed-replicated sweeps from a known loss surface loss(x, B) = L*(B) + k(B) (x − x*(B))² + noise, x = log2 lr,
// x*(B) = log2(c) + α log2 B; each batch has its own curvature and floor, and LRs 2.5 octaves above the optimum
// diverge. `flat_batch` (if any) gets a curvature 20x smaller and noise 4x larger: a sweep that says little.
std::vector<ScaleTrial> MakeSurface(double c, double alpha, const std::vector<int64_t>& batches, int seeds,
                                    double noise, uint64_t rng_seed, int64_t flat_batch = 0) {
  std::mt19937_64 rng(rng_seed);
  std::normal_distribution<double> n01(0, 1);
  std::vector<ScaleTrial> out;
  for (int64_t b : batches) {
    const double xs = std::log2(c) + alpha * std::log2(static_cast<double>(b));
    const bool flat = b == flat_batch;
    const double k = (flat ? 0.002 : 0.04) * (1 + 0.3 * std::log2(static_cast<double>(b)) / 4);
    const double floor = 0.3 + 0.01 * std::log2(static_cast<double>(b));
    for (int g = -6; g <= 6; ++g) {  // half octaves around the grid point nearest the optimum
      const double x = std::round(2 * xs) / 2 + 0.5 * g;
      for (int s = 0; s < seeds; ++s) {
        ScaleTrial t;
        t.id = "b" + std::to_string(b) + "-x" + std::to_string(x) + "-s" + std::to_string(s);
        t.global_batch = b;
        t.peak_lr = std::exp2(x);
        t.steps = 100000 / b;
        if (x - xs > 2.5) {
          t.diverged = true;
        } else {
          t.final_loss = floor + k * (x - xs) * (x - xs) + (flat ? 4 : 1) * noise * n01(rng);
        }
        out.push_back(t);
      }
    }
  }
  return out;
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

double PlannedExamples(const ScalePlan& plan) {
  if (plan.ramp.empty()) return static_cast<double>(plan.steps) * static_cast<double>(plan.global_batch);
  double examples = 0;
  for (size_t i = 0; i < plan.ramp.size(); ++i) {
    const int64_t end = i + 1 < plan.ramp.size() ? plan.ramp[i + 1].step : plan.steps;
    examples += static_cast<double>(end - plan.ramp[i].step) * static_cast<double>(plan.ramp[i].global_batch);
  }
  return examples;
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

TEST(PlanRunTest, TheChosenLrRuleSetsThePeakLrAndIsNamedAsItsSource) {
  // Below the bend the power laws keep growing past it, the McCandlish law tied to the measurement bends, so at
  // 8192 the two rules plan different LRs.
  const auto [truth, trials, r] = SweepBelowTheBend(9);
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_TRUE(r.value->joint_fit.has_value());
  PlanTarget target = ThousandStepsAt(8192);
  PlanOptions joint;
  joint.lr_rule = LrRule::kJointFit;
  auto pj = PlanRun(*r.value, trials, target, joint);
  auto pf = PlanRun(*r.value, trials, target);
  ASSERT_TRUE(pj.ok()) << pj.error;
  ASSERT_TRUE(pf.ok()) << pf.error;
  EXPECT_DOUBLE_EQ(pj.value->peak_lr.value, r.value->joint_fit->Lr(8192));
  EXPECT_LT(pj.value->peak_lr.value, pf.value->peak_lr.value);
  // The bend: at 8192 = 5.5 B_noise the law gives eps_max / 1.18, well under the swept batches' growth.
  EXPECT_NEAR(pj.value->peak_lr.value, truth.eps_max / (1 + 1500.0 / 8192), 0.35 * truth.eps_max);
  ASSERT_GE(pj.value->sources.size(), 2u);
  EXPECT_NE(pj.value->sources[1].find("joint_fit eps_opt(B)"), std::string::npos) << pj.value->sources[1];
  PlanOptions linear;
  linear.lr_rule = LrRule::kLinear;
  auto pl = PlanRun(*r.value, trials, target, linear);
  ASSERT_TRUE(pl.ok()) << pl.error;
  EXPECT_DOUBLE_EQ(pl.value->peak_lr.value, PredictLr(*r.value, 8192, LrRule::kLinear).value->value);
}

// The plan's source line that starts with `prefix` ("" when none).
std::string SourceLine(const ScalePlan& p, const std::string& prefix) {
  for (const auto& s : p.sources) {
    if (s.rfind(prefix, 0) == 0) return s;
  }
  return "";
}

TEST(PlanRunTest, NamesTheStabilityEdgeAndSaysWhenThePeakLrIsAboveIt) {
  auto [truth, trials, r] = SweepBelowTheBend(9);
  ASSERT_TRUE(r.ok()) << r.error;
  PlanTarget target = ThousandStepsAt(8192);
  auto edge_line = [](const ScalePlan& p) { return SourceLine(p, "stability edge:"); };
  auto plain = PlanRun(*r.value, trials, target);
  ASSERT_TRUE(plain.ok()) << plain.error;
  EXPECT_TRUE(std::isnan(plain.value->stability_edge));
  EXPECT_EQ(edge_line(*plain.value), "");
  // λ_max = 38 on every convergent trial: the edge is 2 (1 + 0.9) / 38 = 0.1, far below the ~1.4 planned at 8192.
  for (ScaleTrial& t : trials) t.sharpness = t.diverged ? 0 : 38;
  auto refit = FitScaling(trials, {});
  ASSERT_TRUE(refit.ok()) << refit.error;
  auto p = PlanRun(*refit.value, trials, target);
  ASSERT_TRUE(p.ok()) << p.error;
  EXPECT_NEAR(p.value->stability_edge, 0.1, 1e-9);
  const std::string line = edge_line(*p.value);
  EXPECT_NE(line.find("above it"), std::string::npos) << line;
  // At a batch whose LR is below the edge the line names the edge without the warning.
  for (ScaleTrial& t : trials) t.sharpness = t.diverged ? 0 : 0.038;  // edge 100
  refit = FitScaling(trials, {});
  p = PlanRun(*refit.value, trials, target);
  ASSERT_TRUE(p.ok()) << p.error;
  EXPECT_NEAR(p.value->stability_edge, 100, 1e-6);
  EXPECT_EQ(edge_line(*p.value).find("above it"), std::string::npos) << edge_line(*p.value);
}

TEST(PlanRunTest, SaysWhenThePeakLrIntervalIsWiderThanAnOctave) {
  PlanTarget target = ThousandStepsAt(8192);
  auto uncertainty = [](const ScalePlan& p) { return SourceLine(p, "peak_lr uncertainty:"); };
  // A best LR linear in the batch far past the sweep (B_noise 10^6): the power law holds to the target, so
  // neither its bootstrap nor its held-out error widens the interval past an octave.
  Truth linear;
  linear.b_noise = 1e6;
  linear.eps_max = 0.05 * linear.b_noise / 256;
  linear.loss_noise = 0.0005;  // the vertices within a few hundredths of an octave: a held-out error that small
  auto linear_trials = MakeSweeps(linear, {32, 64, 128, 256}, 9);
  auto lr = FitScaling(linear_trials, {});
  ASSERT_TRUE(lr.ok()) << lr.error;
  auto tight = PlanRun(*lr.value, linear_trials, target);
  ASSERT_TRUE(tight.ok()) << tight.error;
  const double tight_octaves = std::log2(tight.value->peak_lr.hi / tight.value->peak_lr.lo);
  EXPECT_LT(tight_octaves, 1.0);
  EXPECT_EQ(uncertainty(*tight.value), "") << "a well-measured sweep: no warning";
  auto [truth, trials, r] = SweepBelowTheBend(9);
  ASSERT_TRUE(r.ok()) << r.error;
  // The same sweeps with 15x the loss noise (0.03 against a curvature of 0.02 per octave^2) and two batches an
  // octave apart: the vertices wander and the extrapolation over 5 octaves fans out.
  truth.loss_noise = 0.03;
  auto noisy_trials = MakeSweeps(truth, {128, 256}, 9);
  auto noisy = FitScaling(noisy_trials, {});
  ASSERT_TRUE(noisy.ok()) << noisy.error;
  auto wide = PlanRun(*noisy.value, noisy_trials, target);
  ASSERT_TRUE(wide.ok()) << wide.error;
  const double wide_octaves = std::log2(wide.value->peak_lr.hi / wide.value->peak_lr.lo);
  EXPECT_GT(wide_octaves, 1.0);
  const std::string line = uncertainty(*wide.value);
  EXPECT_NE(line.find("batch 8192"), std::string::npos) << line;
  // The threshold is an option.
  PlanOptions lax;
  lax.max_lr_interval_octaves = wide_octaves + 0.1;
  auto quiet = PlanRun(*noisy.value, noisy_trials, target, lax);
  ASSERT_TRUE(quiet.ok()) << quiet.error;
  EXPECT_EQ(uncertainty(*quiet.value), "");
  // An interval without a finite positive lower bound is the widest of all.
  ScalingReport unbounded = *noisy.value;
  ASSERT_TRUE(unbounded.surface_fit.has_value());
  ASSERT_FALSE(unbounded.surface_fit->draws.empty());
  for (size_t i = 0; i < unbounded.surface_fit->draws.size(); i += 2) unbounded.surface_fit->draws[i].first = 0;
  auto open = PlanRun(unbounded, noisy_trials, target, lax);
  ASSERT_TRUE(open.ok()) << open.error;
  EXPECT_NE(uncertainty(*open.value).find("no finite positive bounds"), std::string::npos)
      << uncertainty(*open.value) << " peak_lr [" << open.value->peak_lr.lo << ", " << open.value->peak_lr.hi << "]";
}

TEST(PlanRunTest, OptimizerWarmupAndTheNoiseCheckFollowTheirRules) {
  auto [truth, trials, r] = SweepBelowTheBend(9);
  ASSERT_TRUE(r.ok()) << r.error;
  PlanTarget target = ThousandStepsAt(8192);
  // Adam trials become LAMB at the layer-wise threshold; SGD becomes LARC when asked.
  std::vector<ScaleTrial> adam = trials;
  for (auto& t : adam) t.optimizer = "adam";
  auto lamb = PlanRun(*r.value, adam, target);
  ASSERT_TRUE(lamb.ok()) << lamb.error;
  EXPECT_EQ(lamb.value->optimizer, "lamb");
  PlanOptions larc;
  larc.prefer_larc = true;
  auto l = PlanRun(*r.value, trials, target, larc);
  ASSERT_TRUE(l.ok()) << l.error;
  EXPECT_EQ(l.value->optimizer, "larc");
  // Below the batch threshold, a batch at least 8x the noise scale (no tradeoff fit here: B_simple ~ 1500)
  // still switches; a batch below both keeps SGD.
  PlanOptions high;
  high.layerwise_batch = int64_t{1} << 30;
  target = ThousandStepsAt(16384);
  auto by_noise = PlanRun(*r.value, trials, target, high);
  ASSERT_TRUE(by_noise.ok()) << by_noise.error;
  EXPECT_EQ(by_noise.value->optimizer, "lars");
  EXPECT_NE(by_noise.value->sources.end(),
            std::find_if(by_noise.value->sources.begin(), by_noise.value->sources.end(),
                         [](const std::string& x) { return x.find("x B_crit (measured noise scale") != std::string::npos; }));
  target = ThousandStepsAt(4096);
  auto keep = PlanRun(*r.value, trials, target, high);
  ASSERT_TRUE(keep.ok()) << keep.error;
  EXPECT_EQ(keep.value->optimizer, "sgd");
  // Trials that warmed up over 1% of their steps: beyond the swept batches the plan warms up over at least 5%.
  std::vector<ScaleTrial> short_warmup = trials;
  for (auto& t : short_warmup) t.warmup_steps = t.steps / 100;
  auto w = PlanRun(*r.value, short_warmup, target);
  ASSERT_TRUE(w.ok()) << w.error;
  EXPECT_NEAR(static_cast<double>(w.value->warmup_steps) / w.value->steps, 0.05, 0.005);
  // McCandlish's two routes to B_noise are set side by side.
  const auto& src = keep.value->sources;
  auto check = std::find_if(src.begin(), src.end(), [](const std::string& x) { return x.rfind("noise check: ", 0) == 0; });
  ASSERT_NE(check, src.end());
  EXPECT_NE(check->find("vs the measured B_simple"), std::string::npos) << *check;
  const Interval& a = r.value->lr_fit->b_noise;
  const Interval& m = r.value->measured_noise_scale;
  const bool overlap = !(a.hi < m.lo || m.hi < a.lo);
  EXPECT_NE(check->find(overlap ? "the intervals overlap" : "the two disagree"), std::string::npos) << *check;
  // Measured B_simple far from the best LRs' bend: they disagree, and the plan says so.
  ScalingReport off = *r.value;
  off.measured_noise_scale = {a.hi * 100, a.hi * 50, a.hi * 200};
  auto disagree = PlanRun(off, trials, target, high);
  ASSERT_TRUE(disagree.ok()) << disagree.error;
  const auto& ds = disagree.value->sources;
  EXPECT_NE(ds.end(), std::find_if(ds.begin(), ds.end(), [](const std::string& x) {
              return x.rfind("noise check: ", 0) == 0 && x.find("do not overlap: the two disagree") != std::string::npos;
            }));
}

// The loss model loss = a + b ln(S_eff) falls without bound: carried far past the swept runs it goes below zero,
// which no loss does. Then the plan predicts no final loss (and no band) and says how far it was carried.
TEST(PlanRunTest, AFinalLossBelowZeroIsNotPredicted) {
  auto [truth, trials, r] = SweepBelowTheBend(9);
  ASSERT_TRUE(r.ok()) << r.error;
  PlanTarget near;
  near.global_batch = 1024;
  near.examples = 1024.0 * 1000;
  auto ok = PlanRun(*r.value, trials, near);
  ASSERT_TRUE(ok.ok()) << ok.error;
  ASSERT_TRUE(std::isfinite(ok.value->final_loss.value)) << "a budget near the sweep's is predicted";
  EXPECT_GT(ok.value->final_loss.value, 0);
  EXPECT_GE(ok.value->final_loss.lo, 0);
  PlanTarget far = near;
  far.examples = 1024.0 * 1e15;
  auto p = PlanRun(*r.value, trials, far);
  ASSERT_TRUE(p.ok()) << p.error;
  EXPECT_TRUE(std::isnan(p.value->final_loss.value)) << p.value->final_loss.value;
  EXPECT_TRUE(p.value->loss_band.empty());
  std::string said;
  for (const auto& src : p.value->sources) {
    if (src.rfind("final_loss: ", 0) == 0) said = src;
  }
  EXPECT_NE(said.find("final_loss: not predicted: loss = "), std::string::npos) << said;
  EXPECT_NE(said.find("x the longest swept run's S_eff"), std::string::npos) << said;
}

TEST(PlanRunTest, PlansALargeBatchRun) {
  auto [truth, trials, r] = SweepBelowTheBend(9);
  ASSERT_TRUE(r.ok()) << r.error;

  PlanTarget target;
  target.nodes = 64;
  target.per_node_batch = 128;  // global 8192
  target.examples = 8192.0 * 1000;
  auto p = PlanRun(*r.value, trials, target);
  ASSERT_TRUE(p.ok()) << p.error;
  const ScalePlan& plan = *p.value;
  EXPECT_EQ(plan.global_batch, 8192);
  EXPECT_EQ(plan.nodes, 64);
  EXPECT_DOUBLE_EQ(plan.peak_lr.value, PredictLr(*r.value, 8192, LrRule::kFit).value->value);
  EXPECT_EQ(plan.optimizer, "lars");  // sgd at >= 8192
  EXPECT_EQ(plan.decay, "cosine");
  // Early B_simple ~ 375: the ramp starts at 8192/16 = 512 (at most 4 doublings) and doubles to 8192.
  ASSERT_EQ(plan.ramp.size(), 5u);
  EXPECT_EQ(plan.ramp.front().global_batch, 512);
  EXPECT_EQ(plan.ramp.front().step, 0);
  EXPECT_EQ(plan.ramp.back().global_batch, 8192);
  // The budget holds: examples over the ramp and the rest add up to the target.
  EXPECT_NEAR(PlannedExamples(plan) / target.examples, 1.0, 0.01);
  EXPECT_NEAR(static_cast<double>(plan.warmup_steps) / plan.steps, 0.1, 0.01);  // the anchor's fraction
  EXPECT_TRUE(std::isfinite(plan.final_loss.value));
  EXPECT_LE(plan.final_loss.lo, plan.final_loss.value);
  EXPECT_EQ(plan.loss_band.size(), 10u);
  EXPECT_EQ(plan.loss_band.back().step, plan.steps);
  // The baselines at the same batch, for comparison (the fit's exponent is at most 1, but its intercept comes
  // from every swept batch, so it may land on either side of the linear rule from the largest one).
  EXPECT_DOUBLE_EQ(plan.linear_rule_lr, PredictLr(*r.value, 8192, LrRule::kLinear).value->value);
  EXPECT_GT(plan.linear_rule_lr, plan.sqrt_rule_lr);
  EXPECT_GT(plan.peak_lr.value, plan.sqrt_rule_lr);
  ASSERT_GE(plan.sources.size(), 2u);
  EXPECT_NE(plan.sources[1].find("peak_lr: "), std::string::npos) << plan.sources[1];
  EXPECT_NE(plan.sources[1].find("surface_fit"), std::string::npos) << plan.sources[1];

  PlanTarget small;
  small.global_batch = 512;
  small.examples = 512.0 * 100;
  auto q = PlanRun(*r.value, trials, small);
  ASSERT_TRUE(q.ok()) << q.error;
  EXPECT_EQ(q.value->optimizer, "sgd");
  EXPECT_NEAR(PlannedExamples(*q.value) / small.examples, 1.0, 0.01);
  ASSERT_FALSE(q.value->ramp.empty()) << "early B_simple ~ 375 < 512: the batch ramps up";
  EXPECT_GT(q.value->steps, 100) << "the ramp's smaller batches take more steps for the same examples";

  // Without early noise measurements there is no ramp: steps = budget / batch.
  for (auto& t : trials) t.noise_scale_start = 0;
  auto flat = PlanRun(*r.value, trials, small);
  ASSERT_TRUE(flat.ok()) << flat.error;
  EXPECT_TRUE(flat.value->ramp.empty());
  EXPECT_EQ(flat.value->steps, 100);

  auto none = PlanRun(*r.value, trials, PlanTarget{});
  EXPECT_FALSE(none.ok());
  EXPECT_NE(none.error.find("target"), std::string::npos) << none.error;
  PlanTarget huge;
  huge.global_batch = int64_t{1} << 30;
  huge.examples = 1e12;
  EXPECT_FALSE(PlanRun(*r.value, trials, huge).ok());
}

TEST(PlanRunTest, SaysWhichRuleSetThePeakLrAndWhy) {
  const auto [truth, trials, r] = SweepBelowTheBend(9);
  ASSERT_TRUE(r.ok()) << r.error;
  auto fit = PlanRun(*r.value, trials, ThousandStepsAt(8192));
  ASSERT_TRUE(fit.ok()) << fit.error;
  // No --lr-rule: the default names the law it resolved to and its exponent.
  EXPECT_EQ(fit.value->lr_rule, "surface_fit");
  EXPECT_NE(fit.value->lr_rule_why.find("the default rule"), std::string::npos) << fit.value->lr_rule_why;
  EXPECT_NE(fit.value->lr_rule_why.find("exponent a="), std::string::npos) << fit.value->lr_rule_why;
  PlanOptions joint;
  joint.lr_rule = LrRule::kJointFit;
  auto asked = PlanRun(*r.value, trials, ThousandStepsAt(8192), joint);
  ASSERT_TRUE(asked.ok()) << asked.error;
  EXPECT_EQ(asked.value->lr_rule, "joint_fit");
  EXPECT_EQ(asked.value->lr_rule_why.rfind("asked for (--lr-rule joint_fit); held out, it predicted batch 256's best "
                                            "LR within ", 0), 0u)
      << asked.value->lr_rule_why;
}

TEST(PlanRunTest, WarnsWhenTheSweepIsTooSmallTooNarrowOrTooFarFromTheTarget) {
  const auto [truth, trials, r] = SweepBelowTheBend(9);  // batches 32..256, every optimum bracketed
  ASSERT_TRUE(r.ok()) << r.error;
  auto has = [](const ScalePlan& p, const std::string& part) {
    for (const auto& w : p.warnings) {
      if (w.find(part) != std::string::npos) return true;
    }
    return false;
  };
  auto near = PlanRun(*r.value, trials, ThousandStepsAt(8192));  // 32x the largest swept batch
  ASSERT_TRUE(near.ok()) << near.error;
  EXPECT_TRUE(near.value->warnings.empty()) << near.value->warnings.front();
  auto far = PlanRun(*r.value, trials, ThousandStepsAt(32768));  // 128x
  ASSERT_TRUE(far.ok()) << far.error;
  EXPECT_TRUE(has(*far.value, "128x the largest swept batch (256), beyond 64x")) << far.value->warnings.size();

  // Two batch sizes only, and one of them swept only below its optimum (its best LR is its largest).
  std::vector<ScaleTrial> narrow;
  for (const ScaleTrial& t : trials) {
    const double opt = EpsOpt(truth, static_cast<double>(t.global_batch));
    if (t.global_batch == 32 || (t.global_batch == 64 && t.peak_lr < opt / 1.9)) narrow.push_back(t);
  }
  auto rn = FitScaling(narrow);
  ASSERT_TRUE(rn.ok()) << rn.error;
  auto small = PlanRun(*rn.value, narrow, ThousandStepsAt(1024));
  ASSERT_TRUE(small.ok()) << small.error;
  EXPECT_TRUE(has(*small.value, "only 2 swept batch size(s)"));
  EXPECT_TRUE(has(*small.value, "batch 64: its best LR")) << ::testing::PrintToString(small.value->warnings);
  EXPECT_FALSE(has(*small.value, "batch 32: its best LR")) << ::testing::PrintToString(small.value->warnings);
}


TEST(PlanRunTest, ThePeakLrIntervalCarriesTheRulesHeldOutErrorToTheTarget) {
  // The rule refitted without the largest swept batch (256) misses that batch's best LR by e octaves; at 8192,
  // 5 doublings beyond 256 for the 1 between 128 and 256, the stated interval spans at least +-5e around the
  // plan's LR, and holds the bootstrap's.
  const auto [truth, trials, r] = SweepBelowTheBend(9);
  ASSERT_TRUE(r.ok()) << r.error;
  std::vector<ScaleTrial> rest;
  for (const ScaleTrial& t : trials) {
    if (t.global_batch < 256) rest.push_back(t);
  }
  ExtrapolationOptions no_bootstrap;
  no_bootstrap.bootstrap = 0;
  auto without = FitScaling(rest, no_bootstrap);
  ASSERT_TRUE(without.ok()) << without.error;
  const double held = std::fabs(std::log2(PredictLr(*without.value, 256, LrRule::kFit).value->value /
                                          r.value->best_lr.back().lr.value));
  ASSERT_GT(held, 0.005) << "a measurable held-out error";
  auto plan = PlanRun(*r.value, trials, ThousandStepsAt(8192));
  ASSERT_TRUE(plan.ok()) << plan.error;
  const Interval& iv = plan.value->peak_lr;
  EXPECT_LE(iv.lo, iv.value * std::exp2(-5 * held) * (1 + 1e-9)) << FormatInterval(iv) << " held " << held;
  EXPECT_GE(iv.hi, iv.value * std::exp2(5 * held) * (1 - 1e-9)) << FormatInterval(iv) << " held " << held;
  auto boot = PredictLr(*r.value, 8192, LrRule::kFit);
  ASSERT_TRUE(boot.ok());
  EXPECT_LE(iv.lo, boot.value->lo);
  EXPECT_GE(iv.hi, boot.value->hi);
  const std::string line = SourceLine(*plan.value, "peak_lr held-out check:");
  EXPECT_NE(line.find("fitted without batch 256"), std::string::npos) << line;
  EXPECT_NE(line.find("carried 5x as far to batch 8192"), std::string::npos) << line;
  // Interpolating (a batch inside the sweep) is not widened.
  auto inside = PlanRun(*r.value, trials, ThousandStepsAt(128));
  ASSERT_TRUE(inside.ok()) << inside.error;
  EXPECT_EQ(SourceLine(*inside.value, "peak_lr held-out check:"), "");
}

TEST(PlanRunTest, TheFinalLossIsReadOffTheSweptCurvesAtTheTargetsEffectiveExamples) {
  // Every run's validation loss follows one law of the examples it has effectively seen, E / (1 + B/B_noise),
  // and the runs measured B_noise: at any target batch and budget the plan's stated interval holds the law.
  const double b_noise = 500, examples = 2e5;
  auto law = [&](double e, double b) { return 0.5 + 20.0 / std::sqrt(e / (1 + b / b_noise)); };
  std::vector<ScaleTrial> trials;
  for (int64_t b : {32, 64, 128}) {
    for (double lr : {0.01, 0.014, 0.02, 0.028, 0.04}) {
      ScaleTrial t;
      t.id = "b" + std::to_string(b) + "-lr" + std::to_string(lr);
      t.global_batch = b;
      t.peak_lr = lr * static_cast<double>(b) / 32;
      t.steps = static_cast<int64_t>(examples) / b;
      t.warmup_steps = t.steps / 10;
      t.decay = "cosine";
      const double off = std::log2(lr / 0.02);
      for (int i = 1; i <= 10; ++i) {
        const int64_t s = t.steps * i / 10;
        t.curve.push_back({s, law(static_cast<double>(s * b), static_cast<double>(b)) + 0.01 * off * off});
      }
      t.final_loss = t.curve.back().loss;
      t.noise_scale = b_noise;
      trials.push_back(t);
    }
  }
  auto r = FitScaling(trials);
  ASSERT_TRUE(r.ok()) << r.error;
  for (int64_t target : {1024, 4096}) {
    PlanTarget at;
    at.global_batch = target;
    at.examples = examples;
    auto plan = PlanRun(*r.value, trials, at);
    ASSERT_TRUE(plan.ok()) << plan.error;
    const double expected = law(examples, static_cast<double>(target));
    EXPECT_TRUE(plan.value->final_loss.Contains(expected))
        << target << ": " << FormatInterval(plan.value->final_loss) << " vs " << expected;
    EXPECT_NE(SourceLine(*plan.value, "final_loss (with the line above)").find("validation curves"),
              std::string::npos)
        << ::testing::PrintToString(plan.value->sources);
    ASSERT_FALSE(plan.value->loss_band.empty());
  }
  // A budget beyond the swept runs' examples is not read off their curves.
  PlanTarget beyond;
  beyond.global_batch = 64;
  beyond.examples = 4 * examples;
  auto far = PlanRun(*r.value, trials, beyond);
  ASSERT_TRUE(far.ok()) << far.error;
  for (const auto& src : far.value->sources) EXPECT_EQ(src.find("validation curves"), std::string::npos) << src;
}

}  // namespace
}  // namespace ladder::search
