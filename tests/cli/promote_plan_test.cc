// ladder promote's pure parts: trials' scale records from their metrics and commands, the hero command, the
// live loss band.
#include "cli/promote_plan.h"

#include "cli/extrapolation_json.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace ladder::cli {
namespace {

v1::Trial MakeTrial(int number, int64_t batch, double lr, std::vector<double> losses, const std::string& optimizer) {
  v1::Trial t;
  t.set_number(number);
  t.set_state(v1::TRIAL_COMPLETED);
  for (const char* w : {"ladder-train", "--lr"}) t.add_command(w);
  t.add_command(std::to_string(lr));
  t.add_command("--batch-size");
  t.add_command(std::to_string(batch));
  t.add_command("--optimizer=" + optimizer);
  t.add_command("--epochs");
  t.add_command("4");
  t.add_command("--warmup-steps");
  t.add_command("5");
  int64_t step = 0;
  for (double l : losses) {
    step += 10;
    auto* p = t.add_metrics();
    p->set_step(step);
    (*p->mutable_values())["global_batch"] = static_cast<double>(batch);
    (*p->mutable_values())["lr"] = lr * (step == 10 ? 0.5 : 1.0);  // warming up at first
    (*p->mutable_values())["noise_scale"] = 100 + static_cast<double>(step);
    (*p->mutable_values())["val_loss"] = l;
  }
  // ladder-train --curvature-every writes its measurements on lines of their own.
  for (double sharpness : {2.0, -5.0, 3.0}) {
    auto* p = t.add_metrics();
    p->set_step(step);
    (*p->mutable_values())["grad_curvature"] = 0.5;
    (*p->mutable_values())["sharpness"] = sharpness;
  }
  return t;
}

TEST(PromotePlan, ScaleTrialsComeFromMetricsAndCommandsAndSkipWhatCannotBeUsed) {
  v1::Search s;
  s.mutable_group()->set_nodes(2);
  std::vector<v1::Trial> trials = {MakeTrial(0, 64, 0.1, {1.0, 0.5, 0.3, 0.25}, "lamb")};
  v1::Trial failed = MakeTrial(1, 64, 0.4, {1.0}, "sgd");
  failed.set_state(v1::TRIAL_FAILED);
  failed.set_exit_code(3);  // diverged: kept, as diverged
  trials.push_back(failed);
  v1::Trial broken = MakeTrial(2, 64, 0.2, {1.0}, "sgd");
  broken.set_state(v1::TRIAL_FAILED);
  broken.set_exit_code(1);
  broken.set_error("exited with code 1");
  trials.push_back(broken);
  v1::Trial silent;
  silent.set_number(3);
  silent.set_state(v1::TRIAL_COMPLETED);
  trials.push_back(silent);
  std::vector<std::string> notes;
  trials[1].add_command("--momentum");
  trials[1].add_command("0.5");
  auto scale = ScaleTrialsFrom(s, trials, &notes);
  ASSERT_EQ(scale.size(), 2u);
  EXPECT_DOUBLE_EQ(scale[1].momentum, 0.5) << "--momentum from the command";
  const auto& t = scale[0];
  EXPECT_EQ(t.global_batch, 64);
  EXPECT_DOUBLE_EQ(t.peak_lr, 0.1) << "the largest lr reported (after warmup)";
  EXPECT_EQ(t.steps, 40);
  EXPECT_DOUBLE_EQ(t.final_loss, 0.25);
  EXPECT_DOUBLE_EQ(t.best_loss, 0.25);
  EXPECT_EQ(t.curve.size(), 4u);
  EXPECT_EQ(t.optimizer, "lamb") << "--optimizer=VALUE is read too";
  EXPECT_EQ(t.warmup_steps, 5);
  EXPECT_EQ(t.nodes, 2);
  EXPECT_GT(t.noise_scale, 100);
  EXPECT_DOUBLE_EQ(t.sharpness, 5.0) << "the largest |top eigenvalue| the run measured";
  EXPECT_DOUBLE_EQ(t.momentum, 0.9) << "ladder-train's default momentum";
  EXPECT_TRUE(scale[1].diverged);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[0].find("trial 2: failed"), std::string::npos) << notes[0];
  EXPECT_NE(notes[1].find("trial 3"), std::string::npos) << notes[1];
}

TEST(PromotePlan, HeroCommandPutsThePlansScheduleIntoTheBestTrialsCommand) {
  auto best = MakeTrial(0, 64, 0.1, {1.0, 0.5, 0.3, 0.25}, "sgd");
  for (const char* w : {"--curvature-every", "20", "--curvature-rows=512", "--seed", "3"}) best.add_command(w);
  std::vector<std::string> notes;
  auto scale = ScaleTrialsFrom(v1::Search{}, {best}, &notes);
  search::ScalePlan plan;
  plan.global_batch = 1024;
  plan.ramp = {{0, 256}, {100, 512}, {200, 1024}};
  plan.peak_lr.value = 0.8;
  plan.warmup_steps = 50;
  plan.decay = "cosine";
  plan.optimizer = "lars";
  plan.steps = 1000;
  std::string error;
  auto argv = HeroCommand(best, scale[0], plan, {4, 2, ""}, &error);
  ASSERT_EQ(error, "");
  auto value = [&](const std::string& flag) {
    for (size_t i = 0; i + 1 < argv.size(); ++i) {
      if (argv[i] == flag) return argv[i + 1];
    }
    return std::string("<absent>");
  };
  EXPECT_EQ(value("--lr"), "0.8");
  EXPECT_EQ(value("--batch-size"), "32") << "256 over 4 nodes x 2 ranks";
  EXPECT_EQ(value("--optimizer"), "lars");
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "--optimizer=sgd"), 0) << "the old spelling is replaced";
  EXPECT_EQ(value("--batch-ramp"), "100:2,200:4");
  EXPECT_EQ(value("--max-steps"), "1000");
  EXPECT_EQ(value("--warmup-steps"), "50");
  // The trial saw 40 steps x 64 = 2560 examples in 4 epochs: 640 per epoch; 1000 x 1024 needs 1600 (+1).
  EXPECT_EQ(value("--epochs"), "1601");
  EXPECT_EQ(value("--checkpoint"), "{checkpoint_dir}/hero.pt");
  EXPECT_EQ(argv.back(), "--resume");
  EXPECT_EQ(value("--seed"), "3") << "the trial's other options stay";
  for (const auto& a : argv) {
    EXPECT_EQ(a.find("--curvature"), std::string::npos) << "the fit's curvature measurement is not the hero's: " << a;
  }
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "20"), 0) << "nor its value";
  plan.ramp = {{0, 100}};
  HeroCommand(best, scale[0], plan, {4, 2, ""}, &error);
  EXPECT_NE(error.find("does not split over 8 ranks"), std::string::npos) << error;
}

// A sweep whose warmup is a share of each run (--warmup-fraction): the trial's warmup in steps is that share of the
// steps it ran, and the hero run's command carries the plan's warmup in steps alone (the trainer refuses both).
TEST(PromotePlan, AWarmupFractionIsReadAsStepsAndTheHeroRunGetsThePlansSteps) {
  v1::Trial t = MakeTrial(0, 64, 0.1, {1.0, 0.5, 0.3, 0.25}, "sgd");
  auto* cmd = t.mutable_command();
  for (int i = 0; i + 1 < cmd->size(); ++i) {
    if (cmd->Get(i) == "--warmup-steps") *cmd->Mutable(i) = "--warmup-fraction", *cmd->Mutable(i + 1) = "0.25";
  }
  std::vector<std::string> notes;
  auto scale = ScaleTrialsFrom(v1::Search{}, {t}, &notes);
  ASSERT_EQ(scale.size(), 1u);
  EXPECT_EQ(scale[0].warmup_steps, 10) << "a quarter of its 40 steps";
  search::ScalePlan plan;
  plan.global_batch = 1024, plan.ramp = {{0, 1024}}, plan.peak_lr.value = 0.8, plan.warmup_steps = 70;
  plan.decay = "cosine", plan.optimizer = "sgd", plan.steps = 1000;
  std::string error;
  auto argv = HeroCommand(t, scale[0], plan, {1, 1, ""}, &error);
  ASSERT_EQ(error, "");
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "--warmup-fraction"), 0);
  const auto it = std::find(argv.begin(), argv.end(), "--warmup-steps");
  ASSERT_NE(it, argv.end());
  EXPECT_EQ(*std::next(it), "70");
}

TEST(PromotePlan, LiveBandFollowsTheNearOptimalCurvesAndEndsAtThePredictedFinalLoss) {
  std::vector<std::string> notes;
  auto scale = ScaleTrialsFrom(v1::Search{},
                               {MakeTrial(0, 64, 0.1, {1.0, 0.5, 0.3, 0.20}, "sgd"),
                                MakeTrial(1, 64, 0.2, {1.2, 0.6, 0.35, 0.22}, "sgd"),
                                MakeTrial(2, 64, 0.9, {2.0, 2.0, 2.0, 2.0}, "sgd")},  // far from optimal: left out
                               &notes);
  search::ScalePlan plan;
  plan.steps = 400;
  plan.final_loss = {0.15, 0.10, 0.18};
  auto band = LiveBand(plan, scale);
  ASSERT_EQ(band.size(), 8u) << "fractions before the curves' first point (0.25 of the run) are left out";
  EXPECT_EQ(band.back().step, 400);
  EXPECT_DOUBLE_EQ(band.back().loss.lo, 0.10);
  EXPECT_DOUBLE_EQ(band.back().loss.hi, 0.18);
  // At half the run: the curves are at 0.5 and 0.6, moved by the end offsets (0.10 - 0.20, 0.18 - 0.22).
  EXPECT_EQ(band[2].step, 200);
  EXPECT_NEAR(band[2].loss.lo, 0.5 - 0.10, 1e-12);
  EXPECT_NEAR(band[2].loss.hi, 0.6 - 0.04, 1e-12);
}

// The plan JSON carries what the dashboard's extrapolation view draws: the swept optima with their intervals,
// each law's curve from the smallest swept batch to past the target, the target's interval, an empty probe list.
TEST(PromotePlan, PlanJsonCarriesTheExtrapolationTheDashboardDraws) {
  // Three batches, five LRs each, a loss whose best LR grows as B^0.7 from 0.05 at batch 16.
  std::vector<search::ScaleTrial> trials;
  for (int64_t b : {16, 32, 64}) {
    const double best = 0.05 * std::pow(b / 16.0, 0.7);
    for (int k = -2; k <= 2; ++k) {
      search::ScaleTrial t;
      t.id = "trial " + std::to_string(trials.size());
      t.global_batch = b;
      t.peak_lr = best * std::pow(2.0, 0.5 * k + 0.1);
      t.steps = 4096 / b;
      t.final_loss = 0.3 + 0.05 * std::pow(std::log2(t.peak_lr / best), 2) + 0.001 * static_cast<double>(b);
      t.curve = {{t.steps / 2, t.final_loss + 0.2}, {t.steps, t.final_loss}};
      trials.push_back(t);
    }
  }
  auto report = search::FitScaling(trials);
  ASSERT_TRUE(report.ok()) << report.error;
  search::PlanTarget target;
  target.global_batch = 512;
  auto plan = search::PlanRun(*report.value, trials, target);
  ASSERT_TRUE(plan.ok()) << plan.error;
  auto j = PlanJson(*plan.value, {}, HeroShape{}, false, &*report.value);
  EXPECT_EQ(j["global_batch"], 512) << "the old keys stay";
  const auto& x = j["extrapolation"];
  ASSERT_TRUE(x.is_object()) << j.dump();
  ASSERT_EQ(x["swept"].size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const auto& b = report.value->best_lr[i];
    EXPECT_EQ(x["swept"][i]["batch"], b.global_batch);
    EXPECT_DOUBLE_EQ(x["swept"][i]["lr"][0].get<double>(), b.lr.value);
    EXPECT_DOUBLE_EQ(x["swept"][i]["lr"][1].get<double>(), b.lr.lo);
    EXPECT_DOUBLE_EQ(x["swept"][i]["lr"][2].get<double>(), b.lr.hi);
  }
  EXPECT_EQ(x["target"]["batch"], 512);
  EXPECT_EQ(x["target"]["lr"], j["peak_lr"]);
  EXPECT_EQ(x["target"]["rule"], j["lr_rule"]);
  EXPECT_TRUE(x["probes"].is_array() && x["probes"].empty());
  EXPECT_TRUE(x["stability_edge"].is_null()) << "no trial measured its sharpness";
  std::set<std::string> names;
  int chosen = 0;
  for (const auto& law : x["laws"]) {
    names.insert(law["name"].get<std::string>());
    chosen += law["chosen"].get<bool>();
    ASSERT_EQ(law["points"].size(), static_cast<size_t>(kCurvePoints)) << law.dump();
    EXPECT_DOUBLE_EQ(law["points"].front()[0].get<double>(), 16);
    EXPECT_NEAR(law["points"].back()[0].get<double>(), 1024, 1e-9) << "past the target: twice its batch";
    for (const auto& p : law["points"]) EXPECT_GT(p[1].get<double>(), 0) << law["name"];
    if (law["chosen"].get<bool>()) {
      EXPECT_EQ(law["name"], j["lr_rule"]);
      EXPECT_NEAR(law["at_target"][0].get<double>(), j["peak_lr"][0].get<double>(), 1e-12);
    }
  }
  EXPECT_EQ(chosen, 1) << x["laws"].dump();
  for (const char* n : {"linear", "sqrt", "lr_fit"}) EXPECT_TRUE(names.count(n)) << n << ": " << x["laws"].dump();
  EXPECT_TRUE(names.count("surface_fit") || names.count("power_fit")) << x["laws"].dump();
  // The linear rule is a line of slope 1 through the anchor.
  for (const auto& law : x["laws"]) {
    if (law["name"] != "linear") continue;
    const auto& p = law["points"];
    EXPECT_NEAR(p.back()[1].get<double>() / p.front()[1].get<double>(), 1024.0 / 16, 1e-6);
  }
}

// After a probe the plan's LR is the climb's (lr_rule climb): the climb's laws are drawn as the climb predicts,
// anchored on the probe past its batch, and the heaviest consistent one is the plan's own, drawn thick.
TEST(PromotePlan, AfterAProbeTheClimbsLawsAreDrawnAnchoredAndTheHeaviestIsThePlans) {
  std::vector<search::ScaleTrial> sweep, probe;
  auto run = [](int64_t b, double lr, double best, int64_t seed) {
    search::ScaleTrial t;
    t.id = "b" + std::to_string(b) + "-" + std::to_string(lr) + "-" + std::to_string(seed);
    t.global_batch = b, t.peak_lr = lr, t.steps = 4096 / b, t.seed = seed;
    t.final_loss = 0.3 + 0.05 * std::pow(std::log2(lr / best), 2) * (1 + 0.02 * static_cast<double>(seed));
    t.curve = {{t.steps / 2, t.final_loss + 0.2}, {t.steps, t.final_loss}};
    return t;
  };
  for (int64_t b : {16, 32, 64}) {
    for (int k = -2; k <= 2; ++k) {
      for (int64_t seed : {1, 2}) sweep.push_back(run(b, 0.05 * std::pow(b / 16.0, 0.7) * std::exp2(0.5 * k), 0.05 * std::pow(b / 16.0, 0.7), seed));
    }
  }
  // At 512 the best LR is half of what the sweep's law says (it bends past the sweep).
  const double best512 = 0.5 * 0.05 * std::pow(32.0, 0.7);
  for (int k = -1; k <= 1; ++k) {
    for (int64_t seed : {3, 4}) probe.push_back(run(512, best512 * std::exp2(0.5 * k), best512, seed));
  }
  search::Probe last;
  last.global_batch = 512, last.micro_batches = 8, last.lrs = {best512 / std::sqrt(2.0), best512, best512 * std::sqrt(2.0)};
  auto climb = search::NextProbe(sweep, probe, last, {1024});
  ASSERT_TRUE(climb.ok()) << climb.error;
  ClimbVerdict verdict;
  verdict.result = *climb.value;
  verdict.runs = {ProbeRun{512, 8, last.lrs, {1, 2, 3}, best512}};
  std::vector<search::ScaleTrial> all = sweep;
  all.insert(all.end(), probe.begin(), probe.end());
  auto report = search::FitScaling(all);
  ASSERT_TRUE(report.ok()) << report.error;
  search::PlanTarget target;
  target.global_batch = 1024;
  auto plan = search::PlanRun(*report.value, all, target);
  ASSERT_TRUE(plan.ok()) << plan.error;
  search::TakeClimbLr(*plan.value, *verdict.At(), 1);
  ASSERT_EQ(plan.value->lr_rule, "climb");
  auto j = PlanJson(*plan.value, {}, HeroShape{}, false, &*report.value, &verdict);
  const auto& x = j["extrapolation"];
  const search::LawSet& set = verdict.result->laws;
  ASSERT_EQ(set.anchor_batch, 512);
  int chosen = 0;
  const search::LawFit* heaviest = nullptr;
  for (const auto& l : set.laws) {
    if (l.consistent && (!heaviest || l.weight > heaviest->weight)) heaviest = &l;
  }
  ASSERT_NE(heaviest, nullptr);
  for (const auto& law : x["laws"]) {
    chosen += law["chosen"].get<bool>();
    if (law["source"] != "climb") {
      EXPECT_FALSE(law["chosen"].get<bool>()) << law["name"];
      continue;
    }
    const auto* fit = &*std::find_if(set.laws.begin(), set.laws.end(), [&](const auto& l) { return l.name == law["name"]; });
    const auto& end = law["points"].back();
    EXPECT_NEAR(std::log2(end[1].get<double>()), set.FitLog2(*fit, end[0].get<double>()), 1e-9) << law["name"];
    EXPECT_EQ(law["chosen"].get<bool>(), fit == heaviest) << law["name"];
  }
  EXPECT_EQ(chosen, 1) << x["laws"].dump();
  const double shift = set.FitLog2(*heaviest, 1024) - heaviest->Log2Lr(1024);
  EXPECT_LT(shift, -0.2) << "the probe found the bend: the anchor moves the law down past 512";
}

}  // namespace
}  // namespace ladder::cli
