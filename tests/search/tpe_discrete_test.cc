// TPE on discrete (int) parameters: the Parzen estimator is a distribution over an int's values (each value's
// probability is a component's mass over the value's share, with a bandwidth of at least one value), and on
// a noisy ordinal problem like the hpobench tables that makes ladder's TPE end near the optimum more often.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "search/samplers/parzen.h"
#include "search/samplers/sampler.h"
#include "search/core/unit_space.h"
#include "sampler_test_util.h"

namespace ladder::search {
namespace {

using testing::FloatParam;
using testing::IntParam;
using testing::SpecWith;

// Sum over an int's values of exp(LogPdf): 1 for a distribution over the values.
double TotalProbability(const UnitSpace& unit, const std::vector<std::vector<double>>& obs) {
  std::vector<const std::vector<double>*> points;
  for (const auto& o : obs) points.push_back(&o);
  internal::ParzenEstimator pe(unit, {0}, points, internal::DefaultTpeWeights(points.size()));
  const auto low = static_cast<int64_t>(unit.param(0).low), high = static_cast<int64_t>(unit.param(0).high);
  double total = 0;
  for (int64_t v = low; v <= high; ++v) total += std::exp(pe.LogPdf({*unit.ToUnit(0, Value{v})}));
  return total;
}

TEST(TpeDiscreteTest, IntValuesGetProbabilitiesThatSumToOne) {
  for (bool log : {false, true}) {
    UnitSpace unit(SearchSpace{{IntParam("n", 1, 10, log)}});
    std::vector<std::vector<double>> obs;
    for (int64_t v : {3, 3, 3, 3, 4, 9, 1}) obs.push_back({*unit.ToUnit(0, Value{v})});  // repeats: narrow gaps
    EXPECT_NEAR(TotalProbability(unit, obs), 1.0, 1e-9) << "log " << log;
    EXPECT_NEAR(TotalProbability(unit, {}), 1.0, 1e-9) << "prior only, log " << log;
  }
}

TEST(TpeDiscreteTest, FloatDensityIsUnchanged) {
  // A float keeps the density: a single observation at 0.5 of [0, 1] with the prior; the log density there
  // is finite and above the uniform's 0 (the estimator did not turn into a mass).
  UnitSpace unit(SearchSpace{{FloatParam("x", 0, 1)}});
  std::vector<double> o = {0.5};
  internal::ParzenEstimator pe(unit, {0}, {&o}, {1.0});
  EXPECT_GT(pe.LogPdf({0.5}), 0.0);
}

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Three ordinal parameters of ten values, mean 0.01 * squared distance to (7, 2, 5); each evaluation adds one
// of five fixed noise values per configuration (uniform in +-0.025), picked by (seed, trial) as the bench's
// tables do. Neighbouring values are close, single evaluations noisy: the hpobench tables' shape.
struct NoisyOrdinal {
  static double Mean(const Params& p) {
    const int64_t a = std::get<int64_t>(p.at("p0")), b = std::get<int64_t>(p.at("p1"));
    const int64_t c = std::get<int64_t>(p.at("p2"));
    return 0.01 * static_cast<double>((a - 7) * (a - 7) + (b - 2) * (b - 2) + (c - 5) * (c - 5));
  }
  static double Evaluate(const Params& p, uint64_t seed, int64_t trial) {
    const auto idx = static_cast<uint64_t>(std::get<int64_t>(p.at("p0")) * 100 + std::get<int64_t>(p.at("p1")) * 10 +
                                           std::get<int64_t>(p.at("p2")));
    const uint64_t column = SplitMix64((seed << 20) ^ static_cast<uint64_t>(trial)) % 5;
    const double u = static_cast<double>(SplitMix64(idx * 5 + column) >> 11) * 0x1.0p-53;
    return Mean(p) + 0.05 * (u - 0.5);
  }
};

TEST(TpeDiscreteTest, NoisyOrdinalProblemEndsNearTheOptimumMoreOften) {
  // 60 fixed seeds, 50 trials each; a run counts when its incumbent (best observed value) has a mean within
  // one step of one coordinate of the optimum (<= 0.01). Measured: 31 of 60 with the value masses and the
  // one-value bandwidth floor, 22 of 60 with the density and the 1/(n+2) floor they replaced.
  int near = 0;
  for (uint64_t seed = 0; seed < 60; ++seed) {
    SearchSpec spec = SpecWith({IntParam("p0", 0, 9), IntParam("p1", 0, 9), IntParam("p2", 0, 9)}, "tpe", seed);
    auto s = MakeSampler(spec);
    double best = 0;
    Params incumbent;
    for (int64_t n = 0; n < 50; ++n) {
      Params p = *s->Ask(n);
      const double y = NoisyOrdinal::Evaluate(p, seed, n);
      if (n == 0 || y < best) {
        best = y;
        incumbent = p;
      }
      s->Tell(n, p, y);
    }
    near += NoisyOrdinal::Mean(incumbent) <= 0.0101 ? 1 : 0;
  }
  EXPECT_GE(near, 28);
}

}  // namespace
}  // namespace ladder::search
