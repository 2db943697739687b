// Several objectives end to end, as a user runs them against a real ladder-server and ladder-worker on 127.0.0.1: a
// search with objectives: (its four trials known points, so the front is known) run to its end; ladder trials
// --pareto lists the coordinator's front with every objective's value (text and JSON), ladder trials marks it,
// and ladder promote refuses without --pick or --weights, listing the front; on a batch x LR sweep whose trials
// print a synthetic curve, promote plans from the point --weights or --pick chooses and says so (text and JSON).
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>

#include "tests/integration/system_support.h"
#include "tests/integration/test_support.h"
#include "tests/integration/tmux_support.h"
#include "tests/integration/trade_spec.h"

namespace ladder {
namespace {

std::string Bin(const std::string& name) {
  const char* d = std::getenv("LADDER_BIN_DIR");
  return std::string(d ? d : LADDER_TEST_BIN_DIR) + "/" + name;
}

// A ladder-server (no token) and one ladder-worker with one slot on 127.0.0.1, in a temp dir; Ladder runs the CLI
// against them there.
struct LocalPair {
  explicit LocalPair(const char* name) : dir(name), address("127.0.0.1:" + std::to_string(testing::FreePort())) {
    testing::Spawn(&server, {Bin("ladder-server"), "--listen", address, "--db", (dir / "ladder.db").string(),
                             "--no-token"}, true);
    listening = testing::ReadListenAddress(server) == address;
    testing::Spawn(&worker, {Bin("ladder-worker"), "--server", address, "--node-id", "a", "--slots", "1",
                             "--trial-dir", (dir / "trials").string()}, false);
  }
  testing::CommandResult Ladder(std::vector<std::string> args) {
    args.insert(args.begin(), {Bin("ladder"), "--server", address});
    return testing::RunCommand(args, dir);
  }
  testing::TempDir dir;
  std::string address;
  testing::Child server, worker;
  bool listening = false;
};

// ladder watch in tmux, v: the Pareto view of the search's four trials (loss, cost) = (0.1, 0.9), (0.5, 0.5),
// (0.9, 0.1) on the front and (0.6, 0.6) dominated: three front marks ('o', or '@' for the selected trial) and one
// '.' in the view's panel (the left 3/5 of the screen), trial 0 (least loss, most cost) at the top left.
void ExpectTheWatchDrawsTheFront(LocalPair& pair) {
  if (!std::filesystem::exists("/usr/bin/tmux")) return;  // bootstrap installs it; the rest of the test stands
  Tmux tmux(pair.dir);
  std::string cmd = "env TERM=screen '" + Bin("ladder") + "' --server " + pair.address + " watch 1";
  ASSERT_EQ(tmux.Run({"new-session", "-d", "-s", "w", "-x", "150", "-y", "45", cmd}).exit_code, 0);
  tmux.WaitFor([](const std::string& s) { return s.find("TRIALS") != std::string::npos; });
  tmux.Run({"send-keys", "-t", "w", "v"});
  const std::string title = "PARETO search 1: cost (min) against loss (min), 3 of 4 on the front";
  auto marks = [](const std::string& screen, int* front, int* dominated, bool* top_left) {
    std::istringstream in(screen);
    bool plot = false;
    *front = *dominated = 0, *top_left = false;
    for (std::string line; std::getline(in, line);) {
      line = line.substr(0, 90);  // the view's panel
      if (line.find("PARETO") != std::string::npos) {
        plot = true;
        continue;
      }
      const size_t bar = line.find('|');
      if (!plot || bar == std::string::npos) continue;
      if (*front + *dominated == 0) *top_left = bar + 1 < line.size() && (line[bar + 1] == 'o' || line[bar + 1] == '@');
      for (size_t i = bar + 1; i < line.size(); ++i) {
        *front += line[i] == 'o' || line[i] == '@';
        *dominated += line[i] == '.';
      }
    }
  };
  int front = 0, dominated = 0;
  bool top_left = false;
  const std::string screen = tmux.WaitFor([&](const std::string& s) {
    marks(s, &front, &dominated, &top_left);
    return s.find(title) != std::string::npos && front == 3 && dominated == 1;
  });
  EXPECT_NE(screen.find(title), std::string::npos) << screen;
  EXPECT_EQ(front, 3) << screen;
  EXPECT_EQ(dominated, 1) << screen;
  EXPECT_TRUE(top_left) << "trial 0 (least loss, most cost) at the top left\n" << screen;
  tmux.Run({"send-keys", "-t", "w", "q"});
}

TEST(CliPareto, TheCoordinatorsFrontIsListedMarkedAndPromoteAsksWhichPoint) {
  LocalPair pair("cli-pareto");
  ASSERT_TRUE(pair.listening);
  const auto& dir = pair.dir;
  std::ofstream(dir / "trade.yaml") << testing::kTradeSpec;
  auto ladder = [&](std::vector<std::string> args) { return pair.Ladder(std::move(args)); };
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

  ExpectTheWatchDrawsTheFront(pair);

  auto ask = ladder({"promote", "1", "--dry-run"});
  EXPECT_EQ(ask.exit_code, 2) << ask.out;
  EXPECT_NE(ask.err.find("search 1 has 2 objectives (min loss, min cost): say which point of its Pareto front to "
                         "plan from, --pick TRIAL or --weights"),
            std::string::npos) << ask.err;
  EXPECT_NE(ask.err.find("  trial 1: loss 0.5, cost 0.5\n"), std::string::npos) << ask.err;
  auto off = ladder({"promote", "1", "--pick", "3", "--dry-run"});
  EXPECT_EQ(off.exit_code, 2);
  EXPECT_NE(off.err.find("--pick 3: trial 3 is not on the Pareto front of search 1"), std::string::npos) << off.err;
  pair.worker.Kill(SIGTERM);
  pair.server.Kill(SIGTERM);
  // No coordinator: the CLI reads the database (read-only), and the front is rebuilt from the stored values.
  auto later = testing::RunCommand({Bin("ladder"), "--db", (dir / "ladder.db").string(), "trials", "1", "--pareto",
                                    "--json"}, dir);
  ASSERT_EQ(later.exit_code, 0) << later.err;
  EXPECT_EQ(nlohmann::json::parse(later.out)["front"], j["front"]) << later.out;
}

// A batch x LR sweep whose trials print a synthetic curve (global_batch, lr, val_loss per step) and a cost, the
// batch: val_loss is best at lr = 0.001 x batch and lower for a larger batch, which costs more. Known points, so
// the front is trials 1 (val_loss 1.625, cost 16), 4 (1.375, 32) and 7 (1.25, 64).
const char* kSweep = R"(name: sweep
objectives: [{metric: val_loss, mode: min}, {metric: cost, mode: min}]
budget: {max_trials: 9, parallelism: 1}
sampler: random
command: [/bin/sh, -c, 'awk -v b={batch} -v lr={lr} "BEGIN {{ l = log(lr / (0.001 * b)); for (s = 1; s <= 40; s++) printf \"{{\\\"step\\\": %d, \\\"global_batch\\\": %d, \\\"lr\\\": %g, \\\"val_loss\\\": %g, \\\"cost\\\": %g}}\\n\", s, b, lr, 1 + l * l + 8 / b + 5 / s, b }}"']
space:
  batch: {type: int, low: 16, high: 64}
  lr: {type: float, low: 0.001, high: 0.2, log: true}
enqueue: [{batch: 16, lr: 0.008}, {batch: 16, lr: 0.016}, {batch: 16, lr: 0.032}, {batch: 32, lr: 0.016},
          {batch: 32, lr: 0.032}, {batch: 32, lr: 0.064}, {batch: 64, lr: 0.032}, {batch: 64, lr: 0.064},
          {batch: 64, lr: 0.128}]
)";

TEST(CliPareto, PromotePlansFromThePointTheWeightsChooseAndSaysSoInThePlan) {
  LocalPair pair("cli-pareto-promote");
  ASSERT_TRUE(pair.listening);
  const auto& dir = pair.dir;
  std::ofstream(dir / "sweep.yaml") << kSweep;
  auto ladder = [&](std::vector<std::string> args) { return pair.Ladder(std::move(args)); };
  auto run = ladder({"search", "start", "sweep.yaml", "--wait"});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  // Normalised over the front (val_loss 1.25..1.625, cost 16..64): trial 1 (1, 0), 4 (1/3, 1/3), 7 (0, 1).
  auto text = ladder({"promote", "1", "--batch", "256", "--dry-run", "--weights", "0.5,0.5"});
  ASSERT_EQ(text.exit_code, 0) << text.out << text.err;
  EXPECT_NE(text.out.find("  point          trial 4 of the Pareto front (val_loss 1.375, cost 32), by --weights "
                          "0.5,0.5: the lowest weighted sum of the objectives normalised over the front (0.3333 of "
                          "3 points)\n"),
            std::string::npos) << text.out;
  EXPECT_NE(text.out.find("-v b=32 -v lr=0.032"), std::string::npos) << "trial 4's command\n" << text.out;
  auto json = ladder({"promote", "1", "--batch", "256", "--dry-run", "--json", "--pick", "7"});
  ASSERT_EQ(json.exit_code, 0) << json.out << json.err;
  const auto j = nlohmann::json::parse(json.out);
  const auto& choice = j["plan"]["front_choice"];
  EXPECT_EQ(choice["trial"], 7) << json.out;
  EXPECT_EQ(choice["pick"], 7);
  EXPECT_DOUBLE_EQ(choice["objectives"]["cost"].get<double>(), 64);
  EXPECT_EQ(choice["how"], "trial 7 of the Pareto front (val_loss 1.25, cost 64), by --pick 7");
  EXPECT_NE(j["command"].dump().find("-v b=64 -v lr=0.064"), std::string::npos) << j["command"].dump();
  pair.worker.Kill(SIGTERM);
  pair.server.Kill(SIGTERM);
}

}  // namespace
}  // namespace ladder
