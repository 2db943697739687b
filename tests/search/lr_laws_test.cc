// The candidate LR laws fitted to a loss surface (search/scaling/lr_laws.h): synthetic surfaces whose optimum
// follows a known law, so that the law that generated them must fit best and the others be told apart.
#include "search/scaling/lr_laws.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace ladder::search {
namespace {

// A sweep whose loss is 1 + k (x − x*(B))² (x = log2 lr) times a seed's factor, plus a little noise per run:
// half-octave LRs ±2 octaves around x*(B), 3 seeds.
std::vector<ScaleTrial> Surface(const std::vector<int64_t>& batches, const std::function<double(double)>& xstar,
                                const std::string& optimizer = "sgd", double sharpness = 0) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0, 0.002);
  std::vector<ScaleTrial> out;
  for (int64_t b : batches) {
    const double xs = xstar(static_cast<double>(b));
    const double centre = std::round(2 * xs) / 2;
    for (int seed = 1; seed <= 3; ++seed) {
      for (int i = -4; i <= 4; ++i) {
        ScaleTrial t;
        t.id = "b" + std::to_string(b) + "-" + std::to_string(i) + "-" + std::to_string(seed);
        t.global_batch = b, t.seed = seed, t.optimizer = optimizer, t.sharpness = sharpness, t.momentum = 0;
        const double x = centre + 0.5 * i;
        t.peak_lr = std::exp2(x);
        t.final_loss = (1.0 + 0.05 * seed) * (1 + 0.3 * (x - xs) * (x - xs)) + noise(rng);
        out.push_back(t);
      }
    }
  }
  return out;
}

double Linear(double b) { return -8 + std::log2(b / 16); }
double Saturating(double b) { return -1 - std::log2(1 + 128 / b); }  // ε_max = 0.5, B* = 128

const LawFit* Find(const LawSet& set, const std::string& name) {
  for (const LawFit& l : set.laws) {
    if (l.name == name) return &l;
  }
  return nullptr;
}

TEST(LrLaws, PowerLawRecoversTheSlopeOfALinearSurfaceAndTheTargetLiesInsideTheInterval) {
  auto set = FitLaws(Surface({16, 32, 64, 128, 256}, Linear));
  ASSERT_TRUE(set.ok()) << set.error;
  const LawFit* power = Find(*set.value, "power");
  ASSERT_NE(power, nullptr);
  EXPECT_NEAR(power->params.shape, 1.0, 0.03);
  EXPECT_NEAR(power->Log2Lr(256), Linear(256), 0.05);
  EXPECT_TRUE(power->consistent);
  const LrPosterior p = PosteriorAt(*set.value, Mixture(*set.value), 1024);
  EXPECT_NEAR(p.log2_lr, Linear(1024), 0.25);
  EXPECT_LE(p.lo90, Linear(1024));
  EXPECT_GE(p.hi90, Linear(1024));
  EXPECT_LE(p.lo90, p.lo80);
  EXPECT_GE(p.hi90, p.hi80);
}

TEST(LrLaws, ASaturatingSurfaceAcrossItsBendRejectsThePowerLaw) {
  auto set = FitLaws(Surface({16, 32, 64, 128, 256, 512, 1024}, Saturating));
  ASSERT_TRUE(set.ok()) << set.error;
  const LawFit* sat = Find(*set.value, "saturating");
  const LawFit* power = Find(*set.value, "power");
  ASSERT_TRUE(sat && power);
  EXPECT_EQ(set.value->Best(), sat);
  EXPECT_FALSE(power->consistent) << "delta " << power->delta;
  EXPECT_NEAR(sat->params.shape, 7.0, 0.3);  // log2 B* = log2 128
  const LrPosterior p = PosteriorAt(*set.value, Mixture(*set.value), 8192);
  EXPECT_NEAR(p.log2_lr, Saturating(8192), 0.15);
  EXPECT_EQ(p.law_lo, p.law_hi) << "only the saturating law is consistent";
}

TEST(LrLaws, SurgeOnlyForAdamAndCappedLawsOnlyWhereTheEdgeWasMeasured) {
  auto sgd = FitLaws(Surface({16, 64, 256}, Linear), {.bootstrap = 4});
  ASSERT_TRUE(sgd.ok());
  EXPECT_EQ(Find(*sgd.value, "surge"), nullptr);
  EXPECT_EQ(Find(*sgd.value, "power+edge"), nullptr);
  auto adam = FitLaws(Surface({16, 64, 256}, Linear, "adamw"), {.bootstrap = 4});
  ASSERT_TRUE(adam.ok());
  EXPECT_NE(Find(*adam.value, "surge"), nullptr);
  auto edged = FitLaws(Surface({16, 64, 256}, Linear, "sgd", 4.0), {.bootstrap = 4});
  ASSERT_TRUE(edged.ok());
  ASSERT_NE(Find(*edged.value, "power+edge"), nullptr);
  EXPECT_NEAR(edged.value->edge_log2, -1.0, 1e-12);  // 2 (1 + 0) / 4
  // Far past the data the capped law stops below the edge; the posterior never goes above it.
  const LawFit* capped = Find(*edged.value, "power+edge");
  EXPECT_LE(capped->Log2Lr(1 << 24), edged.value->cap_log2 + 1e-12);
  const LrPosterior p = PosteriorAt(*edged.value, Mixture(*edged.value), 1 << 24);
  EXPECT_LE(p.hi90, edged.value->edge_log2 + 1e-12);
  EXPECT_LE(p.log2_lr, edged.value->cap_log2 + 1e-12);
}

TEST(LrLaws, SeedsAreResampledAndTheDrawsGiveAnIntervalDeterministically) {
  const auto trials = Surface({16, 32, 64, 128}, Linear);
  auto a = FitLaws(trials, {.seed = 3, .bootstrap = 40});
  auto b = FitLaws(trials, {.seed = 3, .bootstrap = 40});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a.value->seeds, 3);
  ASSERT_EQ(a.value->laws[0].draws.size(), 40u);
  for (size_t i = 0; i < 40; ++i) EXPECT_EQ(a.value->laws[0].draws[i].level, b.value->laws[0].draws[i].level);
  const LrPosterior p = PosteriorAt(*a.value, Mixture(*a.value), 2048);
  EXPECT_LT(p.lo80, p.hi80);
  EXPECT_GT(p.hi90 - p.lo90, 0.05);
  // No bootstrap: the mixture is the full fits alone.
  auto none = FitLaws(trials, {.bootstrap = 0});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(Mixture(*none.value).size(), none.value->laws.size());
}

TEST(LrLaws, TooLittleDataIsAnErrorNotACrash) {
  EXPECT_FALSE(FitLaws({}).ok());
  auto one = FitLaws(Surface({64}, Linear));
  ASSERT_FALSE(one.ok());
  EXPECT_NE(one.error.find("fewer than 2 batch sizes"), std::string::npos) << one.error;
  auto bad = Surface({16, 64}, Linear);
  bad[0].peak_lr = -1;
  auto r = FitLaws(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error.find(bad[0].id), std::string::npos) << r.error;
}

TEST(LrLaws, RegretGrowsWithTheSpreadOfTheDrawsAndTheCurvature) {
  auto set = FitLaws(Surface({16, 32, 64, 128, 256}, Linear));
  ASSERT_TRUE(set.ok());
  // ln(1 + 0.3 d²) over |d| <= 1 octave: a curvature between 0.26 (its chord at 1 octave) and 0.3 (at 0).
  EXPECT_GT(set.value->k_rel.back(), 0.2);
  EXPECT_LT(set.value->k_rel.back(), 0.32);
  const LrPosterior near = PosteriorAt(*set.value, Mixture(*set.value), 512);
  const LrPosterior far = PosteriorAt(*set.value, Mixture(*set.value), 1 << 16);
  EXPECT_GE(far.hi90 - far.lo90, near.hi90 - near.lo90);
  EXPECT_GE(far.regret_p80, near.regret_p80);
  EXPECT_GE(near.regret_p80, 0);
}

TEST(LrLaws, WeightedQuantileIsTheWeightedInverseCdf) {
  EXPECT_EQ(WeightedQuantile({{1, 1}, {2, 1}, {3, 2}}, 0.5), 2);
  EXPECT_EQ(WeightedQuantile({{1, 1}, {2, 1}, {3, 2}}, 0.6), 3);
  EXPECT_TRUE(std::isnan(WeightedQuantile({}, 0.5)));
}

}  // namespace
}  // namespace ladder::search
