// The whole scale-extrapolation path as the guide gives it (docs/guide/hero-runs.md), with the shipped example spec
// (data/specs/scales-synthetic.yaml) on a real coordinator, worker and ladder-train: the scales search, `ladder
// promote --dry-run` (flagged: it names the probe that would decide), and plain `ladder promote --wait`, which
// climbs first (probes: auto: the probe's real trials at batch 1024 by gradient accumulation, its extensions,
// refits) and then runs the hero run, whose final loss ends inside the plan's stated interval and whose band
// warnings, if any, reach the user following it as they reach `ladder search show`.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/integration/local_cluster.h"

namespace ladder::testing {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ScalePath, TheExampleSweepClimbsThenItsHeroRunEndsInsideTheStatedFinalLossInterval) {
  TempDir dir("scale-path");
  LocalCluster cluster;
  ASSERT_NO_FATAL_FAILURE(cluster.Start(dir, false, "r1"));
  const std::string spec = std::string(LADDER_TEST_SOURCE_DIR) + "/data/specs/scales-synthetic.yaml";
  ASSERT_FALSE(ReadFile(spec).empty()) << spec;
  auto sweep = RunCommand(cluster.Ladder({"search", "start", spec, "--wait"}), dir);
  ASSERT_EQ(sweep.exit_code, 0) << sweep.out << sweep.err;

  auto dry = RunCommand(cluster.Ladder({"--json", "promote", "1", "--batch", "1024", "--dry-run"}), dir);
  ASSERT_EQ(dry.exit_code, 0) << dry.out << dry.err;
  auto plan = nlohmann::json::parse(dry.out)["plan"];
  EXPECT_EQ(plan["global_batch"], 1024);
  EXPECT_EQ(plan["lr_rule"], "surface_fit") << dry.out;
  EXPECT_TRUE(plan["warnings"].empty()) << "3 swept batches, every optimum bracketed, 16x: " << plan["warnings"];
  ASSERT_TRUE(plan["final_loss"][1].is_number()) << "the example predicts the final loss with an interval\n" << dry.out;
  ASSERT_FALSE(plan["loss_band"].empty()) << dry.out;
  const auto& verdict = plan["extrapolation"]["verdict"];
  ASSERT_TRUE(verdict["flagged"].get<bool>()) << "the sweep alone cannot tell the laws apart at 16x\n" << verdict;
  ASSERT_TRUE(verdict["next_probe"].is_object()) << verdict;
  EXPECT_LE(verdict["next_probe"]["node_hours"].get<double>(), verdict["budget_node_hours"].get<double>())
      << "the example's probe budget holds the probe it names, so plain promote climbs\n" << verdict;
  EXPECT_TRUE(plan["extrapolation"]["probes"].empty());

  // Plain promote (probes: auto): the climb, then the hero run, followed to its end.
  auto hero = RunCommand(cluster.Ladder({"promote", "1", "--batch", "1024", "--wait"}), dir);
  ASSERT_EQ(hero.exit_code, 0) << hero.out << hero.err;
  const int64_t probe_batch = verdict["next_probe"]["batch"];
  EXPECT_NE(hero.out.find("probe at batch " + std::to_string(probe_batch)), std::string::npos) << hero.out;
  EXPECT_NE(hero.out.find("search 2 'synthetic-scales-hero': completed"), std::string::npos) << hero.out;

  // The probe's trials: real ladder-train runs of search 1, marked, accumulating micro-batches of the sweep's size.
  auto listed = RunCommand(cluster.Ladder({"--json", "trials", "1"}), dir);
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  std::vector<int> probe_numbers;
  const auto trials = nlohmann::json::parse(listed.out)["trials"];
  for (const auto& t : trials) {
    if (!t["probe"].get<bool>()) continue;
    probe_numbers.push_back(t["number"]);
    EXPECT_EQ(t["state"], "TRIAL_COMPLETED") << t;
    EXPECT_EQ(t["micro_batches"], probe_batch / 64) << "the sweep's largest batch is 64: " << t;
    EXPECT_EQ(t["last_metrics"]["values"]["global_batch"], probe_batch) << t;
  }
  ASSERT_GE(probe_numbers.size(), 3u) << "at least the probe's 3 learning rates\n" << listed.out;

  auto shown = RunCommand(cluster.Ladder({"--json", "search", "show", "2"}), dir);
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  auto status = nlohmann::json::parse(shown.out)["hero"];
  // The hero's plan lists every probe trial that ran.
  std::vector<int> planned;
  for (const auto& r : status["plan"]["extrapolation"]["probes"]) {
    EXPECT_EQ(r["micro_batches"], r["batch"].get<int64_t>() / 64) << r;
    for (const auto& n : r["trials"]) planned.push_back(n);
  }
  std::sort(planned.begin(), planned.end());
  std::sort(probe_numbers.begin(), probe_numbers.end());  // `trials` lists them best first
  EXPECT_EQ(planned, probe_numbers) << status["plan"]["extrapolation"]["probes"];

  ASSERT_TRUE(status["live"].is_object()) << shown.out;
  EXPECT_EQ(status["live"]["step"], status["plan"]["steps"]) << shown.out;
  const double final_loss = status["live"]["val_loss"];
  const auto& stated = status["plan"]["final_loss"];
  EXPECT_GE(final_loss, stated[1].get<double>()) << "the hero's final val_loss against its stated interval\n" << shown.out;
  EXPECT_LE(final_loss, stated[2].get<double>()) << "the hero's final val_loss against its stated interval\n" << shown.out;
  EXPECT_EQ(status["live"]["position"], "inside") << shown.out;
  // Every band warning the coordinator journalled was printed to the user following the run.
  for (const auto& w : status["band_warnings"]) {
    EXPECT_NE(hero.out.find(w["detail"].get<std::string>()), std::string::npos) << w << "\n" << hero.out;
  }
  auto text = RunCommand(cluster.Ladder({"search", "show", "2"}), dir);
  EXPECT_NE(text.out.find("hero plan (intervals 90% nominal):"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(": inside the band ["), std::string::npos) << text.out;
}

}  // namespace
}  // namespace ladder::testing
