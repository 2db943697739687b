// Constraints with several objectives (search/multiobjective/): Deb's constrained domination and the ranks NSGA-II
// sorts by (hand-computed, and against a brute-force peeling of the fronts), both samplers' replay contract with
// constraint values, and that each sampler, told the constraint, suggests feasible configurations far more often
// than the same sampler told the objectives only (NSGA-II: survival and tournaments by constrained rank; MOTPE: a
// good group of feasible trials, the least violating infeasible ones filling it when too few are feasible).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "search/multiobjective/mo_sampler.h"
#include "search/multiobjective/pareto.h"
#include "tests/search/sampler_test_util.h"

namespace ladder::search {
namespace {

// Deb's constrained domination, pairwise: the definition ConstrainedNonDominatedRanks sorts by.
bool ConstrainedDominates(const ObjectiveVector& a, double va, const ObjectiveVector& b, double vb) {
  if (va > 0 || vb > 0) return va < vb;  // a feasible one (0) before an infeasible one; then the smaller violation
  return Dominates(a, b);
}

using testing::FloatParam;
using testing::SpecWith;

TEST(ConstrainedPareto, FeasibleBeforeInfeasibleThenByViolationThenByDominance) {
  EXPECT_TRUE(ConstrainedDominates({9, 9}, 0, {0, 0}, 0.1)) << "feasible dominates infeasible, whatever the values";
  EXPECT_FALSE(ConstrainedDominates({0, 0}, 0.1, {9, 9}, 0));
  EXPECT_TRUE(ConstrainedDominates({9, 9}, 0.1, {0, 0}, 0.2)) << "two infeasible: the smaller violation";
  EXPECT_FALSE(ConstrainedDominates({0, 0}, 0.2, {9, 9}, 0.2)) << "equal violations: neither";
  EXPECT_FALSE(ConstrainedDominates({9, 9}, 0.2, {0, 0}, 0.2));
  EXPECT_TRUE(ConstrainedDominates({1, 2}, 0, {1, 3}, 0)) << "two feasible: Pareto dominance";
  EXPECT_FALSE(ConstrainedDominates({0, 4}, 0, {1, 3}, 0));
}

TEST(ConstrainedPareto, RanksOfAHandComputedSet) {
  const std::vector<ObjectiveVector> six = {{1, 5}, {2, 3}, {4, 1}, {3, 4}, {5, 5}, {2, 6}};
  // (4,1) and (2,6) broke a constraint: the feasible four rank (1,5) (2,3): 0, (3,4): 1, (5,5): 2; then (2,6) by its
  // smaller violation, then (4,1), though (4,1) is on the unconstrained front.
  EXPECT_EQ(ConstrainedNonDominatedRanks(six, {0, 0, 0.3, 0, 0, 0.1}), (std::vector<int>{0, 0, 4, 1, 2, 3}));
  EXPECT_EQ(ConstrainedNonDominatedRanks(six, {0.5, 0.5, 0.5, 0.2, 0.2, 0.5}), (std::vector<int>{1, 1, 1, 0, 0, 1}))
      << "nothing feasible: by violation alone, ties sharing a rank";
  EXPECT_EQ(ConstrainedNonDominatedRanks(six, std::vector<double>(6, 0)), NonDominatedRanks(six));
}

// Fronts peeled one at a time: the points no remaining point dominates (constrained), O(N^3).
std::vector<int> PeeledRanks(const std::vector<ObjectiveVector>& p, const std::vector<double>& v) {
  std::vector<int> rank(p.size(), -1);
  for (int r = 0;; ++r) {
    std::vector<size_t> front;
    for (size_t i = 0; i < p.size(); ++i) {
      if (rank[i] >= 0) continue;
      bool dominated = false;
      for (size_t j = 0; j < p.size() && !dominated; ++j) {
        dominated = rank[j] < 0 && ConstrainedDominates(p[j], v[j], p[i], v[i]);
      }
      if (!dominated) front.push_back(i);
    }
    if (front.empty()) return rank;
    for (size_t i : front) rank[i] = r;
  }
}

TEST(ConstrainedPareto, RanksAreTheBruteForceFrontsOfConstrainedDomination) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0, 1);
  for (size_t m : {2, 3}) {
    std::vector<ObjectiveVector> pts(200, ObjectiveVector(m));
    std::vector<double> viol(pts.size());
    for (size_t i = 0; i < pts.size(); ++i) {
      for (double& x : pts[i]) x = std::round(u(rng) * 10) / 10;  // ties included
      viol[i] = u(rng) < 0.4 ? std::round(u(rng) * 8) / 8 : 0;     // some infeasible, equal violations included
    }
    EXPECT_EQ(ConstrainedNonDominatedRanks(pts, viol), PeeledRanks(pts, viol)) << m << " objectives";
  }
}

// ZDT1 over 3 coordinates, subject to f1 = x0 >= 0.6: the signed value 0.6 - x0 (40% of the space infeasible, the
// left part of the front, where random points are as good as anywhere).
std::vector<ParamSpec> Space() { return {FloatParam("x0", 0, 1), FloatParam("x1", 0, 1), FloatParam("x2", 0, 1)}; }
ObjectiveVector Zdt1(const Params& p) {
  const double f1 = std::get<double>(p.at("x0"));
  const double g = 1 + 9 * (std::get<double>(p.at("x1")) + std::get<double>(p.at("x2"))) / 2;
  return {f1, g * (1 - std::sqrt(f1 / g))};
}
double Signed(const Params& p) { return 0.6 - std::get<double>(p.at("x0")); }

std::unique_ptr<MultiObjectiveSampler> Make(const std::string& sampler, uint64_t seed) {
  SearchSpec spec = SpecWith(Space(), sampler, seed);
  spec.sampler_options.n_startup_trials = 10;
  MultiObjectiveOptions o;
  o.maximize = {false, false};
  o.population = 10;
  std::string error;
  auto s = MakeMultiObjectiveSampler(spec, o, &error);
  EXPECT_NE(s, nullptr) << error;
  return s;
}

// The share of feasible suggestions among trials 40..99, asked and told one at a time (with the constraint's value
// or without it).
double FeasibleShare(const std::string& sampler, uint64_t seed, bool constrained) {
  auto s = Make(sampler, seed);
  int feasible = 0;
  for (int n = 0; n < 100; ++n) {
    const Params p = *s->Ask(n);
    if (n >= 40 && Signed(p) <= 0) ++feasible;
    if (constrained) {
      s->TellConstrained(n, p, Zdt1(p), {Signed(p)});
    } else {
      s->Tell(n, p, Zdt1(p));
    }
  }
  return feasible / 60.0;
}

class EachConstrainedSampler : public ::testing::TestWithParam<std::string> {};

TEST_P(EachConstrainedSampler, ToldTheConstraintItSuggestsFeasibleConfigurationsFarMoreOften) {
  // Fixed seeds: deterministic. Median over 5 seeds.
  std::vector<double> with, without;
  for (uint64_t seed = 0; seed < 5; ++seed) {
    with.push_back(FeasibleShare(GetParam(), seed, true));
    without.push_back(FeasibleShare(GetParam(), seed, false));
  }
  std::sort(with.begin(), with.end());
  std::sort(without.begin(), without.end());
  EXPECT_GT(with[2], 0.6) << GetParam();
  EXPECT_GT(with[2], without[2] + 0.4) << GetParam() << ": " << with[2] << " vs told the objectives only " << without[2];
}

TEST_P(EachConstrainedSampler, ReplayingConstrainedTrialsInAnyOrderGivesTheSameSuggestions) {
  auto a = Make(GetParam(), 7), b = Make(GetParam(), 7);
  std::vector<Params> asked;
  for (int n = 0; n < 45; ++n) {
    asked.push_back(*a->Ask(n));
    a->TellConstrained(n, asked.back(), Zdt1(asked.back()), {Signed(asked.back())});
  }
  // b: told in reverse order (a restarted coordinator's replay), one trial first told wrongly and corrected.
  b->TellConstrained(44, asked[44], ObjectiveVector{0, 0}, {Signed(asked[44]) > 0 ? -1.0 : 1.0});
  for (int n = 44; n >= 0; --n) {
    const Params& p = asked[static_cast<size_t>(n)];
    b->TellConstrained(n, p, Zdt1(p), {Signed(p)});
  }
  for (int n = 45; n < 60; ++n) {
    const Params pa = *a->Ask(n), pb = *b->Ask(n);
    ASSERT_EQ(pa, pb) << "trial " << n;
    a->TellConstrained(n, pa, Zdt1(pa), {Signed(pa)});
    b->TellConstrained(n, pb, Zdt1(pb), {Signed(pb)});
  }
}

INSTANTIATE_TEST_SUITE_P(MultiObjective, EachConstrainedSampler, ::testing::Values("tpe", "nsga2", "gp"));

// MOTPE with nothing feasible: its good group is the least violating trials (here those nearest x0 = 0.5), so it
// suggests near the feasible region's edge; told the objectives only, its good group follows the front toward
// x0 = 0 instead.
TEST(ConstrainedMoTpe, WithNoFeasibleTrialTheGoodGroupIsTheLeastViolating) {
  auto with = Make("tpe", 2), without = Make("tpe", 2);
  double far_with = 0, far_without = 0;  // the mean distance of the suggestions' x0 from the edge, 0.5
  for (int n = 0; n < 40; ++n) {
    Params p = *with->Ask(n), q = *without->Ask(n);
    // Every trial is infeasible: x0 is squeezed into [0, 0.5) before it is told, so the best it can do is x0 -> 0.5.
    p["x0"] = 0.5 * std::get<double>(p.at("x0"));
    q["x0"] = 0.5 * std::get<double>(q.at("x0"));
    with->TellConstrained(n, p, Zdt1(p), {Signed(p)});
    without->Tell(n, q, Zdt1(q));
  }
  for (int n = 40; n < 50; ++n) {
    far_with += std::abs(std::get<double>(with->Ask(n)->at("x0")) - 0.5) / 10;
    far_without += std::abs(std::get<double>(without->Ask(n)->at("x0")) - 0.5) / 10;
  }
  EXPECT_LT(far_with, 0.1);
  EXPECT_GT(far_without, far_with + 0.15) << far_with << " vs " << far_without;
}

}  // namespace
}  // namespace ladder::search
