// HeroBand: the hero run's predicted loss band and the rule that watches a run against it.
#include "server/hero_band.h"

#include <gtest/gtest.h>

#include <cmath>

namespace ladder::server {
namespace {

v1::MetricPoint ValLoss(int64_t step, double loss) {
  v1::MetricPoint p;
  p.set_step(step);
  (*p.mutable_values())["val_loss"] = loss;
  return p;
}

TEST(HeroBand, APlanWithoutABandIsEmptyAndJudgesNothing) {
  HeroBand band;
  EXPECT_EQ(band.Load(""), "");
  EXPECT_TRUE(band.empty());
  EXPECT_EQ(band.Load(R"({"loss_band": []})"), "");
  EXPECT_TRUE(band.empty());
  EXPECT_FALSE(band.Check(1, ValLoss(100, 9.0)).has_value());
}

TEST(HeroBand, AMalformedPlanNamesTheProblem) {
  HeroBand band;
  EXPECT_EQ(band.Load("[1, 2]"), "not a JSON object");
  EXPECT_NE(band.Load(R"({"stop_outside_band": true})").find("no \"loss_band\""), std::string::npos);
  EXPECT_EQ(band.Load(R"({"loss_band": 3})"), "loss_band: expected [[step, lo, hi], ...]");
  EXPECT_EQ(band.Load(R"({"loss_band": [[0, 1, 2], [5, "x", 1]]})"),
            "loss_band: expected [[step, lo, hi], ...], got [5,\"x\",1]");
  EXPECT_TRUE(band.empty());  // a bad point leaves no half band
}

TEST(HeroBand, ItInterpolatesBetweenStepsAndReportsOnlyChanges) {
  HeroBand band;
  // Out of order on purpose: the band is sorted by step.
  ASSERT_EQ(band.Load(R"({"loss_band": [[200, 1.0, 2.0], [100, 2.0, 4.0]]})"), "");
  EXPECT_FALSE(band.Check(7, ValLoss(50, 99.0)).has_value());   // before the band's first step
  EXPECT_FALSE(band.Check(7, ValLoss(150, 2.9)).has_value());   // inside [1.5, 3.0]: no change
  auto above = band.Check(7, ValLoss(150, 3.1));                // above 3.0 at step 150
  ASSERT_TRUE(above.has_value());
  EXPECT_TRUE(above->outside);
  EXPECT_FALSE(above->stop);  // the plan does not say to stop
  EXPECT_EQ(above->message, "val_loss 3.1 at step 150 is above the predicted band [1.5, 3]");
  EXPECT_FALSE(band.Check(7, ValLoss(160, 3.5)).has_value());  // still outside: said once
  auto back = band.Check(7, ValLoss(400, 1.5));                 // past the last step: its band [1, 2]
  ASSERT_TRUE(back.has_value());
  EXPECT_FALSE(back->outside);
  EXPECT_NE(back->message.find("back inside"), std::string::npos);
  auto nan = band.Check(7, ValLoss(150, std::nan("")));  // a NaN loss is outside, not inside
  ASSERT_TRUE(nan.has_value());
  EXPECT_TRUE(nan->outside);
}

TEST(HeroBand, OnlyARunAboveTheBandIsStoppedAndOnlyWhenThePlanSaysSo) {
  HeroBand band;
  ASSERT_EQ(band.Load(R"({"loss_band": [[0, 1.0, 2.0]], "stop_outside_band": true})"), "");
  auto below = band.Check(1, ValLoss(10, 0.5));
  ASSERT_TRUE(below.has_value());
  EXPECT_TRUE(below->outside);
  EXPECT_FALSE(below->stop);  // better than predicted: only noted
  auto above = band.Check(2, ValLoss(10, 2.5));  // another trial is judged on its own
  ASSERT_TRUE(above.has_value());
  EXPECT_TRUE(above->stop);
}

}  // namespace
}  // namespace ladder::server
