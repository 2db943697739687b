// Stopping rules (ASHA, Hyperband, median stopping, PBT): decisions on hand-built report sequences whose
// outcome is known, both objective directions, and the restart contract (state = f(replayed calls)).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <variant>

#include "search/spec/spec_reader.h"
#include "search/stopping/stopping_rule.h"

namespace ladder::search {
namespace {

using Kind = TrialDecision::Kind;

StoppingOptions Asha(double r = 1, double big_r = 27, double eta = 3) {
  StoppingOptions o;
  o.type = StoppingRuleType::kAsha;
  o.min_resource = r;
  o.max_resource = big_r;
  o.reduction_factor = eta;
  return o;
}

// The value as written for minimizing; negated when the rule maximizes.
double V(double v, bool maximize) { return maximize ? -v : v; }

TEST(AshaTest, RungsAreGeometricBelowTheMaximum) {
  EXPECT_EQ(AshaRungs(Asha(1, 27, 3)), (std::vector<double>{1, 3, 9}));
  EXPECT_EQ(AshaRungs(Asha(1, 27, 3), 1), (std::vector<double>{3, 9}));
  EXPECT_EQ(AshaRungs(Asha(1, 20, 3)), (std::vector<double>{1, 3, 9}));
  EXPECT_EQ(AshaRungs(Asha(2, 100, 4)), (std::vector<double>{2, 8, 32}));
  EXPECT_EQ(MaxBrackets(Asha(1, 27, 3)), 4);  // floor(log_3 27) + 1, exact despite floating point
  EXPECT_EQ(MaxBrackets(Asha(1, 81, 3)), 5);
  EXPECT_EQ(MaxBrackets(Asha(1, 20, 3)), 3 + 1);
  EXPECT_EQ(MaxBrackets(Asha(1, 2, 3)), 2);
}

class AshaDirectionTest : public ::testing::TestWithParam<bool> {};

TEST_P(AshaDirectionTest, KeepsTheTopThirdOfEachRung) {
  const bool max = GetParam();
  auto s = MakeStoppingRule(Asha(), max);
  // Rung 0 (resource 1), eta 3: a trial goes on when fewer than ceil(n / 3) recorded values beat it.
  EXPECT_EQ(s->Report(0, 1, V(0.5, max)).kind, Kind::kContinue);  // n=1, keep 1
  TrialDecision d1 = s->Report(1, 1, V(0.7, max));                 // n=2, keep 1, one better
  EXPECT_EQ(d1.kind, Kind::kStop);
  EXPECT_NE(d1.reason.find("asha: rung 0 (epoch 1)"), std::string::npos) << d1.reason;
  EXPECT_NE(d1.reason.find("not in the top 1 of 2 values"), std::string::npos) << d1.reason;
  EXPECT_EQ(s->Report(2, 1, V(0.3, max)).kind, Kind::kContinue);  // n=3, the best
  EXPECT_EQ(s->Report(3, 1, V(0.4, max)).kind, Kind::kContinue);  // n=4, keep 2, one better
  TrialDecision d4 = s->Report(4, 1, V(0.45, max));               // n=5, keep 2, two better
  EXPECT_EQ(d4.kind, Kind::kStop);
  EXPECT_NE(d4.reason.find("the cutoff is " + std::string(max ? "-0.4" : "0.4")), std::string::npos) << d4.reason;
  // Ties go the reporting trial's way.
  EXPECT_EQ(s->Report(5, 1, V(0.3, max)).kind, Kind::kContinue);  // n=6, keep 2, none strictly better
}

INSTANTIATE_TEST_SUITE_P(Directions, AshaDirectionTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Maximize" : "Minimize"; });

TEST(AshaTest, JudgesATrialOncePerRungAtItsFirstReportThere) {
  auto s = MakeStoppingRule(Asha(), false);
  EXPECT_EQ(s->Report(0, 1, 0.1).kind, Kind::kContinue);
  EXPECT_EQ(s->Report(1, 1, 0.2).kind, Kind::kStop);
  EXPECT_EQ(s->Report(2, 0.5, 9.0).kind, Kind::kContinue);  // below the first rung: nothing to judge
  EXPECT_EQ(s->Report(2, 1, 0.05).kind, Kind::kContinue);   // judged at rung 0, the best
  EXPECT_EQ(s->Report(2, 2, 9.0).kind, Kind::kContinue);    // rung 0 already judged, rung 1 not reached
  // Rung 1 (resource 3): trial 2 is first there; trial 0 arrives worse and is stopped.
  EXPECT_EQ(s->Report(2, 3, 0.04).kind, Kind::kContinue);
  EXPECT_EQ(s->Report(0, 3.5, 0.09).kind, Kind::kStop);
  // A trial that skips rungs is judged at the highest one it reached.
  EXPECT_EQ(s->Report(3, 1, 0.01).kind, Kind::kContinue);
  TrialDecision d = s->Report(3, 10, 0.5);  // rung 2 (9): first value there
  EXPECT_EQ(d.kind, Kind::kContinue) << d.reason;
}

TEST(AshaTest, StopsAtTheMaximumAndRepeatsAStop) {
  auto s = MakeStoppingRule(Asha(1, 4, 2), false);
  EXPECT_EQ(s->Report(0, 1, 0.5).kind, Kind::kContinue);
  EXPECT_EQ(s->Report(0, 2, 0.4).kind, Kind::kContinue);
  TrialDecision d = s->Report(0, 4, 0.3);
  EXPECT_EQ(d.kind, Kind::kStop);
  EXPECT_NE(d.reason.find("reached scheduler.max_resource (4)"), std::string::npos) << d.reason;
  // Points that arrive after a stop get the same answer, and change nothing.
  EXPECT_EQ(s->Report(0, 5, 0.1).kind, Kind::kStop);
  EXPECT_EQ(s->Report(0, 5, 0.1).reason, d.reason);
}

TEST(AshaTest, NonFiniteValuesAreTheWorst) {
  auto s = MakeStoppingRule(Asha(1, 27, 3), true);  // maximize: NaN must not look large
  EXPECT_EQ(s->Report(0, 1, 0.1).kind, Kind::kContinue);
  EXPECT_EQ(s->Report(1, 1, std::nan("")).kind, Kind::kStop);
  EXPECT_EQ(s->Report(2, 1, INFINITY).kind, Kind::kStop);
}

TEST(AshaTest, ForgetRemovesATrialsRecords) {
  auto s = MakeStoppingRule(Asha(), false);
  EXPECT_EQ(s->Report(0, 1, 0.1).kind, Kind::kContinue);
  s->Forget(0);
  // Without trial 0's record, trial 1 is first at the rung again.
  EXPECT_EQ(s->Report(1, 1, 0.9).kind, Kind::kContinue);
  // A forgotten stopped trial starts over too.
  EXPECT_EQ(s->Report(2, 1, 5.0).kind, Kind::kStop);
  s->Forget(2);
  s->Forget(1);
  EXPECT_EQ(s->Report(2, 1, 5.0).kind, Kind::kContinue);
}

TEST(HyperbandTest, BracketsFollowHyperbandsSizesInACycle) {
  StoppingOptions o = Asha(1, 27, 3);
  o.type = StoppingRuleType::kHyperband;
  // s_max = 3: brackets with 3, 2, 1, 0 rungs get ceil(4/4*27)=27, ceil(4/3*9)=12, ceil(4/2*3)=6, 4 trials.
  std::map<int, int> counts;
  for (int64_t n = 0; n < 49; ++n) ++counts[HyperbandBracket(o, 4, n)];
  EXPECT_EQ(counts, (std::map<int, int>{{0, 27}, {1, 12}, {2, 6}, {3, 4}}));
  for (int64_t n = 0; n < 49; ++n) EXPECT_EQ(HyperbandBracket(o, 4, n), HyperbandBracket(o, 4, n + 49));
  // Interleaved, not in blocks: the first 8 trials already reach three brackets.
  std::set<int> first;
  for (int64_t n = 0; n < 8; ++n) first.insert(HyperbandBracket(o, 4, n));
  EXPECT_GE(first.size(), 3u);
  // Two brackets: the two most aggressive, in proportion 27 : 12.
  counts.clear();
  for (int64_t n = 0; n < 39; ++n) ++counts[HyperbandBracket(o, 2, n)];
  EXPECT_EQ(counts, (std::map<int, int>{{0, 27}, {1, 12}}));
}

TEST(HyperbandTest, WideRangesKeepTheCycleShortAndEveryBracketInIt) {
  StoppingOptions o = Asha(1, 1e12, 10);  // 12 rungs: bracket 0 alone would be 10^12 trials a cycle
  o.type = StoppingRuleType::kHyperband;
  ASSERT_EQ(MaxBrackets(o), 13);
  const std::vector<int> cycle = HyperbandCycle(o, 13);
  EXPECT_LT(cycle.size(), 12000u);  // 10^4 * (1 + 13/12/10 + ...) and a 1 for each tiny bracket
  EXPECT_EQ(std::set<int>(cycle.begin(), cycle.end()).size(), 13u);  // every bracket gets trials
  EXPECT_EQ(std::count(cycle.begin(), cycle.end(), 0), 10000);       // the largest bracket, scaled to 10^4
}

TEST(HyperbandTest, EachBracketHasItsOwnRungs) {
  StoppingOptions o = Asha(1, 27, 3);
  o.type = StoppingRuleType::kHyperband;
  auto s = MakeStoppingRule(o, false);
  std::vector<int64_t> in0, in1, in3;
  for (int64_t n = 0; n < 49; ++n) {
    int b = HyperbandBracket(o, 4, n);
    if (b == 0) in0.push_back(n);
    if (b == 1) in1.push_back(n);
    if (b == 3) in3.push_back(n);
  }
  // Bracket 0 judges at resource 1; bracket 1's first rung is 3, so a bad value at 1 passes there.
  EXPECT_EQ(s->Report(in0[0], 1, 0.1).kind, Kind::kContinue);
  EXPECT_EQ(s->Report(in0[1], 1, 0.9).kind, Kind::kStop);
  EXPECT_EQ(s->Report(in1[0], 1, 0.9).kind, Kind::kContinue);
  EXPECT_EQ(s->Report(in1[0], 3, 0.9).kind, Kind::kContinue);  // first at bracket 1's rung 3
  TrialDecision d = s->Report(in1[1], 3, 1.0);
  EXPECT_EQ(d.kind, Kind::kStop);
  EXPECT_NE(d.reason.find("hyperband: bracket 1 rung 0 (epoch 3)"), std::string::npos) << d.reason;
  // Bracket 3 has no rungs: its trials run to R.
  EXPECT_EQ(s->Report(in3[0], 1, 100.0).kind, Kind::kContinue);
  EXPECT_EQ(s->Report(in3[1], 9, 100.0).kind, Kind::kContinue);
  EXPECT_EQ(s->Report(in3[1], 27, 100.0).kind, Kind::kStop);
}

StoppingOptions Median(double grace = 2, int min_trials = 3) {
  StoppingOptions o;
  o.type = StoppingRuleType::kMedian;
  o.grace_period = grace;
  o.min_trials = min_trials;
  return o;
}

class MedianDirectionTest : public ::testing::TestWithParam<bool> {};

TEST_P(MedianDirectionTest, StopsATrialWorseThanTheMedianRunningAverage) {
  const bool max = GetParam();
  auto s = MakeStoppingRule(Median(), max);
  // Running averages at resource 2: A (1.0, 0.8) -> 0.9, B (0.5, 0.5) -> 0.5, C (2.0, 1.0) -> 1.5: median 0.9.
  const std::map<int64_t, std::vector<double>> curves = {{0, {1.0, 0.8, 0.6}}, {1, {0.5, 0.5, 0.5}},
                                                         {2, {2.0, 1.0, 0.0}}};
  for (const auto& [n, curve] : curves) {
    for (size_t i = 0; i < curve.size(); ++i) s->Report(n, static_cast<double>(i + 1), V(curve[i], max));
    s->Complete(n, V(curve.back(), max));
  }
  EXPECT_EQ(s->Report(3, 1, V(5.0, max)).kind, Kind::kContinue);  // inside the grace period
  TrialDecision d = s->Report(3, 2, V(0.92, max));                  // best 0.92 > median 0.9
  EXPECT_EQ(d.kind, Kind::kStop);
  EXPECT_NE(d.reason.find("median running average of 3 other trials (" + std::string(max ? "-0.9" : "0.9") + ")"),
            std::string::npos) << d.reason;
  EXPECT_EQ(s->Report(4, 1, V(5.0, max)).kind, Kind::kContinue);
  EXPECT_EQ(s->Report(4, 2, V(0.88, max)).kind, Kind::kContinue);  // 0.88 < 0.9
  // At 2 the median was (0.9 + 1.5) / 2 with trial 3's average 2.96 in. At 3 only A, B and C are there:
  // running averages 0.8, 0.5, 1.0, median 0.8; the best so far (0.88, not the last 0.95) is worse.
  EXPECT_EQ(s->Report(4, 3, V(0.95, max)).kind, Kind::kStop);
}

INSTANTIATE_TEST_SUITE_P(Directions, MedianDirectionTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Maximize" : "Minimize"; });

TEST(MedianStoppingTest, NeedsMinTrialsThatReachedTheResource) {
  auto s = MakeStoppingRule(Median(1, 2), false);
  s->Report(0, 1, 0.1);
  s->Report(0, 2, 0.1);
  EXPECT_EQ(s->Report(1, 1, 0.5).kind, Kind::kContinue);  // one other trial only
  s->Report(2, 1, 0.2);
  EXPECT_EQ(s->Report(1, 2, 0.5).kind, Kind::kContinue);  // at 2 only trial 0 is there (2 was at 1)
  EXPECT_EQ(s->Report(3, 1, 0.5).kind, Kind::kStop);      // at 1: 0.1 and 0.2 (and 0.5 of trial 1): median 0.2
}

TEST(MedianStoppingTest, AReportThatGoesBackCutsTheCurve) {
  auto s = MakeStoppingRule(Median(1, 1), false);
  s->Report(0, 1, 0.3);
  s->Report(0, 2, 0.3);  // running average at 2: 0.3
  EXPECT_EQ(s->Report(1, 1, 0.1).kind, Kind::kContinue);
  EXPECT_EQ(s->Report(1, 2, 0.2).kind, Kind::kContinue);
  // Trial 1 resumes from a checkpoint at 1 and reports 0.5 at 2: its earlier 0.2 at 2 is gone, 0.1 stays.
  EXPECT_EQ(s->Report(1, 2, 0.5).kind, Kind::kContinue);  // best so far 0.1 < 0.3
  EXPECT_EQ(s->Report(0, 3, 0.31).kind, Kind::kContinue);  // nobody else reached 3
  s->Forget(1);
  EXPECT_EQ(s->Report(2, 1, 9.0).kind, Kind::kStop);  // trial 0 alone: 0.3
}

SearchSpace PbtSpace() {
  SearchSpace space;
  ParamSpec lr;
  lr.name = "lr";
  lr.kind = ParamKind::kFloat;
  lr.low = 1e-4;
  lr.high = 1.0;
  lr.log = true;
  ParamSpec width;
  width.name = "width";
  width.kind = ParamKind::kInt;
  width.low = 2;
  width.high = 100;
  ParamSpec opt;
  opt.name = "opt";
  opt.kind = ParamKind::kCategorical;
  opt.choices = {"sgd", "adam", "lamb"};
  ParamSpec momentum;
  momentum.name = "momentum";
  momentum.kind = ParamKind::kFloat;
  momentum.low = 0;
  momentum.high = 0.99;
  momentum.condition_param = "opt";
  momentum.condition_values = {"sgd"};
  space.params = {lr, width, opt, momentum};
  return space;
}

TEST(PerturbTest, MultipliesByPointEightOrOnePointTwoWithinBounds) {
  const SearchSpace space = PbtSpace();
  const Params source = {{"lr", 0.01}, {"width", int64_t{50}}, {"opt", std::string("sgd")}, {"momentum", 0.9}};
  std::set<double> lr_factors, width_values;
  for (uint64_t seed = 0; seed < 64; ++seed) {
    Params p = Perturb(space, source, 0.0, seed);
    ASSERT_EQ(p.size(), 4u);
    const double lr = std::get<double>(p.at("lr"));
    EXPECT_TRUE(std::abs(lr - 0.008) < 1e-12 || std::abs(lr - 0.012) < 1e-12) << lr;
    lr_factors.insert(std::round(lr / 0.01 * 10) / 10);
    const int64_t w = std::get<int64_t>(p.at("width"));
    EXPECT_TRUE(w == 40 || w == 60) << w;
    width_values.insert(static_cast<double>(w));
    EXPECT_EQ(std::get<std::string>(p.at("opt")), "sgd");  // no resampling: categoricals stay
    const double m = std::get<double>(p.at("momentum"));
    EXPECT_TRUE(std::abs(m - 0.72) < 1e-12 || m == 0.99) << m;  // 0.9 * 1.2 = 1.08 is clamped to 0.99
    EXPECT_EQ(Perturb(space, source, 0.0, seed), p);              // a function of the seed
  }
  EXPECT_EQ(lr_factors, (std::set<double>{0.8, 1.2}));
  EXPECT_EQ(width_values, (std::set<double>{40, 60}));
}

TEST(PerturbTest, SmallIntsMoveAndResamplingRespectsConditions) {
  const SearchSpace space = PbtSpace();
  std::set<int64_t> widths;
  for (uint64_t seed = 0; seed < 32; ++seed) {
    Params p = Perturb(space, {{"lr", 1.0}, {"width", int64_t{2}}, {"opt", std::string("adam")}}, 0.0, seed);
    widths.insert(std::get<int64_t>(p.at("width")));
    EXPECT_LE(std::get<double>(p.at("lr")), 1.0);
    EXPECT_EQ(p.count("momentum"), 0u);  // inactive under adam
  }
  EXPECT_EQ(widths, (std::set<int64_t>{2, 3}));  // 2 * 0.8 rounds to 2, moved down to 1, clamped to 2
  // Resampling everything: categoricals take every value, and momentum appears exactly when opt is sgd.
  std::set<std::string> opts;
  for (uint64_t seed = 0; seed < 64; ++seed) {
    Params p = Perturb(space, {{"lr", 0.01}, {"width", int64_t{50}}, {"opt", std::string("adam")}}, 1.0, seed);
    const std::string opt = std::get<std::string>(p.at("opt"));
    opts.insert(opt);
    EXPECT_EQ(p.count("momentum"), opt == "sgd" ? 1u : 0u);
    const double lr = std::get<double>(p.at("lr"));
    EXPECT_TRUE(lr >= 1e-4 && lr <= 1.0) << lr;
  }
  EXPECT_EQ(opts, (std::set<std::string>{"sgd", "adam", "lamb"}));
}

StoppingOptions Pbt(double interval = 2, double quantile = 0.25) {
  StoppingOptions o;
  o.type = StoppingRuleType::kPbt;
  o.perturbation_interval = interval;
  o.quantile = quantile;
  o.resample_probability = 0;
  o.seed = 7;
  return o;
}

Params LrParams(double lr) { return {{"lr", lr}, {"width", int64_t{10}}, {"opt", std::string("adam")}}; }

class PbtDirectionTest : public ::testing::TestWithParam<bool> {};

TEST_P(PbtDirectionTest, TheBottomQuantileExploitsTheTop) {
  const bool max = GetParam();
  auto s = MakeStoppingRule(Pbt(), max, PbtSpace());
  for (int64_t n = 0; n < 4; ++n) s->AddTrial(n, LrParams(0.01 * (n + 1)));
  // Resource 1: before the first perturbation point.
  for (int64_t n = 0; n < 4; ++n) EXPECT_EQ(s->Report(n, 1, V(1.0 + n, max)).kind, Kind::kContinue);
  // Resource 2: latest values 0.1 (trial 0), 2, 3 and then 4 (trial 3). q = ceil(4 * 0.25) = 1.
  EXPECT_EQ(s->Report(0, 2, V(0.1, max)).kind, Kind::kContinue);  // the best
  EXPECT_EQ(s->Report(1, 2, V(2.0, max)).kind, Kind::kContinue);
  EXPECT_EQ(s->Report(2, 2, V(3.0, max)).kind, Kind::kContinue);
  TrialDecision d = s->Report(3, 2, V(4.0, max));  // the worst
  ASSERT_EQ(d.kind, Kind::kExploit) << d.reason;
  EXPECT_EQ(d.source_trial, 0);
  EXPECT_EQ(d.source_resource, 2);
  const double lr = std::get<double>(d.params.at("lr"));
  EXPECT_TRUE(std::abs(lr - 0.008) < 1e-12 || std::abs(lr - 0.012) < 1e-12) << lr;
  EXPECT_NE(d.reason.find("exploit trial 0"), std::string::npos) << d.reason;
  // Trial 3 now is trial 0's model: its next perturbation point is 2 past the source's resource (2), not 3.
  EXPECT_EQ(s->Report(3, 3, V(0.5, max)).kind, Kind::kContinue);
  // At 4, trial 2 is the worst (0.1, 0.5, 2, 8) and exploits trial 0 too.
  TrialDecision d2 = s->Report(2, 4, V(8.0, max));
  EXPECT_EQ(d2.kind, Kind::kExploit);
  EXPECT_EQ(d2.source_trial, 0);
}

INSTANTIATE_TEST_SUITE_P(Directions, PbtDirectionTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Maximize" : "Minimize"; });

TEST(PbtTest, CompletedTrialsLeaveThePopulation) {
  auto s = MakeStoppingRule(Pbt(1, 0.5), false, PbtSpace());
  s->AddTrial(0, LrParams(0.1));
  s->AddTrial(1, LrParams(0.2));
  EXPECT_EQ(s->Report(0, 1, 0.1).kind, Kind::kContinue);
  s->Complete(0, 0.1);
  // Trial 1 is alone: no quantile to exploit.
  EXPECT_EQ(s->Report(1, 1, 0.9).kind, Kind::kContinue);
  s->AddTrial(2, LrParams(0.3));
  EXPECT_EQ(s->Report(2, 1, 0.05).kind, Kind::kContinue);
  TrialDecision d = s->Report(1, 2, 0.9);
  ASSERT_EQ(d.kind, Kind::kExploit);
  EXPECT_EQ(d.source_trial, 2);
}

// A random stream of calls for the replay tests: trials are added in order, report at growing resources
// (some go back), complete, fail, or are forgotten.
struct Call {
  enum { kAdd, kReport, kComplete, kForget } what;
  int64_t n;
  double resource, value;
};

std::vector<Call> RandomCalls(uint64_t seed, int trials) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<Call> calls;
  std::map<int64_t, double> resource;
  int64_t next = 0;
  std::set<int64_t> live;
  while (next < trials || !live.empty()) {
    if (next < trials && (live.size() < 4 || unit(rng) < 0.1)) {
      calls.push_back({Call::kAdd, next, 0, 0});
      live.insert(next);
      resource[next] = 0;
      ++next;
      continue;
    }
    auto it = live.begin();
    std::advance(it, static_cast<long>(rng() % live.size()));
    const int64_t n = *it;
    const double u = unit(rng);
    if (u < 0.05 || resource[n] >= 27) {
      const bool failed = unit(rng) < 0.2;
      calls.push_back({failed && unit(rng) < 0.3 ? Call::kForget : Call::kComplete, n, 0, failed ? NAN : 0.5});
      live.erase(it);
      continue;
    }
    resource[n] = u < 0.1 ? std::max(1.0, resource[n] - 2) : resource[n] + 1;  // sometimes it goes back
    calls.push_back({Call::kReport, n, resource[n], 1.0 / (1.0 + 0.1 * resource[n]) + 0.5 * unit(rng) + n % 3 * 0.1});
  }
  return calls;
}

std::string Apply(StoppingRule& s, const Call& c) {
  switch (c.what) {
    case Call::kAdd:
      s.AddTrial(c.n, LrParams(0.001 * static_cast<double>(c.n + 1)));
      return "";
    case Call::kReport: {
      TrialDecision d = s.Report(c.n, c.resource, c.value);
      std::string out = std::to_string(static_cast<int>(d.kind)) + " " + d.reason + " " +
                        std::to_string(d.source_trial);
      for (const auto& [k, v] : d.params) out += " " + k + "=" + FormatValue(v);
      return out;
    }
    case Call::kComplete:
      s.Complete(c.n, std::isnan(c.value) ? std::nullopt : std::optional<double>(c.value));
      return "";
    case Call::kForget:
      s.Forget(c.n);
      return "";
  }
  return "";
}

std::vector<StoppingOptions> AllTypes() {
  StoppingOptions hb = Asha(1, 27, 3);
  hb.type = StoppingRuleType::kHyperband;
  return {Asha(1, 27, 3), hb, Median(2, 3), Pbt(3, 0.25)};
}

TEST(StoppingRuleReplayTest, ReplayingTheCallsRebuildsTheSameState) {
  for (const StoppingOptions& o : AllTypes()) {
    SCOPED_TRACE(StoppingRuleName(o.type));
    const std::vector<Call> calls = RandomCalls(42, 40);
    const size_t cut = calls.size() * 2 / 3;  // the coordinator restarts here
    auto original = MakeStoppingRule(o, false, PbtSpace());
    std::vector<std::string> decisions;
    int stops = 0, exploits = 0;
    for (const Call& c : calls) {
      decisions.push_back(Apply(*original, c));
      stops += decisions.back().rfind("1 ", 0) == 0;
      exploits += decisions.back().rfind("2 ", 0) == 0;
    }
    EXPECT_GT(stops + exploits, 0);  // the stream exercises the decisions
    auto rebuilt = MakeStoppingRule(o, false, PbtSpace());
    for (size_t i = 0; i < cut; ++i) EXPECT_EQ(Apply(*rebuilt, calls[i]), decisions[i]) << "call " << i;
    for (size_t i = cut; i < calls.size(); ++i) EXPECT_EQ(Apply(*rebuilt, calls[i]), decisions[i]) << "call " << i;
  }
}

TEST(StoppingRuleReplayTest, RungAndMedianStateIsAFunctionOfTheReportsAlone) {
  // For asha, hyperband and median: AddTrial for all, the reports and Forget calls in order, then the
  // completions, give the same later decisions as the interleaved original.
  std::vector<StoppingOptions> types = AllTypes();
  types.pop_back();  // pbt
  for (const StoppingOptions& o : types) {
    SCOPED_TRACE(StoppingRuleName(o.type));
    const std::vector<Call> calls = RandomCalls(7, 40);
    const size_t cut = calls.size() / 2;
    auto original = MakeStoppingRule(o, false, PbtSpace());
    for (size_t i = 0; i < cut; ++i) Apply(*original, calls[i]);
    auto rebuilt = MakeStoppingRule(o, false, PbtSpace());
    for (int pass = 0; pass < 3; ++pass) {
      for (size_t i = 0; i < cut; ++i) {
        const Call& c = calls[i];
        const bool add = c.what == Call::kAdd, complete = c.what == Call::kComplete;
        if ((pass == 0 && add) || (pass == 1 && !add && !complete) || (pass == 2 && complete)) Apply(*rebuilt, c);
      }
    }
    for (size_t i = cut; i < calls.size(); ++i) {
      EXPECT_EQ(Apply(*rebuilt, calls[i]), Apply(*original, calls[i])) << "call " << i;
    }
  }
}

TEST(StoppingRuleReplayTest, PbtReplayedWithCurrentParametersThenResetToThem) {
  // The coordinator stores a trial's parameters after each exploit (not the ones it was created with). A
  // replay that adds every trial with its current parameters and sets them again at the end continues with
  // exactly the original decisions, parameters included.
  const StoppingOptions o = Pbt(3, 0.25);
  const std::vector<Call> calls = RandomCalls(42, 40);
  const size_t cut = calls.size() * 2 / 3;
  auto original = MakeStoppingRule(o, false, PbtSpace());
  std::map<int64_t, Params> current;
  int exploits = 0;
  for (size_t i = 0; i < cut; ++i) {
    const Call& c = calls[i];
    if (c.what == Call::kAdd) current[c.n] = LrParams(0.001 * static_cast<double>(c.n + 1));
    if (c.what == Call::kReport) {
      TrialDecision d = original->Report(c.n, c.resource, c.value);
      if (d.exploit()) {
        current[c.n] = d.params;
        ++exploits;
      }
    } else {
      Apply(*original, c);
    }
  }
  ASSERT_GT(exploits, 2);
  auto rebuilt = MakeStoppingRule(o, false, PbtSpace());
  for (const auto& [n, params] : current) rebuilt->AddTrial(n, params);
  for (size_t i = 0; i < cut; ++i) {
    if (calls[i].what != Call::kAdd) Apply(*rebuilt, calls[i]);
  }
  for (const auto& [n, params] : current) rebuilt->AddTrial(n, params);
  int later_exploits = 0;
  for (size_t i = cut; i < calls.size(); ++i) {
    const std::string want = Apply(*original, calls[i]);
    later_exploits += want.rfind("2 ", 0) == 0;
    EXPECT_EQ(Apply(*rebuilt, calls[i]), want) << "call " << i;
  }
  EXPECT_GT(later_exploits, 0);
}

TEST(StoppingRuleTest, MadeFromASpec) {
  const std::string head = "name: s\nobjective: {metric: val_loss, mode: min}\nbudget: {max_trials: 4, parallelism: 4}\n"
                           "command: [t, \"{lr}\"]\nspace:\n  lr: {type: float, low: 0.001, high: 0.1}\n";
  ParseResult none = ParseSpec(head, "s.yaml");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(MakeStoppingRule(*none.spec), nullptr);
  ParseResult asha = ParseSpec(head + "scheduler: {type: asha, max_resource: 9}\n", "s.yaml");
  ASSERT_TRUE(asha.ok()) << asha.errors[0].ToString();
  auto s = MakeStoppingRule(*asha.spec);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->Report(0, 1, 0.1).kind, Kind::kContinue);
  EXPECT_EQ(s->Report(1, 1, 0.2).kind, Kind::kStop);
  EXPECT_EQ(s->Report(0, 9, 0.05).kind, Kind::kStop);  // max_resource
}

}  // namespace
}  // namespace ladder::search
