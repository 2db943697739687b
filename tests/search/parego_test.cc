// ParEGO, the `gp` sampler with several objectives (search/multiobjective/parego_sampler.cc): its scalarisation
// (scalarization.h) on hand-computed cases, and the sampler ahead of random search on ZDT1 at 60 evaluations on
// every seed tried. The determinism contract, parallel asks and constraints are the parametrised suites'
// (mo_sampler_test.cc, mo_constrained_test.cc), which run it beside tpe and nsga2.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "search/multiobjective/mo_sampler.h"
#include "search/multiobjective/pareto.h"
#include "search/multiobjective/scalarization.h"
#include "tests/search/sampler_test_util.h"

namespace ladder::search {
namespace {

using internal::AugmentedChebyshev;
using internal::NormalizedObjectives;
using internal::SimplexWeights;
using testing::FloatParam;
using testing::SpecWith;

TEST(ParEgoScalarisation, NormalizedAugmentedChebyshevOfAHandComputedSet) {
  const ObjectiveVector a{1, 10}, b{3, 30}, c{2, 50};
  const std::vector<ObjectiveVector> n = NormalizedObjectives({&a, &b, &c});
  ASSERT_EQ(n.size(), 3u);
  EXPECT_EQ(n[0], (ObjectiveVector{0, 0}));
  EXPECT_EQ(n[1], (ObjectiveVector{1, 0.5}));
  EXPECT_EQ(n[2], (ObjectiveVector{0.5, 1}));
  const std::vector<double> w{0.25, 0.75};
  EXPECT_DOUBLE_EQ(AugmentedChebyshev(n[0], w), 0.0);
  // max(0.25 x 1, 0.75 x 0.5) + 0.05 (0.25 + 0.375)
  EXPECT_DOUBLE_EQ(AugmentedChebyshev(n[1], w), 0.40625);
  // max(0.25 x 0.5, 0.75 x 1) + 0.05 (0.125 + 0.75)
  EXPECT_DOUBLE_EQ(AugmentedChebyshev(n[2], w), 0.79375);
  // The Chebyshev term alone ranks (1, 0.5) and (0.5, 1) by their worse weighted objective, not by their sum.
  EXPECT_DOUBLE_EQ(AugmentedChebyshev({0.2, 0.2}, {0.5, 0.5}, 0.0), 0.1);
}

TEST(ParEgoScalarisation, AnObjectiveThatTakesOneValueNormalizesToZero) {
  const ObjectiveVector a{4, 1}, b{4, 3};
  const std::vector<ObjectiveVector> n = NormalizedObjectives({&a, &b});
  EXPECT_EQ(n[0], (ObjectiveVector{0, 0}));
  EXPECT_EQ(n[1], (ObjectiveVector{0, 1}));
}

TEST(ParEgoScalarisation, WeightsAreUniformOnTheSimplex) {
  std::mt19937_64 rng(11);
  int below_quarter = 0;
  double mean_last = 0;
  const int draws = 20000;
  for (int i = 0; i < draws; ++i) {
    const std::vector<double> w2 = SimplexWeights(2, rng);
    ASSERT_NEAR(w2[0] + w2[1], 1.0, 1e-12);
    below_quarter += w2[0] < 0.25 ? 1 : 0;  // uniform on [0, 1] for two objectives
    const std::vector<double> w3 = SimplexWeights(3, rng);
    ASSERT_NEAR(w3[0] + w3[1] + w3[2], 1.0, 1e-12);
    ASSERT_TRUE(w3[0] >= 0 && w3[1] >= 0 && w3[2] >= 0);
    mean_last += w3[2] / draws;
  }
  EXPECT_NEAR(below_quarter / static_cast<double>(draws), 0.25, 0.015);
  EXPECT_NEAR(mean_last, 1.0 / 3, 0.01);
}

// ZDT1 over 5 coordinates; reference (1.1, 6).
std::vector<ParamSpec> Zdt1Space() {
  std::vector<ParamSpec> ps;
  for (int i = 0; i < 5; ++i) ps.push_back(FloatParam("x" + std::to_string(i), 0, 1));
  return ps;
}

ObjectiveVector Zdt1(const Params& p) {
  const double f1 = std::get<double>(p.at("x0"));
  double g = 0;
  for (int i = 1; i < 5; ++i) g += std::get<double>(p.at("x" + std::to_string(i)));
  g = 1 + 9 * g / 4;
  return {f1, g * (1 - std::sqrt(f1 / g))};
}

double HypervolumeAfter(const std::string& sampler, uint64_t seed, int budget) {
  MultiObjectiveOptions o;
  o.maximize = {false, false};
  std::string error;
  auto s = MakeMultiObjectiveSampler(SpecWith(Zdt1Space(), sampler, seed), o, &error);
  EXPECT_NE(s, nullptr) << error;
  std::vector<ObjectiveVector> f;
  for (int n = 0; n < budget; ++n) {
    Params p = *s->Ask(n);
    f.push_back(Zdt1(p));
    s->Tell(n, p, f.back());
  }
  return Hypervolume(f, {1.1, 6.0});
}

TEST(ParEgo, BeatsRandomSearchOnZdt1AtSixtyEvaluationsOnEverySeed) {
  // Fixed seeds: deterministic. 10 Sobol points, then 50 GP suggestions. The smallest lead over seeds 0-11 is 1.28
  // (random's hypervolume is 3.7 to 4.9, gp's 6.17 to 6.24 of at most 6.27).
  for (uint64_t seed = 0; seed < 5; ++seed) {
    const double gp = HypervolumeAfter("gp", seed, 60), random = HypervolumeAfter("random", seed, 60);
    EXPECT_GT(gp, random + 1.0) << "seed " << seed << ": gp " << gp << " vs random " << random;
  }
}

}  // namespace
}  // namespace ladder::search
