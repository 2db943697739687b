// The climb (search/scaling/climb.h, probe_plan.h) with the noisy quadratic model (bench/noisy_quadratic.h) as the
// ground truth: its sweeps and probes are simulated (bench/nqm_sweep.h), its oracle says what the right LR was.
#include "search/scaling/climb.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "bench/nqm_sweep.h"

namespace ladder::search {
namespace {

using bench::NoisyQuadratic;

NoisyQuadratic Task(double alpha, double noise, int64_t examples) {
  NoisyQuadratic q;
  q.alpha = alpha, q.noise = noise, q.examples = examples;
  return q;
}

std::vector<ScaleTrial> Sweep(const NoisyQuadratic& q, int nodes = 1) {
  bench::NqmSweepPlan plan;
  plan.first_guess_log2 = std::round(std::log2(q.Oracle(16).lr));
  auto trials = bench::SimulateSweep(q, plan);
  for (ScaleTrial& t : trials) t.nodes = nodes;
  return trials;
}

ProbeRunner Runner(const NoisyQuadratic& q, std::vector<Probe>* seen = nullptr) {
  auto index = std::make_shared<uint64_t>(0);
  return [q, seen, index](const Probe& p) {
    if (seen) seen->push_back(p);
    if (!p.extension) ++*index;
    return bench::SimulateProbe(q, p, 100 + *index);
  };
}

double Err(const LrPosterior& p, const NoisyQuadratic& q) {
  return std::abs(p.log2_lr - std::log2(q.Oracle(p.global_batch).lr));
}

// Best LR grows about linearly across the sweep (16..256) and bends past it: from the sweep alone the laws cannot
// say where it stops (its 90% interval spans over 2 octaves); probes at 4,096 pin it to within a third of an
// octave and a 90% interval under one octave wide.
TEST(Climb, ATaskSweptBelowItsBendIsFlaggedAndProbesSettleIt) {
  const NoisyQuadratic q = Task(0.9, 30, 524288);
  const auto sweep = Sweep(q);
  auto r = Climb(sweep, {4096, 8192}, Runner(q));
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_GE(r.value->probes.size(), 1u);
  for (const TargetOutcome& t : r.value->targets) {
    SCOPED_TRACE(t.global_batch);
    EXPECT_TRUE(t.flagged) << t.flag_why;
    EXPECT_GT(t.before.hi90 - t.before.lo90, 2.0);  // the sweep alone cannot place the bend
    EXPECT_LT(Err(t.after, q), 0.35);  // two one-seed probes: one seed's optimum scatters by about half an octave
    EXPECT_LT(t.after.hi90 - t.after.lo90, 1.0);
    const double x = std::log2(q.Oracle(t.global_batch).lr);
    EXPECT_TRUE(x >= t.after.lo90 && x <= t.after.hi90) << t.after.lo90 << " " << t.after.hi90 << " " << x;
  }
}

TEST(Climb, ProbesStayWithinTheBudgetOnTheSweepsOwnNodes) {
  const NoisyQuadratic q = Task(1.4, 1, 1 << 20);
  const auto sweep = Sweep(q, 4);
  std::vector<Probe> seen;
  auto r = Climb(sweep, {4096, 8192}, Runner(q, &seen));
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_FALSE(seen.empty());
  EXPECT_LE(r.value->probe_node_hours, 0.1 * r.value->sweep_node_hours + 1e-9);
  EXPECT_NEAR(r.value->sweep_node_hours, static_cast<double>(sweep.size()), 1.0);  // epochs budget: ~1 run each
  for (const Probe& p : seen) {
    EXPECT_EQ(p.nodes, 4);
    EXPECT_EQ(p.micro_batches, p.global_batch / 256);
    EXPECT_LE(p.global_batch, p.target_batch);
    EXPECT_GT(p.global_batch, 256);
  }
  size_t runs = 0;
  for (const Probe& p : seen) runs += p.lrs.size();
  EXPECT_EQ(r.value->probe_trials.size(), runs);
}

TEST(Climb, WithoutARunnerTheUndecidedTextNamesTheProbeThatDecides) {
  const NoisyQuadratic q = Task(1.4, 1, 1 << 20);
  auto r = Climb(Sweep(q), {4096}, nullptr);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_FALSE(r.value->decided);
  EXPECT_TRUE(r.value->probes.empty());
  ASSERT_TRUE(r.value->next_probe.has_value());
  const Probe& p = *r.value->next_probe;
  const std::string& s = r.value->undecided;
  EXPECT_EQ(s.rfind("the sweep cannot ", 0), 0u) << s;
  EXPECT_NE(s.find("at batch 4096"), std::string::npos) << s;
  EXPECT_NE(s.find("one probe at batch " + std::to_string(p.global_batch) + ", learning rates {"), std::string::npos)
      << s;
  EXPECT_NE(s.find("node-hours, decides"), std::string::npos) << s;
  EXPECT_EQ(p.lrs.size(), 3u);
  EXPECT_LT(p.lrs.front(), p.lrs.back());
}

TEST(Climb, TheSameSweepAndProbesGiveTheSameClimb) {
  const NoisyQuadratic q = Task(0.9, 30, 524288);
  const auto sweep = Sweep(q);
  auto a = Climb(sweep, {4096}, Runner(q));
  auto b = Climb(sweep, {4096}, Runner(q));
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a.value->probes.size(), b.value->probes.size());
  for (size_t i = 0; i < a.value->probes.size(); ++i) EXPECT_EQ(a.value->probes[i].lrs, b.value->probes[i].lrs);
  EXPECT_EQ(a.value->targets[0].after.log2_lr, b.value->targets[0].after.log2_lr);
  EXPECT_EQ(a.value->targets[0].after.hi90, b.value->targets[0].after.hi90);
  EXPECT_EQ(a.value->undecided, b.value->undecided);
}

TEST(Climb, ATargetInsideTheSweepHasNoProbeBatchAndSaysSo) {
  const NoisyQuadratic q = Task(0.9, 30, 524288);
  int calls = 0;
  auto r = Climb(Sweep(q), {128}, [&](const Probe&) { ++calls; return std::vector<ScaleTrial>{}; });
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(calls, 0);
  EXPECT_LT(Err(r.value->targets[0].after, q), 0.3);
  // The laws agree at 128, but the model's basin is sharp enough that the sweep's own noise keeps the predicted
  // p80 regret above 1%: undecided, and no batch between the sweep and the target to probe.
  EXPECT_FALSE(r.value->decided);
  EXPECT_FALSE(r.value->next_probe.has_value());
  EXPECT_EQ(r.value->undecided.rfind("the sweep cannot pin the learning rate at batch 128 (80% interval [", 0), 0u)
      << r.value->undecided;
  EXPECT_NE(r.value->undecided.find("no probe batch lies between the sweep and the target"), std::string::npos);
}

TEST(Climb, NoBudgetRunsNoProbe) {
  const NoisyQuadratic q = Task(1.4, 1, 1 << 20);
  ClimbOptions o;
  o.probe_budget = 0;
  int calls = 0;
  auto r = Climb(Sweep(q), {4096}, [&](const Probe&) { ++calls; return std::vector<ScaleTrial>{}; }, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(calls, 0);
  EXPECT_FALSE(r.value->decided);
  EXPECT_TRUE(r.value->next_probe.has_value());
}

// A broad, clean, linear surface (synthetic, not the model: its basin is wide, so a small spread costs little).
TEST(Climb, ALinearSurfaceWhoseLawsAgreeIsNotFlagged) {
  std::vector<ScaleTrial> trials;
  for (int64_t b : {16, 32, 64, 128, 256}) {
    const double xs = -8 + std::log2(b / 16.0);
    for (int seed = 1; seed <= 3; ++seed) {
      for (int i = -4; i <= 4; ++i) {
        ScaleTrial t;
        t.id = std::to_string(b) + "/" + std::to_string(i) + "/" + std::to_string(seed);
        t.global_batch = b, t.seed = seed, t.peak_lr = std::exp2(xs + 0.5 * i);
        t.final_loss = (1 + 0.01 * seed) * (1 + 0.02 * 0.25 * i * i) + 1e-5 * ((i * 7 + seed * 3) % 5 - 2);
        trials.push_back(t);
      }
    }
  }
  auto r = Climb(trials, {1024}, nullptr);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_FALSE(r.value->targets[0].flagged) << r.value->targets[0].flag_why;
  EXPECT_TRUE(r.value->decided);
  EXPECT_NEAR(r.value->targets[0].after.log2_lr, -2.0, 0.1);
  EXPECT_TRUE(r.value->undecided.empty());
}

TEST(ProbePlan, AProbeWhoseBestLrIsItsLastIsExtendedUntilBracketed) {
  Probe last;
  last.global_batch = 1024, last.lrs = {0.25, 0.5, 1.0};
  auto run = [&](double lr, double loss) {
    ScaleTrial t;
    t.id = std::to_string(lr), t.global_batch = 1024, t.peak_lr = lr, t.final_loss = loss, t.seed = 5;
    t.diverged = !std::isfinite(loss);
    return t;
  };
  std::vector<ScaleTrial> trials = {run(0.25, 3), run(0.5, 2), run(1.0, 1)};
  auto up = ExtendProbe(trials, last, {});
  ASSERT_TRUE(up.has_value());
  EXPECT_TRUE(up->extension);
  ASSERT_EQ(up->lrs.size(), 1u);
  EXPECT_DOUBLE_EQ(up->lrs[0], 2.0);
  trials.push_back(run(2.0, INFINITY));  // diverged above: bracketed
  EXPECT_FALSE(ExtendProbe(trials, last, {}).has_value());
  std::vector<ScaleTrial> low = {run(0.25, 1), run(0.5, 2), run(1.0, 3)};
  auto down = ExtendProbe(low, last, {});
  ASSERT_TRUE(down.has_value());
  EXPECT_DOUBLE_EQ(down->lrs[0], 0.125);
}

TEST(ProbePlan, AnExtensionGoesNoHigherThanTheStabilityEdgesCap) {
  Probe last;
  last.global_batch = 1024, last.lrs = {0.25, 0.5, 1.0};
  auto run = [&](double lr, double loss) {
    ScaleTrial t;
    t.id = std::to_string(lr), t.global_batch = 1024, t.peak_lr = lr, t.final_loss = loss, t.seed = 5;
    return t;
  };
  const std::vector<ScaleTrial> trials = {run(0.25, 3), run(0.5, 2), run(1.0, 1)};
  auto up = ExtendProbe(trials, last, {}, std::log2(1.5));  // the cap lies half an octave short of the next step
  ASSERT_TRUE(up.has_value());
  EXPECT_NEAR(up->lrs[0], 1.5, 1e-12);
  // The best LR at the cap, the next below it an octave lower: the gap is halved (a cliff lies just under the edge).
  auto mid = ExtendProbe(trials, last, {}, std::log2(1.02));
  ASSERT_TRUE(mid.has_value());
  EXPECT_NEAR(mid->lrs[0], std::sqrt(0.5), 1e-12);
  const std::vector<ScaleTrial> fine = {run(0.7, 3), run(0.85, 2), run(1.0, 1)};  // a quarter octave apart
  EXPECT_FALSE(ExtendProbe(fine, last, {}, std::log2(1.02)).has_value());
}

// A probe whose LRs all lie below its batch's optimum (its best LR its highest: the budget ran out before an
// extension) measured a bound, not the optimum: the laws are not pinned to its top LR; the posterior keeps the
// oracle inside its 90% interval, the target stays undecided, and the next step extends the probe upward.
TEST(Climb, AProbeThatDidNotBracketItsOptimumIsABoundNotAMeasurement) {
  const NoisyQuadratic q = Task(0.9, 30, 524288);
  const auto sweep = Sweep(q);
  const double truth = std::log2(q.Oracle(4096).lr);
  Probe probe;
  probe.global_batch = 4096, probe.micro_batches = 16, probe.target_batch = 4096;
  probe.lrs = {std::exp2(truth - 3), std::exp2(truth - 2.5), std::exp2(truth - 2)};
  const auto trials = bench::SimulateProbe(q, probe, 101);
  double bound = 0;
  ASSERT_EQ(Unbracketed(trials, 4096, &bound), 1) << "the probe's best LR must be its highest";
  EXPECT_DOUBLE_EQ(bound, truth - 2);
  auto r = NextProbe(sweep, trials, probe, {4096});
  ASSERT_TRUE(r.ok()) << r.error;
  const TargetOutcome& t = r.value->targets[0];
  EXPECT_FALSE(t.decided);
  EXPECT_EQ(r.value->laws.censored, 1);
  EXPECT_EQ(r.value->laws.censor_batch, 4096);
  EXPECT_TRUE(truth >= t.after.lo90 && truth <= t.after.hi90) << t.after.lo90 << " " << t.after.hi90 << " " << truth;
  EXPECT_GT(t.after.log2_lr, bound - 0.25) << "a bound from below does not pull the prediction under it";
  ASSERT_TRUE(r.value->next_probe.has_value());
  EXPECT_TRUE(r.value->next_probe->extension);
  EXPECT_GT(r.value->next_probe->lrs.front(), std::exp2(bound));
}

// Past a censored probe the posterior is one-sided: the bound cut the draws below it off, and their median sits
// near the bound. The plan's LR is the one with the least expected regret under the basin's quadratic, the draws'
// mean, not their median.
TEST(Climb, PastACensoredProbeThePlanTakesTheLRWithTheLeastExpectedRegret) {
  const NoisyQuadratic q = Task(0.9, 30, 524288);
  Probe probe;
  probe.global_batch = 4096, probe.micro_batches = 16, probe.target_batch = 4096;
  const double truth = std::log2(q.Oracle(4096).lr);
  probe.lrs = {std::exp2(truth - 3), std::exp2(truth - 2.5), std::exp2(truth - 2)};
  // No sharpness measured (as for Adam here): no stability edge, whose own decision rule (EdgeDecision) would set
  // the LR.
  auto no_edge = [](std::vector<ScaleTrial> trials) {
    for (ScaleTrial& t : trials) t.sharpness = 0;
    return trials;
  };
  auto r = NextProbe(no_edge(Sweep(q)), no_edge(bench::SimulateProbe(q, probe, 101)), probe, {4096});
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_EQ(r.value->laws.censored, 1);
  ASSERT_FALSE(std::isfinite(r.value->laws.cap_log2));
  const LawSet& set = r.value->laws;
  std::vector<std::pair<double, double>> draws;
  for (const MixtureDraw& d : Mixture(set)) {
    double x = DrawLog2(set, d, 4096);
    if (std::isfinite(set.edge_log2)) x = std::min(x, set.edge_log2);
    draws.push_back({x, d.weight});
  }
  auto expected_regret = [&](double at) {
    double sum = 0, total = 0;
    for (const auto& [x, w] : draws) sum += w * (x - at) * (x - at), total += w;
    return sum / total;
  };
  const double plan = r.value->targets[0].after.log2_lr, median = WeightedQuantile(draws, 0.5);
  EXPECT_GT(std::abs(plan - median), 0.05) << "the draws the bound left are skewed";
  EXPECT_LT(expected_regret(plan), expected_regret(median));
  EXPECT_LT(expected_regret(plan), expected_regret(plan + 0.02));
  EXPECT_LT(expected_regret(plan), expected_regret(plan - 0.02));
}

TEST(ProbePlan, UnbracketedReadsTheSeedMeanBestLrAndADivergedLrAboveClosesIt) {
  auto run = [](double lr, double loss, int64_t seed) {
    ScaleTrial t;
    t.global_batch = 1024, t.peak_lr = lr, t.final_loss = loss, t.seed = seed, t.diverged = !std::isfinite(loss);
    return t;
  };
  double bound = 0;
  // Seed 1 alone would put the best at 0.5; the mean over both seeds puts it at 1.0, the highest: unbracketed.
  std::vector<ScaleTrial> t = {run(0.25, 3, 1), run(0.5, 1.9, 1), run(1.0, 2.0, 1),
                               run(0.25, 3, 2), run(0.5, 2.2, 2), run(1.0, 1.5, 2)};
  EXPECT_EQ(Unbracketed(t, 1024, &bound), 1);
  EXPECT_DOUBLE_EQ(bound, 0.0);
  t.push_back(run(2.0, INFINITY, 1));
  EXPECT_EQ(Unbracketed(t, 1024, &bound), 0);
  EXPECT_EQ(Unbracketed({run(0.25, 1, 1), run(0.5, 2, 1)}, 1024, &bound), -1);
  EXPECT_DOUBLE_EQ(bound, -2.0);
  EXPECT_EQ(Unbracketed({run(0.25, 1, 1)}, 1024, &bound), 0);
  EXPECT_EQ(Unbracketed(t, 512, &bound), 0);
}

// The plan takes the climb's LR once probes ran: its value and 90% interval, the rule named, and the fit's peak_lr
// lines replaced (a stability-edge line no longer says the old LR was above the edge).
TEST(Climb, ThePlanTakesTheClimbsPosteriorAfterProbes) {
  ScalePlan plan;
  plan.global_batch = 8192, plan.peak_lr = {1.7, 0.9, 3.1}, plan.lr_rule = "surface_fit", plan.stability_edge = 1.2;
  plan.sources = {"peak_lr: surface_fit 1.7", "peak_lr uncertainty: its interval spans 1.8 octaves",
                  "stability edge: 2(1 + momentum)/lambda_max = 1.2; the peak LR is 1.42x above it", "warmup: 10%"};
  TargetOutcome t;
  t.global_batch = 8192, t.decided = true;
  t.after.log2_lr = std::log2(0.59), t.after.lo90 = std::log2(0.5), t.after.hi90 = std::log2(0.7);
  t.after.lo80 = std::log2(0.52), t.after.hi80 = std::log2(0.66), t.after.regret_p80 = 0.003;
  t.laws = {{"power", 0.6, 0.7, true}, {"saturating", 0.55, 0.3, true}, {"surge", 2.0, 0.0, false}};
  TakeClimbLr(plan, t, 2);
  EXPECT_NEAR(plan.peak_lr.value, 0.59, 1e-12);
  EXPECT_NEAR(plan.peak_lr.lo, 0.5, 1e-12);
  EXPECT_NEAR(plan.peak_lr.hi, 0.7, 1e-12);
  EXPECT_EQ(plan.lr_rule, "climb");
  EXPECT_NE(plan.lr_rule_why.find("2 probes"), std::string::npos) << plan.lr_rule_why;
  EXPECT_NE(plan.lr_rule_why.find("power, saturating)"), std::string::npos) << plan.lr_rule_why;
  EXPECT_NE(plan.lr_rule_why.find("the default fit said 1.7"), std::string::npos) << plan.lr_rule_why;
  std::string all;
  for (const auto& s : plan.sources) all += s + "\n";
  EXPECT_EQ(all.find("surface_fit"), std::string::npos) << all;
  EXPECT_EQ(all.find("uncertainty"), std::string::npos) << all;  // 0.49 octave wide now
  EXPECT_EQ(all.find("above it"), std::string::npos) << all;
  EXPECT_NE(all.find("peak_lr: climb 0.59 [0.5, 0.7] (90%)"), std::string::npos) << all;
  EXPECT_NE(all.find("warmup: 10%"), std::string::npos) << all;
}

TEST(ProbePlan, SweepNodeHoursCountRunsByNodesAndCompute) {
  ScaleTrial a, b;
  a.global_batch = 256, a.steps = 100, a.nodes = 2;  // the reference run: 1
  b.global_batch = 64, b.steps = 400, b.nodes = 1;   // same examples, half the nodes: 0.5
  EXPECT_DOUBLE_EQ(SweepNodeHours({a, b}, 2.0), 3.0);
}

}  // namespace
}  // namespace ladder::search

namespace ladder::search {
namespace {

// Stepping the climb (NextProbe, the caller running each probe) takes the same probes, extensions included, and
// ends where Climb does.
TEST(Climb, SteppingWithNextProbeTakesTheSameProbesAsTheLoop) {
  const NoisyQuadratic q = Task(0.9, 30, 524288);
  const auto sweep = Sweep(q);
  std::vector<Probe> looped;
  auto whole = Climb(sweep, {4096, 8192}, Runner(q, &looped));
  ASSERT_TRUE(whole.ok()) << whole.error;
  ASSERT_FALSE(looped.empty());
  ProbeRunner run = Runner(q);
  std::vector<ScaleTrial> probe_trials;
  std::optional<Probe> last;
  std::vector<Probe> stepped;
  for (int i = 0; i < 20; ++i) {
    auto step = NextProbe(sweep, probe_trials, last, {4096, 8192});
    ASSERT_TRUE(step.ok()) << step.error;
    const auto& next = step.value->next_probe;
    if (!next || (step.value->decided && !next->extension) ||
        step.value->probe_node_hours + next->node_hours > step.value->budget_node_hours + 1e-9) {
      EXPECT_EQ(step.value->decided, whole.value->decided);
      EXPECT_NEAR(step.value->probe_node_hours, whole.value->probe_node_hours, 1e-9);
      for (size_t t = 0; t < 2; ++t) {
        EXPECT_NEAR(step.value->targets[t].after.log2_lr, whole.value->targets[t].after.log2_lr, 1e-9);
      }
      break;
    }
    stepped.push_back(*next);
    if (!next->extension) last = *next;
    for (ScaleTrial& t : run(*next)) probe_trials.push_back(std::move(t));
  }
  ASSERT_EQ(stepped.size(), looped.size());
  for (size_t i = 0; i < looped.size(); ++i) {
    EXPECT_EQ(stepped[i].global_batch, looped[i].global_batch) << i;
    EXPECT_EQ(stepped[i].extension, looped[i].extension) << i;
    EXPECT_EQ(stepped[i].lrs, looped[i].lrs) << i;
  }
}

ScaleTrial ProbeRun(int64_t batch, double lr, double loss, int64_t seed = 7) {
  ScaleTrial t;
  t.id = std::to_string(batch) + "/" + std::to_string(lr), t.global_batch = batch, t.peak_lr = lr;
  t.final_loss = loss, t.seed = seed, t.diverged = !std::isfinite(loss);
  return t;
}

// A sweep's largest batch (256) with a basin about lr 0.25: ln loss rises 0.07 per octave² (teacher_lowrank's).
std::vector<ScaleTrial> SweepBasin() {
  std::vector<ScaleTrial> trials;
  for (double x = -4; x <= -1; x += 0.5) trials.push_back(ProbeRun(256, std::exp2(x), 0.08 * std::exp(0.07 * (x + 2) * (x + 2))));
  return trials;
}

// The full teacher_lowrank task's first probe at 4,096 (its losses as measured): every LR past the cliff ends at the
// label marginals' loss, 2.1893, without a NaN. Read as losses its middle LR is the best, a bracketed optimum 2.5
// octaves above the truth (0.37); marked collapsed, the probe is extended below its lowest LR.
TEST(ProbePlan, AProbeWhoseLrsAllEndOnOnePlateauCollapsedAndIsExtendedBelowIt) {
  std::vector<ScaleTrial> trials = SweepBasin();
  trials.push_back(ProbeRun(4096, 1.553, 2.18932772, 100));
  trials.push_back(ProbeRun(4096, 2.196, 2.18931866, 100));
  trials.push_back(ProbeRun(4096, 3.105, 2.1893754, 100));
  const std::vector<ScaleTrial> seen = CollapsedAsDiverged(trials, 256);
  int collapsed = 0;
  for (const ScaleTrial& t : seen) collapsed += t.global_batch == 4096 && t.diverged;
  EXPECT_EQ(collapsed, 3);
  Probe last;
  last.global_batch = 4096, last.lrs = {1.553, 2.196, 3.105};
  ProbeOptions o;
  o.sweep_largest_batch = 256;
  auto down = ExtendProbe(trials, last, o);
  ASSERT_TRUE(down.has_value()) << "a collapsed probe read as bracketed";
  ASSERT_EQ(down->lrs.size(), 1u);
  EXPECT_NEAR(std::log2(down->lrs[0]), std::log2(1.553) - 0.5, 1e-9);
  // A run below the cliff learns: the collapsed LRs stay failures, and the probe goes on down.
  trials.push_back(ProbeRun(4096, down->lrs[0], 1.4057, 100));
  auto further = ExtendProbe(trials, last, o);
  ASSERT_TRUE(further.has_value());
  EXPECT_LT(further->lrs[0], down->lrs[0]);
}

// A flat but real basin (teacher_noisy's probe at 4,096: 0.5% over an octave) is not a plateau.
TEST(ProbePlan, AFlatButRealBasinIsNotCollapsed) {
  std::vector<ScaleTrial> trials = SweepBasin();
  trials.push_back(ProbeRun(4096, 1.477, 2.00130105, 101));
  trials.push_back(ProbeRun(4096, 2.088, 1.99248207, 101));
  trials.push_back(ProbeRun(4096, 2.953, 1.99196613, 101));
  for (const ScaleTrial& t : CollapsedAsDiverged(trials, 256)) EXPECT_FALSE(t.diverged) << t.id;
  // No sweep basin to compare with (no sweep batch given): nothing is marked.
  std::vector<ScaleTrial> flat = {ProbeRun(4096, 1, 2.1893), ProbeRun(4096, 2, 2.1893), ProbeRun(4096, 4, 2.1893)};
  for (const ScaleTrial& t : CollapsedAsDiverged(flat, 0)) EXPECT_FALSE(t.diverged) << t.id;
}

// The ladder's rungs are 2-16× the sweep's largest batch; a target past the top rung is a candidate itself once
// that rung is settled (`measured`: the largest settled batch), never before; probe_target off keeps to the rungs.
TEST(ProbePlan, ATargetPastTheTopRungIsACandidateOnceTheRungIsSettled) {
  ProbeOptions o;
  EXPECT_EQ(CandidateBatches(256, 256, 8192, o), (std::vector<int64_t>{512, 1024, 2048, 4096}));
  EXPECT_EQ(CandidateBatches(256, 2048, 8192, o), (std::vector<int64_t>{512, 1024, 2048, 4096}));
  EXPECT_EQ(CandidateBatches(256, 4096, 8192, o), (std::vector<int64_t>{512, 1024, 2048, 4096, 8192}));
  EXPECT_EQ(CandidateBatches(256, 4096, 4096, o), (std::vector<int64_t>{512, 1024, 2048, 4096}));
  EXPECT_EQ(CandidateBatches(256, 4096, 8000, o), (std::vector<int64_t>{512, 1024, 2048, 4096}));  // no micro-batch
  ProbeOptions off = o;
  off.probe_target = false;
  EXPECT_EQ(CandidateBatches(256, 4096, 8192, off), (std::vector<int64_t>{512, 1024, 2048, 4096}));
}

}  // namespace
}  // namespace ladder::search
