// Sobol' sequence: net balance of the first 2^k points, scrambling, and the sampler built on it.
#include "search/samplers/sobol.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "search/samplers/sampler.h"
#include "sampler_test_util.h"

namespace ladder::search {
namespace {

using testing::CatParam;
using testing::FloatParam;
using testing::IntParam;
using testing::SpecWith;

// For every k <= 10 and every coordinate, the first 2^k points put exactly one point in each interval
// [i / 2^k, (i + 1) / 2^k): the (0, k, 1)-net property of each one-dimensional projection.
void ExpectBalanced(const SobolSequence& s) {
  for (int k = 1; k <= 10; ++k) {
    const int n = 1 << k;
    for (int d = 0; d < s.dims(); ++d) {
      std::vector<int> count(static_cast<size_t>(n), 0);
      for (int i = 0; i < n; ++i) {
        double x = s.Point(static_cast<uint64_t>(i))[static_cast<size_t>(d)];
        ASSERT_GE(x, 0.0);
        ASSERT_LT(x, 1.0);
        count[static_cast<size_t>(x * n)]++;
      }
      for (int c = 0; c < n; ++c) ASSERT_EQ(count[static_cast<size_t>(c)], 1) << "k=" << k << " dim=" << d;
    }
  }
}

TEST(SobolTest, FirstPowerOfTwoPointsAreBalancedInEveryDimension) {
  ExpectBalanced(SobolSequence(32, false, 0));
  ExpectBalanced(SobolSequence(32, true, 7));
}

TEST(SobolTest, FirstTwoDimensionsFormAZeroTNet) {
  // Dimensions 1 and 2 of Sobol' are a (0, m, 2)-net: 2^k points, one in each 2^a x 2^(k-a) box.
  for (bool scramble : {false, true}) {
    SobolSequence s(2, scramble, 3);
    const int k = 8, n = 1 << k;
    for (int a = 0; a <= k; ++a) {
      std::set<std::pair<int, int>> boxes;
      for (int i = 0; i < n; ++i) {
        auto p = s.Point(static_cast<uint64_t>(i));
        boxes.insert({static_cast<int>(p[0] * (1 << a)), static_cast<int>(p[1] * (1 << (k - a)))});
      }
      EXPECT_EQ(boxes.size(), static_cast<size_t>(n)) << "a=" << a << " scramble=" << scramble;
    }
  }
}

TEST(SobolTest, KnownUnscrambledPoints) {
  SobolSequence s(3, false, 0);
  const double h = 0x1.0p-33;  // points are cell centres
  EXPECT_DOUBLE_EQ(s.Point(0)[0], h);
  EXPECT_DOUBLE_EQ(s.Point(1)[0], 0.5 + h);
  EXPECT_DOUBLE_EQ(s.Point(1)[1], 0.5 + h);
  EXPECT_DOUBLE_EQ(s.Point(2)[0], 0.25 + h);  // direct (not Gray-code) order: v_2
  EXPECT_DOUBLE_EQ(s.Point(2)[1], 0.75 + h);  // m_2 = 3 for x + 1
  EXPECT_DOUBLE_EQ(s.Point(2)[2], 0.75 + h);  // m_2 = 3 for x^2 + x + 1 (Joe–Kuo)
  EXPECT_DOUBLE_EQ(s.Point(4)[2], 0.375 + h);  // m_3 = 2*3 ^ 4*1 ^ 1 = 3 by the recurrence
}

TEST(SobolTest, ScramblingDependsOnTheSeed) {
  SobolSequence a(5, true, 1), b(5, true, 2), c(5, true, 1);
  EXPECT_NE(a.Point(3), b.Point(3));
  EXPECT_EQ(a.Point(3), c.Point(3));
}

TEST(SobolSamplerTest, CoversTheSpaceEvenly) {
  auto s = MakeSampler(SpecWith({FloatParam("x", 0, 1), IntParam("n", 1, 4), CatParam("c", {"a", "b"})}, "sobol", 5));
  std::map<int64_t, int> ints;
  std::map<std::string, int> cats;
  std::vector<int> x_bins(16, 0);
  for (int i = 0; i < 64; ++i) {
    Params p = *s->Ask(i);
    ints[std::get<int64_t>(p.at("n"))]++;
    cats[std::get<std::string>(p.at("c"))]++;
    x_bins[static_cast<size_t>(std::get<double>(p.at("x")) * 16)]++;
  }
  for (auto [v, c] : ints) EXPECT_EQ(c, 16) << v;
  for (auto [v, c] : cats) EXPECT_EQ(c, 32) << v;
  for (int c : x_bins) EXPECT_EQ(c, 4);
  EXPECT_EQ(*s->Ask(10), *MakeSampler(SpecWith({FloatParam("x", 0, 1), IntParam("n", 1, 4), CatParam("c", {"a", "b"})},
                                              "sobol", 5))->Ask(10));
}

}  // namespace
}  // namespace ladder::search
