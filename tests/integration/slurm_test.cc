// ladder on a real Slurm cluster (Debian's Slurm 22.05; tests/support/local_slurm.h starts four nodes on this
// machine, each slurmd with its own hostname, two leaf switches under one top switch): `ladder up --slurm` inside
// an allocation starts one worker per node as a Slurm step, named and labelled by Slurm, and a search runs on them.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <nlohmann/json.hpp>

#include "tests/integration/slurm_fixture.h"

namespace ladder {
namespace {

TEST_F(SlurmTest, TheLocalClusterRunsAStepOnEveryNodeAndKnowsItsSwitches) {
  auto r = slurm_.Run({"srun", "--nodes=4", "--ntasks-per-node=1", "hostname"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> hosts;
  std::istringstream in(r.out);
  for (std::string h; in >> h;) hosts.push_back(h);
  std::sort(hosts.begin(), hosts.end());
  EXPECT_EQ(hosts, (std::vector<std::string>{"n1", "n2", "n3", "n4"})) << "each node has its own hostname";
  auto topo = slurm_.Run({"scontrol", "show", "topology"});
  ASSERT_EQ(topo.exit_code, 0) << topo.err;
  EXPECT_NE(topo.out.find("SwitchName=leaf1"), std::string::npos) << topo.out;
  EXPECT_NE(topo.out.find("SwitchName=top"), std::string::npos) << topo.out;
}

TEST_F(SlurmTest, LadderUpInAnAllocationStartsAWorkerOnEachNodeLabelledBySlurm) {
  ASSERT_NO_FATAL_FAILURE(SubmitLadderUp());
  const std::string ladder = testing::BinDir() + "/ladder";
  const std::vector<std::string>& cli = cli_;
  const std::string& job_id = job_id_;
  auto nodes = WaitForNodes(cli, dir_, 4);
  std::map<std::string, std::pair<std::string, std::string>> labels;  // node → (rack, switch)
  for (const auto& w : nodes) {
    const auto& l = w["resources"].value("labels", nlohmann::json::object());
    labels[w["node_id"]] = {l.value("rack", ""), l.value("switch", "")};
  }
  std::map<std::string, std::pair<std::string, std::string>> want = {
      {"n1", {"leaf1", "top"}}, {"n2", {"leaf1", "top"}}, {"n3", {"leaf2", "top"}}, {"n4", {"leaf2", "top"}}};
  EXPECT_EQ(labels, want) << "Slurm's node names, racks from the leaf switches; job output:\n"
                          << slurm_.Run({"cat", (dir_ / "job.out").string()}).out;

  // A search runs on them: eight one-node trials, four at a time.
  std::ofstream(dir_ / "spec.yaml") << "name: on-slurm\nobjective: {metric: score, mode: max}\n"
                                       "budget: {max_trials: 8, parallelism: 4}\n"
                                       "command: [/bin/sh, -c, 'echo \"{{\\\"step\\\": 1, \\\"score\\\": {x}}}\"']\n"
                                       "space:\n  x: {type: float, low: 0, high: 1}\n";
  std::vector<std::string> start = cli;
  start.insert(start.end(), {"search", "start", "spec.yaml", "--wait"});
  auto run = testing::RunCommand(start, dir_);
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  std::vector<std::string> list = cli;
  list.insert(list.end(), {"--json", "trials", "1"});
  auto trials = nlohmann::json::parse(testing::RunCommand(list, dir_).out, nullptr, false);
  std::set<std::string> used;
  for (const auto& t : trials["trials"]) {
    EXPECT_EQ(t["state"], "TRIAL_COMPLETED");
    for (const auto& p : t["placement"]) used.insert(p["node_id"].get<std::string>());
  }
  EXPECT_GE(used.size(), 2u) << "the trials ran on the allocation's nodes";

  // scancel ends the job: ladder up stops its workers' step and itself.
  ASSERT_EQ(slurm_.Run({"scancel", job_id}).exit_code, 0);
  bool gone = false;
  for (int i = 0; i < 150 && !gone; ++i) {
    auto q = slurm_.Run({"squeue", "-h", "-j", job_id});
    gone = q.exit_code != 0 || q.out.find_first_not_of(" \n") == std::string::npos;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_TRUE(gone) << "the job is still in the queue";
}

// Mutual TLS under Slurm: ladder up --tls-dir gives every node's worker (one srun step) its certificate through the
// environment, and they all register; a client without the certificates is not served.
TEST_F(SlurmTest, LadderUpWithTlsGivesEveryNodesWorkerItsCertificate) {
  const std::string certs = (dir_ / "certs").string();
  auto made = testing::RunCommand({testing::BinDir() + "/ladder", "certs", "create", certs}, dir_);
  ASSERT_EQ(made.exit_code, 0) << made.err;
  ASSERT_NO_FATAL_FAILURE(SubmitLadderUp("--tls-dir " + certs));
  std::vector<std::string> plain = cli_;
  cli_.insert(cli_.end(), {"--tls-dir", certs, "--db", (dir_ / "ladder.db").string()});
  auto nodes = WaitForNodes(cli_, dir_, 4);
  size_t up = 0;
  for (const auto& w : nodes) up += w.value("state", "") == "WORKER_UP";
  EXPECT_EQ(up, 4u) << nodes.dump() << "\njob output:\n" << slurm_.Run({"cat", (dir_ / "job.out").string()}).out;
  plain.insert(plain.end(), {"--db", (dir_ / "ladder.db").string(), "nodes"});
  auto refused = testing::RunCommand(plain, dir_);
  EXPECT_EQ(refused.exit_code, 3) << "plaintext to the TLS port: " << refused.out << refused.err;
  EXPECT_NE(refused.err.find("--tls-dir"), std::string::npos) << refused.err;
  ASSERT_EQ(slurm_.Run({"scancel", job_id_}).exit_code, 0);
  EXPECT_TRUE(WaitForEmptyQueue(std::chrono::seconds(30)));
}

// resources.launcher: srun — a 2-node trial is one Slurm step on exactly the two nodes it was given, its ranks in
// ladder's order (whatever Slurm's node order).
TEST_F(SlurmTest, ATwoNodeTrialIsOneSrunStepOnItsOwnNodes) {
  ASSERT_NO_FATAL_FAILURE(SubmitLadderUp());
  ASSERT_EQ(WaitForNodes(cli_, dir_, 4).size(), 4u);
  std::ofstream(dir_ / "pairs.yaml") << SrunSpec(
      "pairs", "{max_trials: 2, parallelism: 2}", "{nodes: 2, ranks_per_node: 2, launcher: srun}",
      "echo \"rank $SLURM_PROCID of $SLURM_NTASKS on $(hostname)\" >&2; " + Rank0Scores("$SLURM_NTASKS"));
  auto run = Ladder({"search", "start", "pairs.yaml", "--wait"});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  auto trials = nlohmann::json::parse(Ladder({"--json", "trials", "1"}).out, nullptr, false);
  ASSERT_EQ(trials["trials"].size(), 2u) << trials.dump();
  for (const auto& t : trials["trials"]) {
    EXPECT_EQ(t["state"], "TRIAL_COMPLETED") << t.dump();
    EXPECT_EQ(t.value("objective", 0.0), 4.0) << "SLURM_NTASKS: 2 nodes x 2 ranks in the step";
    ASSERT_EQ(t["placement"].size(), 2u);
    const std::string a = t["placement"][0]["node_id"], b = t["placement"][1]["node_id"];
    // srun gathers every rank's stderr into its own: the trial's stderr.log on the first node's worker.
    std::ifstream log(dir_ / "ladder-trials" / ("trial-" + t["id"].get<std::string>()) / "stderr.log");
    const std::string tail((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    // Ranks in ladder's order: 0 and 1 on the first node of the placement (MASTER_ADDR's), 2 and 3 on the second.
    for (const auto& [rank, node] : std::vector<std::pair<int, std::string>>{{0, a}, {1, a}, {2, b}, {3, b}}) {
      EXPECT_NE(tail.find("rank " + std::to_string(rank) + " of 4 on " + node), std::string::npos)
          << "rank " << rank << " on " << node << "?\n" << tail;
    }
  }
  slurm_.Run({"scancel", job_id_});
}

// An MPI trial as one step: ladder-train over MPI (PMIx from srun --mpi=pmix) on the two nodes the scheduler gave
// it, rank 0 on the first, rank 1 on the second; it trains (an allreduce per step) and completes.
TEST_F(SlurmTest, AnMpiTrialRunsAsOneStepOnItsTwoNodes) {
  ASSERT_NO_FATAL_FAILURE(SubmitLadderUp());
  ASSERT_EQ(WaitForNodes(cli_, dir_, 4).size(), 4u);
  std::ofstream(dir_ / "mpi.yaml")
      << "name: mpi\nobjective: {metric: val_loss, mode: min}\nbudget: {max_trials: 1}\n"
         "resources: {nodes: 2, ranks_per_node: 1, launcher: srun}\n"
         "command: [/bin/sh, -c, 'echo \"mpi rank $SLURM_PROCID on $(hostname)\" >&2; exec ladder-train --comm mpi "
         "--epochs 1 --max-steps 20 --batch-size 32 --width 32 --threads 1 --lr {lr}']\n"
         "space:\n  lr: {type: float, low: 0.05, high: 0.1}\n";
  auto run = Ladder({"search", "start", "mpi.yaml", "--wait"});
  std::ifstream log(dir_ / "ladder-trials" / "trial-1" / "stderr.log");
  const std::string said((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err << said;
  auto trials = nlohmann::json::parse(Ladder({"--json", "trials", "1"}).out, nullptr, false);
  ASSERT_EQ(trials["trials"].size(), 1u) << trials.dump();
  const auto& t = trials["trials"][0];
  EXPECT_EQ(t["state"], "TRIAL_COMPLETED") << t.dump();
  ASSERT_EQ(t["placement"].size(), 2u);
  EXPECT_NE(said.find("2 rank(s) over mpi"), std::string::npos) << said;
  for (int rank = 0; rank < 2; ++rank) {
    const std::string node = t["placement"][rank]["node_id"];
    EXPECT_NE(said.find("mpi rank " + std::to_string(rank) + " on " + node), std::string::npos)
        << "rank " << rank << " on " << node << "?\n" << said;
  }
  slurm_.Run({"scancel", job_id_});
}

// scancel of a trial's step: the trial is retried (attempt 1), not failed.
TEST_F(SlurmTest, ATrialWhoseStepIsCancelledIsRetried) {
  ASSERT_NO_FATAL_FAILURE(SubmitLadderUp());
  ASSERT_EQ(WaitForNodes(cli_, dir_, 4).size(), 4u);
  // The first attempt waits to be cancelled; the second one ends at once.
  std::ofstream(dir_ / "long.yaml") << SrunSpec("long", "{max_trials: 1}", "{nodes: 2, launcher: srun}",
                                                 "if [ \"$LADDER_ATTEMPT\" = 0 ]; then sleep 60; fi; " + Rank0Scores("1"));
  ASSERT_EQ(Ladder({"search", "start", "long.yaml"}).exit_code, 0);
  std::string step;  // "JOB.STEP" of the trial's step, once it runs
  for (int i = 0; i < 100 && step.empty(); ++i) {
    auto q = slurm_.Run({"squeue", "-s", "-h", "-o", "%i %j"});
    std::istringstream lines(q.out);
    for (std::string id, name; lines >> id >> name;) {
      if (name == "ladder-trial-1") step = id;
    }
    if (step.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_FALSE(step.empty()) << "the trial's step never ran";
  ASSERT_EQ(slurm_.Run({"scancel", step}).exit_code, 0);
  // `ladder watch 1 --plain` follows the search's events and ends when the search has ended.
  auto watched = Ladder({"watch", "1", "--plain"});
  ASSERT_EQ(watched.exit_code, 0) << watched.err;
  nlohmann::json t;
  auto doc = nlohmann::json::parse(Ladder({"--json", "trials", "1"}).out, nullptr, false);
  if (doc.is_object() && doc.contains("trials") && !doc["trials"].empty()) t = doc["trials"][0];
  EXPECT_EQ(t.value("state", ""), "TRIAL_COMPLETED") << t.dump();
  EXPECT_EQ(t.value("attempt", 0), 1) << "the cancelled step cost one attempt: " << t.dump();

  // A rank that fails on its own ends the step too (--kill-on-bad-exit), and Slurm says CANCELLED then as well:
  // that trial fails, it is not retried.
  std::ofstream(dir_ / "bad.yaml") << SrunSpec("bad", "{max_trials: 1}", "{nodes: 2, launcher: srun}",
                                                "if [ \"$SLURM_PROCID\" = 1 ]; then exit 3; fi; sleep 20");
  Ladder({"search", "start", "bad.yaml", "--wait"});
  auto bad = nlohmann::json::parse(Ladder({"--json", "trials", "2"}).out, nullptr, false);
  ASSERT_TRUE(bad.is_object() && bad.contains("trials") && bad["trials"].size() == 1u) << bad.dump();
  EXPECT_EQ(bad["trials"][0].value("state", ""), "TRIAL_FAILED") << bad.dump();
  EXPECT_EQ(bad["trials"][0].value("attempt", 0), 0) << bad.dump();
  std::ifstream log(dir_ / "ladder-trials" / "trial-2" / "stderr.log");
  const std::string said((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(said.find("task 1: Exited with exit code 3"), std::string::npos) << said;
}

// A node of the allocation crashes mid-trial (its slurmd and everything on it die; the job was submitted with
// --no-kill, as docs/guide/slurm.md says): the trial that ran there is requeued on another node of the allocation and
// completes on its second attempt, while the other nodes' workers and trials go on.
TEST_F(SlurmTest, ATrialOnANodeThatCrashesIsRequeuedOnAnotherNode) {
  ASSERT_NO_FATAL_FAILURE(SubmitLadderUp());
  ASSERT_EQ(WaitForNodes(cli_, dir_, 4).size(), 4u);
  // Three trials, each a whole node (2 ranks on 2 cores); a first attempt waits for the test's `release` file.
  const std::string release = (dir_ / "release").string();
  std::ofstream(dir_ / "three.yaml") << SrunSpec(
      "three", "{max_trials: 3, parallelism: 3}", "{nodes: 1, ranks_per_node: 2}",
      "if [ \"$LADDER_ATTEMPT\" = 0 ]; then while [ ! -e " + release + " ]; do sleep 0.1; done; fi; "
      "echo \"{{\\\"step\\\": 1, \\\"score\\\": 1}}\"");
  ASSERT_EQ(Ladder({"search", "start", "three.yaml"}).exit_code, 0);
  // The node to crash: one that runs a trial and is not the batch host (where ladder up, the coordinator, runs).
  const std::string batch_host = [&] {
    std::istringstream in(slurm_.Run({"squeue", "-h", "-j", job_id_, "-o", "%B"}).out);
    std::string h;
    in >> h;
    return h;
  }();
  std::string victim;
  int64_t victim_trial = 0;
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
       victim.empty() && std::chrono::steady_clock::now() < until;) {
    auto doc = nlohmann::json::parse(Ladder({"--json", "trials", "1"}).out, nullptr, false);
    for (const auto& t : doc.is_object() ? doc.value("trials", nlohmann::json::array()) : nlohmann::json::array()) {
      if (t.value("state", "") != "TRIAL_RUNNING" || t["placement"].empty()) continue;
      const std::string node = t["placement"][0]["node_id"];
      if (node != batch_host) victim = node, victim_trial = std::stoll(t["id"].get<std::string>());
    }
    if (victim.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_FALSE(victim.empty()) << "no trial ran on a node other than the batch host " << batch_host;
  slurm_.KillNode(std::stoi(victim.substr(1)));
  // The crashed node's trial runs again elsewhere and completes, and Slurm marks the node down (SlurmdTimeout):
  // the job and the other nodes' workers go on.
  std::string slurm_state;
  bool requeued_done = false;
  // Bounded by what a loaded 2-core machine needs: the worker's lease, Slurm's SlurmdTimeout (10 s) and its ping
  // interval, a new srun step elsewhere (it took over 60 s once beside four builds).
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(150);
       std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(std::chrono::milliseconds(200))) {
    auto doc = nlohmann::json::parse(Ladder({"--json", "trials", "1"}).out, nullptr, false);
    for (const auto& t : doc.is_object() ? doc.value("trials", nlohmann::json::array()) : nlohmann::json::array()) {
      requeued_done |= std::stoll(t["id"].get<std::string>()) == victim_trial && t.value("state", "") == "TRIAL_COMPLETED";
    }
    slurm_state = slurm_.Run({"sinfo", "-h", "-n", victim, "-o", "%T"}).out;
    if (requeued_done && slurm_state.find("down") != std::string::npos) break;
  }
  EXPECT_TRUE(requeued_done) << "trial " << victim_trial << " did not complete after its node crashed";
  EXPECT_NE(slurm_state.find("down"), std::string::npos) << "Slurm did not mark " << victim << " down: " << slurm_state;
  EXPECT_NE(slurm_.Run({"squeue", "-h", "-j", job_id_, "-o", "%T"}).out.find("RUNNING"), std::string::npos)
      << "the job outlives its crashed node (sbatch --no-kill), and the workers' step too (srun --no-kill)";
  std::ofstream(release) << "go\n";
  // Bounded: were the job or its workers' step gone with the node, nobody would end the search.
  std::vector<std::string> watch = {"/usr/bin/timeout", "60"};
  watch.insert(watch.end(), cli_.begin(), cli_.end());
  watch.insert(watch.end(), {"watch", "1", "--plain"});
  auto watched = testing::RunCommand(watch, dir_);
  ASSERT_EQ(watched.exit_code, 0) << watched.err;
  auto doc = nlohmann::json::parse(Ladder({"--json", "trials", "1"}).out, nullptr, false);
  ASSERT_TRUE(doc.is_object() && doc["trials"].size() == 3u) << doc.dump();
  for (const auto& t : doc["trials"]) {
    EXPECT_EQ(t.value("state", ""), "TRIAL_COMPLETED") << t.dump();
    const bool moved = std::stoll(t["id"].get<std::string>()) == victim_trial;
    EXPECT_EQ(t.value("attempt", 0), moved ? 1 : 0) << t.dump();
    if (moved) {
      EXPECT_NE(t["placement"][0]["node_id"], victim) << "requeued on another node: " << t.dump();
    }
  }
  slurm_.Run({"scancel", job_id_});
}

}  // namespace
}  // namespace ladder
