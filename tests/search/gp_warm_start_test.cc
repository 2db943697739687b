// GP-BO warm-started from an earlier search (trials told below 0 before the first Ask): the earlier trials' GP is
// the prior mean and the search's own trials are residuals from it (gp_sampler.cc). A new task whose loss is the
// earlier one's shifted up (a new code version, another data slice) keeps its optimum: its own first trials read
// as a shift, not as evidence against the earlier search's region, and the search stays there.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "search/samplers/sampler.h"
#include "sampler_test_util.h"

namespace ladder::search {
namespace {

using testing::FloatParam;
using testing::SpecWith;

double Earlier(const Params& p) {
  return std::pow(std::get<double>(p.at("x")) - 0.3, 2) + std::pow(std::get<double>(p.at("y")) - 0.7, 2);
}

// How many of `own` trials of the shifted task lie within 0.1 of the optimum (0.3, 0.7), after `told` earlier ones.
int NearTheOptimum(uint64_t seed, int told, int own, double shift) {
  auto sampler = MakeSampler(SpecWith({FloatParam("x", 0, 1), FloatParam("y", 0, 1)}, "gp", seed));
  std::mt19937_64 rng(seed + 1000);
  std::uniform_real_distribution<double> u(0, 1);
  for (int i = 0; i < told; ++i) {
    // The earlier search's trials, crowding about its optimum as a model-based search's do.
    const double r = i < told / 2 ? 0.15 : 1.0;
    Params p = {{"x", std::clamp(0.3 + r * (u(rng) - 0.5), 0.0, 1.0)},
                {"y", std::clamp(0.7 + r * (u(rng) - 0.5), 0.0, 1.0)}};
    sampler->Tell(i - told, p, Earlier(p));
  }
  int near = 0;
  for (int n = 0; n < own; ++n) {
    Params p = *sampler->Ask(n);
    sampler->Tell(n, p, Earlier(p) + shift);
    near += std::sqrt(Earlier(p)) < 0.1;
  }
  return near;
}

TEST(GpWarmStart, AShiftedTaskKeepsTheEarlierSearchsOptimum) {
  for (uint64_t seed = 0; seed < 6; ++seed) {
    EXPECT_GE(NearTheOptimum(seed, 60, 10, 3.0), 8) << "seed " << seed;
  }
}

}  // namespace
}  // namespace ladder::search
