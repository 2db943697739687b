// The noisy quadratic model's closed forms against SGD run step by step, and the regimes its dials select.
#include "bench/noisy_quadratic.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace ladder::bench {
namespace {

// SGD on the model, step by step, with its own noise draws: the final loss of one run.
double SimulateSgd(const NoisyQuadratic& m, double lr, int64_t batch, std::mt19937_64& rng) {
  std::normal_distribution<double> normal;
  std::vector<double> theta(m.dims);
  for (auto& t : theta) t = m.init_scale * normal(rng);
  for (int64_t s = 0; s < m.Steps(batch); ++s) {
    for (int i = 0; i < m.dims; ++i) {
      const double h = m.Curvature(i);
      const double xi = std::sqrt(m.noise * h / static_cast<double>(batch)) * normal(rng);
      theta[i] -= lr * (h * theta[i] + xi);
    }
  }
  double loss = m.floor_loss;
  for (int i = 0; i < m.dims; ++i) loss += 0.5 * m.Curvature(i) * theta[i] * theta[i];
  return loss;
}

NoisyQuadratic Small() {
  NoisyQuadratic m;
  m.dims = 8;
  m.alpha = 1.0;
  m.noise = 2.0;
  m.floor_loss = 0.25;
  m.examples = 400;
  m.epochs = 1;
  return m;
}

TEST(NoisyQuadratic, ClosedFormMeanAndSpreadMatchSgdRunStepByStep) {
  const NoisyQuadratic m = Small();
  std::mt19937_64 rng(7);
  for (const auto& [lr, batch] : std::vector<std::pair<double, int64_t>>{{0.05, 4}, {0.4, 8}, {1.5, 40}}) {
    constexpr int kRuns = 4000;
    double sum = 0, sum2 = 0;
    for (int k = 0; k < kRuns; ++k) {
      const double l = SimulateSgd(m, lr, batch, rng);
      sum += l, sum2 += l * l;
    }
    const double mean = sum / kRuns, sd = std::sqrt(sum2 / kRuns - mean * mean);
    // 5 standard errors of the mean; the spread within 8% (its own standard error is under 3% here).
    EXPECT_NEAR(mean, m.ExpectedLoss(lr, batch), 5 * sd / std::sqrt(kRuns)) << "lr " << lr << " batch " << batch;
    EXPECT_NEAR(sd, m.LossSd(lr, batch), 0.08 * sd) << "lr " << lr << " batch " << batch;
  }
}

TEST(NoisyQuadratic, SampledLossesAveragePairAndReproduceBySeed) {
  const NoisyQuadratic m = Small();
  double sum = 0;
  constexpr int kSeeds = 20000;
  for (int s = 0; s < kSeeds; ++s) sum += m.SampledLoss(0.4, 8, s);
  EXPECT_NEAR(sum / kSeeds, m.ExpectedLoss(0.4, 8), 5 * m.LossSd(0.4, 8) / std::sqrt(kSeeds));
  EXPECT_EQ(m.SampledLoss(0.4, 8, 3), m.SampledLoss(0.4, 8, 3));
  EXPECT_NE(m.SampledLoss(0.4, 8, 3), m.SampledLoss(0.4, 8, 4));
}

TEST(NoisyQuadratic, AboveTheStabilityEdgeARunDiverges) {
  NoisyQuadratic m = Small();
  m.examples = 100000;
  EXPECT_TRUE(std::isinf(m.ExpectedLoss(2.2 / m.h_max, 64)));
  EXPECT_TRUE(std::isinf(m.SampledLoss(2.2 / m.h_max, 64, 1)));
  EXPECT_TRUE(std::isfinite(m.ExpectedLoss(1.9 / m.h_max, 64)));
}

TEST(NoisyQuadratic, TheOracleIsTheMinimumOfTheExpectedLoss) {
  const NoisyQuadratic m = Small();
  for (int64_t batch : {4, 16, 64}) {
    const auto o = m.Oracle(batch);
    EXPECT_NEAR(o.loss, m.ExpectedLoss(o.lr, batch), 1e-12);
    for (double f : {0.9, 1.1, 0.5, 2.0}) {
      EXPECT_LE(o.loss, m.ExpectedLoss(o.lr * f, batch)) << "batch " << batch << " factor " << f;
    }
  }
}

// The regimes: the best LR grows about linearly with the batch while the noise dominates, and levels off below
// the stability edge once few steps remain.
TEST(NoisyQuadratic, TheBestLrGrowsLinearlyAtSmallBatchesAndLevelsOffBelowTheEdge) {
  NoisyQuadratic m;
  m.dims = 100;
  m.noise = 10.0;
  m.examples = 1000000;
  m.epochs = 1;
  const double small = std::log2(m.Oracle(32).lr / m.Oracle(16).lr);
  const double large = std::log2(m.Oracle(1 << 17).lr / m.Oracle(1 << 16).lr);
  EXPECT_GT(small, 0.7) << "octaves per doubling of the batch, noise-dominated";
  EXPECT_LT(large, 0.2) << "octaves per doubling of the batch, curvature-limited";
  EXPECT_LT(m.Oracle(1 << 17).lr, 2.0 / m.h_max);
}

}  // namespace
}  // namespace ladder::bench
