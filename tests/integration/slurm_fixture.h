#pragma once
// The Slurm system tests' fixture: a real 4-node Slurm cluster per test (tests/support/local_slurm.h), `ladder up
// --slurm` submitted as a job, and the spec and polling helpers they share.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>
#include <nlohmann/json.hpp>

#include "tests/integration/system_support.h"
#include "tests/support/local_slurm.h"
#include "tests/support/process.h"

namespace ladder {

// A search spec of one-rank-per-task shell trials run as Slurm steps (resources.launcher: srun): `budget` and
// `resources` are YAML flow mappings, `script` the trial's shell text ('{{'/'}}' for literal braces).
inline std::string SrunSpec(const std::string& name, const std::string& budget, const std::string& resources,
                     const std::string& script) {
  return "name: " + name + "\nobjective: {metric: score, mode: max}\nbudget: " + budget + "\nresources: " + resources +
         "\ncommand: [/bin/sh, -c, '" + script + "']\nspace:\n  x: {type: float, low: 0, high: 1}\n";
}

// A trial script line: rank 0 prints a metrics line with `score` (a shell expression).
inline std::string Rank0Scores(const std::string& score) {
  return "if [ \"$SLURM_PROCID\" = 0 ]; then echo \"{{\\\"step\\\": 1, \\\"score\\\": " + score + "}}\"; fi";
}

class SlurmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::LocalSlurm::Available()) {
      GTEST_SKIP() << "Slurm is not installed (slurmctld, slurmd, slurm-client: scripts/bootstrap.sh), or not root";
    }
    ASSERT_EQ(slurm_.Start(dir_, 4, 2), "");
  }
  // Submits a 4-node job that runs `ladder up --slurm` (coordinator on 127.0.0.1:<free port>, database in the
  // test's directory); cli_ is the ladder command line that talks to it.
  // `extra`: more options of ladder up (e.g. --tls-dir DIR).
  void SubmitLadderUp(const std::string& extra = "") {
    const int port = testing::FreePort();
    const std::string ladder = testing::BinDir() + "/ladder";
    {
      std::ofstream job(dir_ / "job.sh");
      job << "#!/bin/sh\nexec " << ladder << " up --slurm --advertise 127.0.0.1 --listen 127.0.0.1:" << port
          << " --http '' --db " << (dir_ / "ladder.db").string() << " " << extra << "\n";
    }
    auto submitted = slurm_.Run({"sbatch", "--parsable", "--nodes=4", "--exclusive", "--no-kill", "--output=" + (dir_ / "job.out").string(),
                                 (dir_ / "job.sh").string()});
    ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
    job_id_ = submitted.out.substr(0, submitted.out.find_first_of(";\n"));
    cli_ = {ladder, "--server", "127.0.0.1:" + std::to_string(port)};
  }
  // No job left in the queue (ended ones leave it).
  bool QueueEmpty() {
    auto q = slurm_.Run({"squeue", "-h", "-o", "%i"});
    return q.exit_code == 0 && q.out.find_first_not_of(" \n") == std::string::npos;
  }
  // Polls squeue (nothing sends an event for a job leaving it) until QueueEmpty or the deadline; whether it emptied.
  bool WaitForEmptyQueue(std::chrono::seconds deadline) {
    for (auto until = std::chrono::steady_clock::now() + deadline; std::chrono::steady_clock::now() < until;
         std::this_thread::sleep_for(std::chrono::milliseconds(300))) {
      if (QueueEmpty()) return true;
    }
    return QueueEmpty();
  }
  // What the submitted jobs printed (their output files under ladder-jobs/, as `ladder search submit` names them).
  std::string JobOutputs() {
    std::string all;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir_ / "ladder-jobs", ec)) {
      if (e.path().extension() != ".out") continue;
      std::ifstream in(e.path());
      all += "== " + e.path().string() + "\n" + std::string((std::istreambuf_iterator<char>(in)), {});
    }
    return all;
  }
  // What the jobs' workers logged (ladder-workers-STEP.log, beside the job outputs' folder).
  std::string WorkerLogs() {
    std::string all;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir_, ec)) {
      if (e.path().filename().string().rfind("ladder-workers-", 0) != 0) continue;
      std::ifstream in(e.path());
      all += "== " + e.path().string() + "\n" + std::string((std::istreambuf_iterator<char>(in)), {});
    }
    return all;
  }
  // `ladder search submit SPEC` of 2 nodes; once its trial stored 5 points, a 4-node exclusive job of the `high`
  // partition preempts it. Whether the queue then emptied (within 180 s); `outputs` gets the jobs' output.
  bool SubmitThenPreemptOnceItRuns(const std::filesystem::path& db, std::string* outputs) {
    const std::string ladder = testing::BinDir() + "/ladder";
    auto sub = slurm_.Run({ladder, "--db", db.string(), "search", "submit", "spec.yaml", "--nodes", "2", "--time", "10"});
    EXPECT_EQ(sub.exit_code, 0) << sub.out << sub.err;
    if (sub.exit_code != 0) return false;
    for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(90);
         std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(std::chrono::milliseconds(200))) {
      auto doc = nlohmann::json::parse(slurm_.Run({ladder, "--db", db.string(), "--json", "trials", "1"}).out, nullptr,
                                       false);
      auto trials = doc.is_object() ? doc.value("trials", nlohmann::json::array()) : nlohmann::json::array();
      if (trials.size() == 1 && std::stoi(trials[0].value("metric_count", "0")) >= 5) break;
    }
    auto high = slurm_.Run({"sbatch", "--parsable", "--partition=high", "--nodes=4", "--exclusive",
                            "--output=/dev/null", "--wrap", "sleep 3"});
    EXPECT_EQ(high.exit_code, 0) << high.err;
    const bool gone = WaitForEmptyQueue(std::chrono::seconds(180));
    *outputs = JobOutputs();
    return gone;
  }
  testing::CommandResult Ladder(std::vector<std::string> args) {
    std::vector<std::string> all = cli_;
    all.insert(all.end(), args.begin(), args.end());
    return testing::RunCommand(all, dir_);
  }

  testing::TempDir dir_{"slurm"};
  testing::LocalSlurm slurm_;
  std::string job_id_;
  std::vector<std::string> cli_;
};

// Polls `ladder nodes --json` until `n` nodes are up (up to 60 s); returns the last answer's nodes.
inline nlohmann::json WaitForNodes(const std::vector<std::string>& ladder, const std::filesystem::path& dir, size_t n) {
  nlohmann::json nodes;
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
       std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(std::chrono::milliseconds(250))) {
    std::vector<std::string> args = ladder;
    args.insert(args.end(), {"--json", "nodes"});
    auto r = testing::RunCommand(args, dir);
    if (r.exit_code != 0) continue;
    auto doc = nlohmann::json::parse(r.out, nullptr, false);
    nodes = doc.is_object() ? doc.value("workers", nlohmann::json::array()) : nlohmann::json::array();
    size_t up = 0;
    for (const auto& w : nodes) up += w.value("state", "") == "WORKER_UP";
    if (up >= n) break;
  }
  return nodes;
}

}  // namespace ladder
