// The hero run's plan (PlanRun, search/scaling/scale_plan.h) built on those fits: the LR rule and its sources,
// the stability edge, intervals, warnings, the final loss.
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
