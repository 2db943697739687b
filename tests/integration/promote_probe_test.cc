// The climb's probes as trials of the search, on a real coordinator and worker: `ladder promote --probe` runs the
// next probe (a larger batch by micro-batches) as marked trials of the sweep, refits and prints the verdict; plain
// `ladder promote` with `probes: auto` climbs within the probe budget before it submits the hero run.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/integration/local_cluster.h"

namespace ladder::testing {
namespace {

// A trainer whose best LR grows as batch^0.7 (0.05 at batch 16); --micro-batches is reported as `micro`. With
// --hold FILE, a run at batch 64 waits until FILE exists (a sweep trial that is still running).
constexpr const char* kFakeTrainer = R"(#!/bin/sh
lr=0.1; b=16; steps=0; ep=2; m=1; hold=
while [ $# -gt 0 ]; do case "$1" in --lr) lr=$2;; --batch-size) b=$2;; --max-steps) steps=$2;; --epochs) ep=$2;; --micro-batches) m=$2;; --hold) hold=$2;; esac; shift; done
if [ "$b" = 64 ] && [ -n "$hold" ]; then while [ ! -f "$hold" ]; do sleep 0.05; done; fi
awk -v lr="$lr" -v b="$b" -v steps="$steps" -v ep="$ep" -v m="$m" 'BEGIN {
  if (steps == 0) steps = int(4096 * ep / b);
  d = log(lr / (0.05 * (b / 16) ^ 0.7)) / log(2);
  for (i = 1; i <= 10; i++) {
    s = int(steps * i / 10); if (s < 1) s = 1;
    printf "{\"step\": %d, \"global_batch\": %d, \"lr\": %g, \"micro\": %d, \"val_loss\": %.6f}\n", s, b, lr, m, 0.3 + 3 / sqrt(1 + s) + 0.05 * d * d + 0.01 * sin(997 * lr + b)
  }
}'
)";

class PromoteProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(cluster_.Start(dir_.path, false, "r1"));
    std::ofstream(dir_.path / "fake_train.sh") << kFakeTrainer;
    std::ofstream(dir_.path / "sweep.yaml")
        << "name: probed\nobjective: {metric: val_loss, mode: min}\nbudget: {parallelism: 2}\n"
           "scales:\n  global_batch: [16, 32]\n  lr: {low: 0.025, high: 0.1}\n  per_octave: 1\n  follow: linear\n"
           "  extend: 1\n  probe_budget: 1\n"
           "command: [/bin/sh, " + (dir_.path / "fake_train.sh").string() + ", --lr, '{lr}', --batch-size, "
           "'{global_batch}', --micro-batches, '{micro_batches}', --epochs, '2']\n";
    auto sweep = Run({"search", "start", "sweep.yaml", "--wait"});
    ASSERT_EQ(sweep.exit_code, 0) << sweep.out << sweep.err;
  }
  CommandResult Run(std::vector<std::string> args) { return RunCommand(cluster_.Ladder(std::move(args)), dir_.path); }
  nlohmann::json Json(std::vector<std::string> args) {
    args.insert(args.begin(), "--json");
    auto r = Run(args);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return nlohmann::json::parse(r.out, nullptr, false);
  }

  TempDir dir_{"promote-probe"};
  LocalCluster cluster_;
};

TEST_F(PromoteProbeTest, TheNextProbeRunsAsMarkedTrialsOfTheSearchAndTheVerdictIsRefitted) {
  const auto dry = Json({"promote", "1", "--batch", "4096", "--dry-run"});
  const auto& before = dry["plan"]["extrapolation"]["verdict"];
  ASSERT_TRUE(before["next_probe"].is_object()) << "two batches 128x below the target: flagged\n" << before.dump();
  EXPECT_TRUE(dry["plan"]["extrapolation"]["probes"].empty());
  const auto swept = Json({"trials", "1"})["trials"].size();

  const auto probed = Json({"promote", "1", "--batch", "4096", "--probe"});
  EXPECT_FALSE(probed.contains("hero_search_id")) << "--probe submits no hero run";
  const auto& x = probed["plan"]["extrapolation"];
  ASSERT_EQ(x["probes"].size(), 1u) << x.dump();
  const auto& run = x["probes"][0];
  const int64_t batch = before["next_probe"]["batch"];
  EXPECT_EQ(run["batch"], batch) << "the probe the dry run named";
  EXPECT_EQ(run["micro_batches"], batch / 32) << "on the sweep's node by gradient accumulation";
  EXPECT_EQ(run["lrs"], before["next_probe"]["lrs"]);
  ASSERT_EQ(run["trials"].size(), 3u);
  EXPECT_TRUE(run["best_lr"].is_number()) << run.dump();
  EXPECT_GT(x["verdict"]["probe_node_hours"].get<double>(), 0);
  EXPECT_EQ(dry["plan"]["lr_rule"], "surface_fit") << "before any probe: the default fit";
  EXPECT_EQ(probed["plan"]["lr_rule"], "climb") << "after a probe: the climb's posterior sets the peak LR";
  const auto lr = probed["plan"]["peak_lr"];
  EXPECT_NEAR(lr[0].get<double>(), x["verdict"]["lr"].get<double>(), 1e-9 * lr[0].get<double>()) << x["verdict"].dump();

  // Marked wherever the trials are shown.
  const auto trials = Json({"trials", "1"})["trials"];
  ASSERT_EQ(trials.size(), swept + 3);
  int marked = 0;
  for (const auto& t : trials) {
    if (!t["probe"].get<bool>()) {
      EXPECT_EQ(t["micro_batches"], 0) << t.dump();
      continue;
    }
    ++marked;
    EXPECT_EQ(t["state"], "TRIAL_COMPLETED") << t.dump();
    EXPECT_EQ(t["micro_batches"], batch / 32);
    EXPECT_EQ(t["last_metrics"]["values"]["micro"], batch / 32) << "{micro_batches} reached the command";
    EXPECT_EQ(t["last_metrics"]["values"]["global_batch"], batch);
  }
  EXPECT_EQ(marked, 3);
  auto table = Run({"trials", "1"});
  EXPECT_NE(table.out.find("probe (" + std::to_string(batch / 32) + " micro-batches)"), std::string::npos)
      << table.out;
  auto shown = Run({"search", "show", "1"});
  EXPECT_NE(shown.out.find("completed"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("probes: 3 of its trials"), std::string::npos) << shown.out;
  EXPECT_EQ(Json({"search", "show", "1"})["probes"], 3);
  auto text = Run({"promote", "1", "--batch", "4096", "--dry-run"});
  EXPECT_NE(text.out.find("probes         1 run"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("batch " + std::to_string(batch) + " ("), std::string::npos) << text.out;
}

TEST_F(PromoteProbeTest, PromoteClimbsWithinTheProbeBudgetBeforeItSubmitsTheHeroRun) {
  const auto out = Json({"promote", "1", "--batch", "4096"});
  ASSERT_TRUE(out.contains("hero_search_id")) << out.dump();
  EXPECT_EQ(out["hero_search_id"], 2);
  const auto& x = out["plan"]["extrapolation"];
  ASSERT_GE(x["probes"].size(), 1u) << "probes: auto, and a probe fits a budget of the whole sweep\n" << x.dump();
  const auto& v = x["verdict"];
  EXPECT_LE(v["probe_node_hours"].get<double>(), v["budget_node_hours"].get<double>() * (1 + 1e-9)) << v.dump();
  size_t probe_trials = 0;
  const auto trials = Json({"trials", "1"});
  for (const auto& t : trials["trials"]) probe_trials += t["probe"].get<bool>();
  size_t listed = 0;
  for (const auto& r : x["probes"]) listed += r["trials"].size();
  EXPECT_EQ(probe_trials, listed);
  EXPECT_GE(probe_trials, 3u);
}

// --probe on a search still running: it waits for the probe's own trials, not for the search (whose trial at batch 64
// runs until the test lets it end), and refits on what has ended.
TEST(PromoteProbeOnARunningSearch, WaitsOnlyForTheProbesOwnTrials) {
  TempDir dir("promote-probe-running");
  LocalCluster cluster;
  ASSERT_NO_FATAL_FAILURE(cluster.Start(dir.path, false, "r1"));
  std::ofstream(dir.path / "fake_train.sh") << kFakeTrainer;
  const std::string gate = (dir.path / "gate").string();
  std::ofstream(dir.path / "sweep.yaml")
      << "name: probed\nobjective: {metric: val_loss, mode: min}\nbudget: {parallelism: 1}\n"
         "scales:\n  global_batch: [16, 32, 64]\n  lr: {low: 0.025, high: 0.1}\n  per_octave: 1\n  follow: linear\n"
         "  extend: 1\n  probe_budget: 1\n"
         "command: [/bin/sh, " + (dir.path / "fake_train.sh").string() + ", --lr, '{lr}', --batch-size, "
         "'{global_batch}', --micro-batches, '{micro_batches}', --epochs, '2', --hold, " + gate + "]\n";
  auto run = [&](std::vector<std::string> args) { return RunCommand(cluster.Ladder(std::move(args)), dir.path); };
  ASSERT_EQ(run({"search", "start", "sweep.yaml"}).exit_code, 0);
  // Batches 16 and 32 end; the first run at batch 64 holds the search's one slot of parallelism.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  bool held = false;
  while (!held && std::chrono::steady_clock::now() < deadline) {
    auto listed = run({"--json", "trials", "1"});
    ASSERT_EQ(listed.exit_code, 0) << listed.err;
    const auto trials = nlohmann::json::parse(listed.out)["trials"];
    for (const auto& t : trials) {
      held = held || (t["state"] == "TRIAL_RUNNING" && t["params"]["global_batch"]["int_value"] == "64");
    }
    if (!held) std::this_thread::sleep_for(std::chrono::milliseconds(100));  // polling, not synchronisation
  }
  ASSERT_TRUE(held) << "no run at batch 64 started";

  // `timeout`: without the change promote waited for the whole search, which never ends here.
  auto promote = cluster.Ladder({"--json", "promote", "1", "--batch", "4096", "--probe"});
  promote.insert(promote.begin(), {"/usr/bin/timeout", "120"});
  auto probed = RunCommand(promote, dir.path);
  std::ofstream(gate) << "go\n";  // the held run ends, whatever happened
  ASSERT_EQ(probed.exit_code, 0) << "promote --probe waited for more than its probe\n" << probed.out << probed.err;
  const auto out = nlohmann::json::parse(probed.out);
  const auto& x = out["plan"]["extrapolation"];
  ASSERT_EQ(x["probes"].size(), 1u) << x.dump();
  ASSERT_EQ(x["probes"][0]["trials"].size(), 3u) << x.dump();
  EXPECT_TRUE(x["probes"][0]["best_lr"].is_number()) << "refitted with the probe's trials: " << x.dump();
  auto shown = run({"--json", "search", "show", "1"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_EQ(nlohmann::json::parse(shown.out)["state"], "SEARCH_RUNNING") << "the sweep's held run still runs";
  auto listed = run({"--json", "trials", "1"});
  const auto trials = nlohmann::json::parse(listed.out)["trials"];
  for (const auto& t : trials) {
    if (t["probe"].get<bool>()) {
      EXPECT_EQ(t["state"], "TRIAL_COMPLETED") << t.dump();
    }
  }
}

}  // namespace
}  // namespace ladder::testing
