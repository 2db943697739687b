// What `ladder search show` says about a hero run: its plan, where its live val_loss stands against the band,
// and the coordinator's band warnings.
#include "cli/hero_status.h"

#include <gtest/gtest.h>

#include <sstream>

namespace ladder::cli {
namespace {

const char* kPlan =
    R"({"global_batch": 512, "ramp": [], "peak_lr": [0.3, 0.2, 0.45], "warmup_steps": 6, "decay": "cosine",
        "optimizer": "sgd", "steps": 60, "final_loss": [0.18, 0.16, 0.2], "lr_rule": "surface_fit",
        "loss_band": [[6, 0.5, 0.9], [60, 0.16, 0.2]], "stop_outside_band": false})";

v1::Trial TrialWith(std::vector<std::pair<int64_t, double>> points) {
  v1::Trial t;
  t.set_id(7);
  for (auto [step, loss] : points) {
    auto* m = t.add_metrics();
    m->set_step(step);
    (*m->mutable_values())["val_loss"] = loss;
    (*m->mutable_values())["train_loss"] = loss + 1;
  }
  auto* last = t.add_metrics();  // a later point without val_loss: the latest val_loss is what is judged
  last->set_step(points.empty() ? 1 : points.back().first + 1);
  (*last->mutable_values())["train_loss"] = 0.1;
  return t;
}

v1::JournalEntry Entry(const std::string& kind, const std::string& detail) {
  v1::JournalEntry e;
  e.set_kind(kind);
  e.set_trial_id(7);
  e.set_detail(detail);
  e.set_time_unix(1.7e9);
  return e;
}

TEST(HeroStatus, SaysWhereTheLiveLossStandsAgainstTheBandAtItsStep) {
  // Step 33 is halfway between the band's points: [0.33, 0.55].
  auto above = ReadHeroStatus(kPlan, TrialWith({{20, 0.9}, {33, 0.6}}), {});
  ASSERT_TRUE(above.step.has_value());
  EXPECT_EQ(*above.step, 33);
  ASSERT_TRUE(above.band_now.has_value());
  EXPECT_NEAR(above.band_now->first, 0.33, 1e-9);
  EXPECT_NEAR(above.band_now->second, 0.55, 1e-9);
  std::ostringstream out;
  PrintHeroStatus(above, out);
  EXPECT_NE(out.str().find("val_loss 0.6 at step 33: above the band [0.33, 0.55]"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("peak LR        0.3 [0.2, 0.45]   (rule surface_fit)"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("final val_loss 0.18 [0.16, 0.2] (predicted)"), std::string::npos) << out.str();
  EXPECT_EQ(HeroStatusJson(above)["live"]["position"], "above");

  EXPECT_EQ(HeroStatusJson(ReadHeroStatus(kPlan, TrialWith({{60, 0.17}}), {}))["live"]["position"], "inside");
  EXPECT_EQ(HeroStatusJson(ReadHeroStatus(kPlan, TrialWith({{90, 0.1}}), {}))["live"]["position"], "below");
  auto early = ReadHeroStatus(kPlan, TrialWith({{3, 2.0}}), {});
  EXPECT_FALSE(early.band_now.has_value());
  EXPECT_EQ(HeroStatusJson(early)["live"]["position"], "before the band starts");
  auto none = ReadHeroStatus(kPlan, std::nullopt, {});
  EXPECT_TRUE(HeroStatusJson(none)["live"].is_null());
  std::ostringstream waiting;
  PrintHeroStatus(none, waiting);
  EXPECT_NE(waiting.str().find("no val_loss reported yet"), std::string::npos) << waiting.str();
}

TEST(HeroStatus, ShowsTheBandWarningsOfTheJournalAndNothingElse) {
  auto h = ReadHeroStatus(kPlan, TrialWith({{33, 0.6}}),
                          {Entry("trial_requeued", "node lost"),
                           Entry("hero_outside_band", "val_loss 0.6 at step 33 is above the predicted band"),
                           Entry("hero_inside_band", "val_loss 0.4 at step 40 is back inside the predicted band")});
  ASSERT_EQ(h.warnings.size(), 2u);
  std::ostringstream out;
  PrintHeroStatus(h, out);
  EXPECT_NE(out.str().find("warning"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("trial 7: val_loss 0.6 at step 33 is above the predicted band"), std::string::npos)
      << out.str();
  EXPECT_EQ(out.str().find("node lost"), std::string::npos) << out.str();
  EXPECT_EQ(HeroStatusJson(h)["band_warnings"].size(), 2u);
}

TEST(HeroStatus, APlanWithoutABandOrWithABadOneSaysSo) {
  auto none = ReadHeroStatus(R"({"global_batch": 512, "loss_band": []})", TrialWith({{10, 0.5}}), {});
  std::ostringstream out;
  PrintHeroStatus(none, out);
  EXPECT_NE(out.str().find("band           none"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("val_loss 0.5 at step 10\n"), std::string::npos) << out.str();
  auto bad = ReadHeroStatus(R"({"loss_band": [[1, 2]]})", TrialWith({{10, 0.5}}), {});
  EXPECT_NE(bad.band_error.find("loss_band: expected [[step, lo, hi], ...]"), std::string::npos) << bad.band_error;
  EXPECT_EQ(HeroStatusJson(bad)["band_error"], bad.band_error);
}

}  // namespace
}  // namespace ladder::cli
