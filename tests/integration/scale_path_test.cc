// The whole scale-extrapolation path as the README gives it, with the shipped example spec
// (data/specs/scales-synthetic.yaml) on a real coordinator and worker: the scales search, `ladder promote
// --dry-run`, and the promoted hero run followed with --wait, whose live loss ends inside its predicted band and
// whose band warnings, if any, reach the user following it as they reach `ladder search show`.
#include <gtest/gtest.h>

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

TEST(ScalePath, TheExampleSweepPlansAHeroRunWhoseLiveLossEndsInsideItsBand) {
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

  auto hero = RunCommand(cluster.Ladder({"promote", "1", "--batch", "1024", "--wait"}), dir);
  ASSERT_EQ(hero.exit_code, 0) << hero.out << hero.err;
  EXPECT_NE(hero.out.find("search 2 'synthetic-scales-hero': completed"), std::string::npos) << hero.out;

  auto shown = RunCommand(cluster.Ladder({"--json", "search", "show", "2"}), dir);
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  auto status = nlohmann::json::parse(shown.out)["hero"];
  ASSERT_TRUE(status["live"].is_object()) << shown.out;
  EXPECT_EQ(status["live"]["step"], status["plan"]["steps"]) << shown.out;
  EXPECT_EQ(status["live"]["position"], "inside") << "the hero's final val_loss against its stated interval\n"
                                                   << shown.out;
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
