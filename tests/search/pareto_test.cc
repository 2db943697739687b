// Pareto tools (search/multiobjective/pareto.h): hand-computed ranks, crowding, volumes and contributions, and
// hypervolumes against a Monte Carlo estimate on random sets.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "search/multiobjective/pareto.h"

namespace ladder::search {
namespace {

const std::vector<ObjectiveVector> kSix = {{1, 5}, {2, 3}, {4, 1}, {3, 4}, {5, 5}, {2, 6}};

TEST(Pareto, DominatesNeedsNoWorseEverywhereAndBetterSomewhere) {
  EXPECT_TRUE(Dominates({1, 2}, {1, 3}));
  EXPECT_FALSE(Dominates({1, 3}, {1, 3}));
  EXPECT_FALSE(Dominates({0, 4}, {1, 3}));
  EXPECT_TRUE(Dominates({0, 0, 0}, {0, 0, 1e-9}));
}

TEST(Pareto, RanksOfAHandComputedSet) {
  // Front 0: (1,5) (2,3) (4,1); (3,4) is dominated by (2,3), (2,6) by (1,5): front 1; (5,5) by (3,4): front 2.
  EXPECT_EQ(NonDominatedRanks(kSix), (std::vector<int>{0, 0, 0, 1, 2, 1}));
}

TEST(Pareto, LeadingFrontsAreTheFirstRanksOfRandomSets) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  for (size_t m : {2, 3}) {
    std::vector<ObjectiveVector> pts(300, ObjectiveVector(m));
    for (auto& p : pts) {
      for (double& x : p) x = std::round(u(rng) * 20) / 20;  // ties included
    }
    std::vector<const ObjectiveVector*> ptrs;
    for (const auto& p : pts) ptrs.push_back(&p);
    const std::vector<int> rank = NonDominatedRanks(pts);
    const auto fronts = LeadingFronts(ptrs, 40);
    size_t total = 0;
    for (size_t f = 0; f < fronts.size(); ++f) {
      std::vector<size_t> expect;
      for (size_t i = 0; i < pts.size(); ++i) {
        if (rank[i] == static_cast<int>(f)) expect.push_back(i);
      }
      EXPECT_EQ(fronts[f], expect) << "front " << f << " with " << m << " objectives";
      total += fronts[f].size();
    }
    EXPECT_GE(total, 40u);
    EXPECT_LT(total - fronts.back().size(), 40u);  // it stopped at the front that reached 40
  }
}

TEST(Pareto, CrowdingDistanceOfAHandComputedFront) {
  // Front (1,5) (2,3) (4,1): the middle point's neighbours span 3/3 of f0 and 4/4 of f1.
  const auto d = CrowdingDistance(kSix, {0, 1, 2});
  EXPECT_TRUE(std::isinf(d[0]));
  EXPECT_DOUBLE_EQ(d[1], 2.0);
  EXPECT_TRUE(std::isinf(d[2]));
}

TEST(Pareto, HypervolumeOfHandComputedSets) {
  // x in [1,2): y from 5 (1); [2,4): from 3 (6); [4,6]: from 1 (10).
  EXPECT_DOUBLE_EQ(Hypervolume({{1, 5}, {2, 3}, {4, 1}}, {6, 6}), 17.0);
  EXPECT_DOUBLE_EQ(Hypervolume(kSix, {6, 6}), 17.0);             // dominated points add nothing
  EXPECT_DOUBLE_EQ(Hypervolume({{1, 5}, {7, 0}}, {6, 6}), 5.0);  // outside the reference box: nothing
  EXPECT_DOUBLE_EQ(Hypervolume({{0, 0, 0}}, {1, 2, 3}), 6.0);
  // Boxes of 4 and 2 that share [1,2]^3.
  EXPECT_DOUBLE_EQ(Hypervolume({{0, 0, 1}, {1, 1, 0}}, {2, 2, 2}), 5.0);
  EXPECT_DOUBLE_EQ(Hypervolume({{0, 0, 1}, {1, 1, 0}, {1, 1, 1}}, {2, 2, 2}), 5.0);
  EXPECT_DOUBLE_EQ(Hypervolume({{0, 0, 0, 0}}, {1, 2, 3, 4}), 24.0);
  EXPECT_DOUBLE_EQ(Hypervolume({{0, 0, 0, 1}, {1, 1, 1, 0}}, {2, 2, 2, 2}), 8.0 + 2.0 - 1.0);
  EXPECT_EQ(Hypervolume({}, {1, 1}), 0.0);
}

TEST(Pareto, ThreeObjectivesOnAPlaneAreTheTwoObjectiveAreaTimesDepth) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<ObjectiveVector> flat, deep;
  for (int i = 0; i < 200; ++i) {
    double x = u(rng), y = u(rng);
    flat.push_back({x, y});
    deep.push_back({x, y, 0.25});
  }
  EXPECT_NEAR(Hypervolume(deep, {1.2, 1.1, 2.25}), 2.0 * Hypervolume(flat, {1.2, 1.1}), 1e-12);
}

// Monte Carlo: the share of uniform points in the reference box dominated by some point of the set.
double MonteCarloVolume(const std::vector<ObjectiveVector>& pts, const ObjectiveVector& ref, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  const int samples = 200000;
  int hit = 0;
  ObjectiveVector z(ref.size());
  for (int s = 0; s < samples; ++s) {
    for (double& x : z) x = u(rng);
    for (size_t i = 0; i < z.size(); ++i) z[i] *= ref[i];
    for (const auto& p : pts) {
      bool dom = true;
      for (size_t i = 0; i < z.size() && dom; ++i) dom = p[i] <= z[i];
      if (dom) {
        ++hit;
        break;
      }
    }
  }
  double box = 1;
  for (double r : ref) box *= r;
  return box * hit / samples;
}

TEST(Pareto, HypervolumeMatchesMonteCarloOnRandomSets) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(0, 1);
  for (size_t m : {2, 3, 4}) {
    for (int trial = 0; trial < 3; ++trial) {
      std::vector<ObjectiveVector> pts(m == 4 ? 12 : 40, ObjectiveVector(m));
      for (auto& p : pts) {
        double s = 0;
        for (double& x : p) s += (x = u(rng));
        for (double& x : p) x = 0.3 + x / s;  // near a simplex: most points are on the front
      }
      const ObjectiveVector ref(m, 1.3);
      double box = std::pow(1.3, static_cast<double>(m));
      // 200,000 samples: the standard error is under 0.0012 box volumes; 0.006 is five of them.
      EXPECT_NEAR(Hypervolume(pts, ref), MonteCarloVolume(pts, ref, rng), 0.006 * box) << m << " objectives";
    }
  }
}

TEST(Pareto, ContributionsAndGreedySubsetOfAHandComputedFront) {
  // Exclusive regions: (1,5) x [1,2) y [5,6]; (2,3) x [2,4) y [3,5); (4,1) x [4,6] y [1,3).
  const auto c = HypervolumeContributions({{1, 5}, {2, 3}, {4, 1}}, {6, 6});
  EXPECT_DOUBLE_EQ(c[0], 1.0);
  EXPECT_DOUBLE_EQ(c[1], 4.0);
  EXPECT_DOUBLE_EQ(c[2], 4.0);
  // Alone: 5, 12 and 10; then next to (2,3): (1,5) adds 1, (4,1) adds 4.
  EXPECT_EQ(GreedyHypervolumeSubset({{1, 5}, {2, 3}, {4, 1}}, 2, {6, 6}), (std::vector<size_t>{1, 2}));
}

}  // namespace
}  // namespace ladder::search
