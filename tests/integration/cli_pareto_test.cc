// Several objectives end to end, as a user runs them against a real ladder-server and ladder-worker on 127.0.0.1: a
// search with objectives: (its four trials known points, so the front is known) run to its end; ladder trials
// --pareto lists the coordinator's front with every objective's value (text and JSON), ladder trials marks it,
// and ladder promote refuses without --pick or --weights, listing the front.
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/integration/system_support.h"
#include "tests/integration/test_support.h"

namespace ladder {
namespace {

std::string Bin(const std::string& name) {
  const char* d = std::getenv("LADDER_BIN_DIR");
  return std::string(d ? d : LADDER_TEST_BIN_DIR) + "/" + name;
}

// (loss, cost) = (x, y): trials 0, 1 and 2 trade one against the other; 3 is dominated by 1.
const char* kSpec = R"(name: trade
objectives: [{metric: loss, mode: min}, {metric: cost, mode: min}]
budget: {max_trials: 4, parallelism: 1}
sampler: random
command: [/bin/sh, -c, 'echo "{{\"loss\": {x}, \"cost\": {y}}}"']
space:
  x: {type: float, low: 0, high: 1}
  y: {type: float, low: 0, high: 1}
enqueue: [{x: 0.1, y: 0.9}, {x: 0.5, y: 0.5}, {x: 0.9, y: 0.1}, {x: 0.6, y: 0.6}]
)";

TEST(CliPareto, TheCoordinatorsFrontIsListedMarkedAndPromoteAsksWhichPoint) {
  testing::TempDir dir("cli-pareto");
  const std::string address = "127.0.0.1:" + std::to_string(testing::FreePort());
  testing::Child server, worker;
  testing::Spawn(&server, {Bin("ladder-server"), "--listen", address, "--db", (dir / "ladder.db").string(),
                           "--no-token"}, true);
  ASSERT_EQ(testing::ReadListenAddress(server), address);
  testing::Spawn(&worker, {Bin("ladder-worker"), "--server", address, "--node-id", "a", "--slots", "1",
                           "--trial-dir", (dir / "trials").string()}, false);
  std::ofstream(dir / "trade.yaml") << kSpec;
  auto ladder = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {Bin("ladder"), "--server", address});
    return testing::RunCommand(args, dir);
  };
  auto validate = ladder({"search", "validate", "trade.yaml", "--no-command-check"});
  EXPECT_NE(validate.out.find("sampler random, objectives min loss min cost"), std::string::npos) << validate.out;
  auto run = ladder({"search", "start", "trade.yaml", "--wait"});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;

  auto text = ladder({"trials", "1", "--pareto"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  for (const char* part : {"objectives: min loss, min cost; Pareto front: 3 trials (ladder trials 1 --pareto)",
                           "Pareto front: 3 trials (min loss, min cost)", "trial  loss (min)  cost (min)  x    y",
                           "0      0.1         0.9         0.1  0.9", "2      0.9         0.1         0.9  0.1"}) {
    EXPECT_NE(text.out.find(part), std::string::npos) << part << "\n" << text.out;
  }
  EXPECT_EQ(text.out.find("0.6"), std::string::npos) << "trial 3 is not on the front\n" << text.out;
  auto json = ladder({"trials", "1", "--pareto", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  ASSERT_EQ(j["front"].size(), 3u) << json.out;
  const double want[][2] = {{0.1, 0.9}, {0.5, 0.5}, {0.9, 0.1}};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(j["front"][i]["trial"], i);
    EXPECT_DOUBLE_EQ(j["front"][i]["objectives"]["loss"].get<double>(), want[i][0]);
    EXPECT_DOUBLE_EQ(j["front"][i]["objectives"]["cost"].get<double>(), want[i][1]);
  }
  auto all = ladder({"trials", "1", "--json"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  for (const auto& t : nlohmann::json::parse(all.out)["trials"]) {
    EXPECT_EQ(t["pareto"].get<bool>(), t["number"].get<int>() != 3) << t.dump();
    EXPECT_EQ(t["objectives"].size(), 2u) << t.dump();
    EXPECT_TRUE(t["enqueued"].get<bool>()) << "every trial is one of the spec's known points";
  }
  auto board = ladder({"trials", "1"});
  EXPECT_NE(board.out.find("rank  trial  state      front  loss  cost"), std::string::npos) << board.out;
  EXPECT_NE(board.out.find("enqueued"), std::string::npos) << "the note of a known point\n" << board.out;

  auto ask = ladder({"promote", "1", "--dry-run"});
  EXPECT_EQ(ask.exit_code, 2) << ask.out;
  EXPECT_NE(ask.err.find("search 1 has 2 objectives (min loss, min cost): say which point of its Pareto front to "
                         "plan from, --pick TRIAL or --weights"),
            std::string::npos) << ask.err;
  EXPECT_NE(ask.err.find("  trial 1: loss 0.5, cost 0.5\n"), std::string::npos) << ask.err;
  auto off = ladder({"promote", "1", "--pick", "3", "--dry-run"});
  EXPECT_EQ(off.exit_code, 2);
  EXPECT_NE(off.err.find("--pick 3: trial 3 is not on the Pareto front of search 1"), std::string::npos) << off.err;
  worker.Kill(SIGTERM);
  server.Kill(SIGTERM);
}

}  // namespace
}  // namespace ladder
