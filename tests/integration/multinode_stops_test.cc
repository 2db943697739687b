// Every way ladder stops a 2-node trial, on two (or four) in-process workers acting as nodes: a hero search's
// preemption, a PBT exploit, an ASHA early stop, a user's cancel, a worker's graceful shutdown (what ladder-worker does
// on SIGTERM).
// The ranks are a shell script that behaves as ladder-train does on a stop (trainer/stop_request.h): a rank that
// gets SIGTERM or SIGUSR1 asks the group to stop, the ranks agree (here through a file in the shared checkpoint
// directory, as ladder-train's allreduce), rank 0 saves the step it reached, no rank exits before the save is on
// disk, and every rank exits 143 — also one that got no signal itself. Rank 0 trains once rank 1 is up (as after a
// rendezvous). Each stop must leave no process behind, store every step once, and, where the trial resumes, resume
// from that checkpoint.
#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <set>

#include "tests/integration/multinode_fixture.h"

namespace ladder {
namespace {

// $1: the trial's parameter x (the score is step * x). In the checkpoint directory: `step` (the checkpoint: the
// step saved and the trial id whose run saved it). Beside it, in CHECKPOINT_DIR.marks (PBT replaces the checkpoint
// directory): stop-E (the group's agreed stop of run E), saved-E, and per rank K of run E: node-E-K (its node; rank 0
// waits for rank 1's), signalled-E-K (it got a stop signal), stopped-E-K (it left through the checkpoint). Rank 0
// prints {"step", "epoch" (= step), "score", "run" (E), "from" (the step it resumed from), "lineage" (the trial whose
// checkpoint it resumed; 0: none)}. The first run trains FIRST_STEPS steps (default: until it is stopped); a resumed
// run 20 more. PERIODIC=1: rank 0 also saves every step (PBT takes a running source's). LINGER=S: the other ranks
// exit S seconds after rank 0 (a rank's exit and teardown take their time). The score's awk ignores the stop signals:
// sent to the whole group (mpirun's, srun's), one that killed it printed a malformed step line while the step was
// saved (the run resumed at step 3 while its last step seen was 2: a flake of the test, 1 in ~40 under load).
constexpr const char* kRankScript = R"(ck=$LADDER_CHECKPOINT_DIR; m=$ck.marks; e=$LADDER_ASSIGNMENT_EPOCH; x=$1
mkdir -p $m
k=$RANK; [ -z "$k" ] && k=$OMPI_COMM_WORLD_RANK; [ -z "$k" ] && k=0
s=0; from=0; lineage=0; end=${FIRST_STEPS:-1000000}
if [ -f $ck/step ]; then read s lineage < $ck/step; from=$s; end=$((s + 20)); fi
save() { echo "$s $LADDER_TRIAL_ID" > $ck/step.tmp.$e && mv $ck/step.tmp.$e $ck/step; }
waitfor() { n=0; while [ ! -f $1 ] && [ $n -lt 200 ]; do sleep 0.05; n=$((n + 1)); done; }
trap "touch $m/signalled-$e-$k $m/stop-$e" TERM USR1
echo $LADDER_NODE_ID > $m/node-$e-$k
[ $k = 0 ] && waitfor $m/node-$e-1
while [ $s -lt $end ]; do
  if [ -f $m/stop-$e ]; then
    if [ $k = 0 ]; then save; touch $m/saved-$e; touch $m/stopped-$e-0; waitfor $m/stopped-$e-1
    else waitfor $m/saved-$e; touch $m/stopped-$e-$k; [ -n "$LINGER" ] && sleep $LINGER; fi
    exit 143
  fi
  s=$((s + 1))
  if [ $k = 0 ]; then
    score=$(trap '' TERM USR1; exec awk "BEGIN {print $s * $x}")
    echo "{\"step\": $s, \"epoch\": $s, \"score\": $score, \"run\": $e, \"from\": $from, \"lineage\": $lineage}"
    [ -n "$PERIODIC" ] && save
  fi
  sleep 0.05
done
)";

class MultiNodeStops : public testing::MultiNode {
 protected:
  void SetUp() override {
    MultiNode::SetUp();
    script_ = (dir_ / "rank.sh").string();
    std::ofstream(script_) << kRankScript;
  }
  std::string Spec(const std::string& name, const std::string& launcher, const std::string& env = "{}") const {
    return "name: " + name + "\nobjective: {metric: score, mode: max}\nbudget: {max_trials: 1, max_retries: 0}\n"
           "resources: {nodes: 2, ranks_per_node: 1, launcher: " + launcher + "}\n"
           "command: [/bin/sh, " + script_ + ", '{x}']\nenv: " + env + "\n"
           "space:\n  x: {type: float, low: 0.1, high: 1}\n";
  }
  v1::Trial Trial(int64_t trial_id) {
    grpc::ClientContext ctx;
    v1::GetTrialRequest g;
    g.set_trial_id(trial_id);
    g.set_include_metrics(true);
    v1::GetTrialResponse t;
    EXPECT_TRUE(stub_->GetTrial(&ctx, g, &t).ok());
    return t.trial();
  }
  std::vector<v1::Trial> Trials(int64_t search_id) {
    grpc::ClientContext ctx;
    v1::ListTrialsRequest req;
    req.set_search_id(search_id);
    v1::ListTrialsResponse resp;
    EXPECT_TRUE(stub_->ListTrials(&ctx, req, &resp).ok());
    std::vector<v1::Trial> out;
    for (const auto& t : resp.trials()) out.push_back(Trial(t.id()));
    return out;
  }
  std::filesystem::path CheckpointDir(const v1::Trial& t) const {
    return dir_ / ("ladder.db.checkpoints/search-" + std::to_string(t.search_id()) + "/trial-" +
                   std::to_string(t.id()));
  }
  // Where the ranks leave their marks (see kRankScript).
  std::filesystem::path Marks(const v1::Trial& t) const { return CheckpointDir(t).string() + ".marks"; }
  // The runs of a trial (by assignment epoch): each run's points, in the order stored.
  struct RunPoints {
    std::vector<int64_t> steps;
    int64_t from = -1, lineage = -1;
  };
  static std::map<int64_t, RunPoints> Runs(const v1::Trial& t) {
    std::map<int64_t, RunPoints> out;
    for (const auto& p : t.metrics()) {
      const auto& v = p.values();
      if (!v.count("run")) continue;
      RunPoints& r = out[static_cast<int64_t>(v.at("run"))];
      r.steps.push_back(p.step());
      r.from = static_cast<int64_t>(v.at("from"));
      r.lineage = static_cast<int64_t>(v.at("lineage"));
    }
    return out;
  }
  // Every run's steps are from+1, from+2, ... each once.
  static void ExpectEachStepOnce(const v1::Trial& t) {
    for (const auto& [epoch, r] : Runs(t)) {
      for (size_t i = 0; i < r.steps.size(); ++i) {
        ASSERT_EQ(r.steps[i], r.from + 1 + static_cast<int64_t>(i))
            << "trial " << t.id() << " run " << epoch << ": a step repeated or missing at point " << i;
      }
    }
  }
  // Waits (up to `deadline`) for search `id` to complete with its two trials, each COMPLETED with no attempt counted
  // (`no_attempt`: why not) and every step of it stored once; `trials` gets them.
  void ExpectTwoTrialsCompletedWithEachStepOnce(int64_t id, std::chrono::seconds deadline, const std::string& no_attempt,
                                                std::vector<v1::Trial>* trials) {
    auto s = testing::WaitForSearchEnd(*stub_, id, deadline);
    ASSERT_TRUE(s) << TrialLogs();
    EXPECT_EQ(s->state(), v1::SEARCH_COMPLETED) << s->error() << TrialLogs();
    *trials = Trials(id);
    ASSERT_EQ(trials->size(), 2u);
    for (const auto& t : *trials) {
      EXPECT_EQ(t.state(), v1::TRIAL_COMPLETED) << t.error();
      EXPECT_EQ(t.attempt(), 0) << no_attempt;
      ExpectEachStepOnce(t);
    }
  }
  // Both ranks of run `epoch` left through the agreed checkpoint (and which of them got a stop signal).
  void ExpectBothRanksStoppedThroughTheCheckpoint(const v1::Trial& t, int64_t epoch) {
    const auto ck = Marks(t);
    const std::string e = std::to_string(epoch);
    EXPECT_TRUE(std::filesystem::exists(ck / ("stopped-" + e + "-0"))) << "rank 0 of run " << e << TrialLogs();
    EXPECT_TRUE(std::filesystem::exists(ck / ("stopped-" + e + "-1"))) << "rank 1 of run " << e << TrialLogs();
    EXPECT_TRUE(std::filesystem::exists(ck / ("saved-" + e))) << "run " << e << " saved its checkpoint";
  }
  // The worker that hosts rank 1 of a running 2-node per_node trial stops gracefully (Worker::Stop, what
  // ladder-worker does on SIGTERM); a new node joins. `env`: the trial's.
  void ShutDownRankOnesWorker(const std::string& env) {
    StartNodes("127.0.0.1", "127.0.0.1");
    const int64_t id = CreateSearch(Spec("shutdown", "per_node", env));
    ASSERT_TRUE(WaitForMetrics(id, std::chrono::seconds(60))) << TrialLogs();
    const v1::Trial running = Trials(id).at(0);
    const auto ck = Marks(running);
    // The node of rank 1 of the first run (the only run so far).
    std::string rank1_node;
    for (const auto& e : std::filesystem::directory_iterator(ck)) {
      const std::string f = e.path().filename().string();
      if (f.rfind("node-", 0) == 0 && f.size() > 2 && f.substr(f.size() - 2) == "-1") {
        std::ifstream(e.path()) >> rank1_node;
      }
    }
    ASSERT_TRUE(rank1_node == "nodea" || rank1_node == "nodeb") << rank1_node;
    const size_t leaving = rank1_node == "nodea" ? 0 : 1;
    workers_[leaving]->Stop();
    AddNode("nodec", "127.0.0.1");  // the node the trial goes on on
    auto s = testing::WaitForSearchEnd(*stub_, id, std::chrono::seconds(90));
    ASSERT_TRUE(s) << TrialLogs();
    EXPECT_EQ(s->state(), v1::SEARCH_COMPLETED) << s->error() << TrialLogs();
    const v1::Trial t = Trial(running.id());
    EXPECT_EQ(t.state(), v1::TRIAL_COMPLETED) << t.error();
    EXPECT_EQ(t.attempt(), 0) << "a worker's shutdown is not the trial's failure";
    const auto outcomes = testing::Query(dir_ / "ladder.db", "SELECT outcome FROM allocations WHERE trial_id = " +
                                                                 std::to_string(t.id()) + " ORDER BY id");
    ASSERT_EQ(outcomes.size(), 2u);
    EXPECT_EQ(outcomes[0][0], "preempted");
    EXPECT_EQ(outcomes[1][0], "exited");
    const auto runs = Runs(t);
    ASSERT_EQ(runs.size(), 2u);
    const auto& [first_epoch, first] = *runs.begin();
    const auto& second = runs.rbegin()->second;
    ExpectBothRanksStoppedThroughTheCheckpoint(t, first_epoch);
    EXPECT_TRUE(std::filesystem::exists(ck / ("signalled-" + std::to_string(first_epoch) + "-1")))
        << "the stopping worker signalled its rank";
    ASSERT_FALSE(first.steps.empty());
    EXPECT_EQ(second.from, first.steps.back()) << "resumed at the step the first run saved";
    EXPECT_EQ(second.steps.size(), 20u);
    ExpectEachStepOnce(t);
    std::set<std::string> second_nodes;
    for (const auto& p : t.placement()) second_nodes.insert(p.node_id());
    EXPECT_EQ(second_nodes.count(rank1_node), 0u) << "not on the node whose worker stopped";
    EXPECT_EQ(WaitForNoTrialProcess(std::chrono::seconds(20)), std::vector<std::string>{});
  }
  // A running 2-node mpirun trial; the worker of rank 0's node (mpirun's) or of rank 1's stops gracefully. The
  // trial stops through mpirun (SIGUSR1, forwarded to both ranks), and resumes — no attempt counted — on the node
  // left and a new one, from the checkpoint, every step once; no process of it is left.
  void ShutDownAnMpirunTrialsWorker(bool rank0s) {
    StartNodes("nodea", "nodeb");
    const int64_t id = CreateSearch(Spec("mpi-shutdown", "mpirun"));
    ASSERT_TRUE(WaitForMetrics(id, std::chrono::seconds(60))) << TrialLogs();
    const v1::Trial running = Trials(id).at(0);
    ASSERT_EQ(running.placement_size(), 2);
    const int zero = running.placement(0).first_rank() == 0 ? 0 : 1;
    const std::string stopping = running.placement(rank0s ? zero : 1 - zero).node_id();
    workers_[stopping == "nodea" ? 0 : 1]->Stop();
    AddNode("nodec", "nodec");
    auto s = testing::WaitForSearchEnd(*stub_, id, std::chrono::seconds(90));
    ASSERT_TRUE(s) << TrialLogs();
    EXPECT_EQ(s->state(), v1::SEARCH_COMPLETED) << s->error() << TrialLogs();
    const v1::Trial t = Trial(running.id());
    EXPECT_EQ(t.state(), v1::TRIAL_COMPLETED) << t.error();
    EXPECT_EQ(t.attempt(), 0) << "a worker's shutdown is not the trial's failure";
    const auto runs = Runs(t);
    ASSERT_EQ(runs.size(), 2u);
    ExpectBothRanksStoppedThroughTheCheckpoint(t, runs.begin()->first);
    EXPECT_EQ(runs.rbegin()->second.from, runs.begin()->second.steps.back());
    ExpectEachStepOnce(t);
    EXPECT_EQ(WaitForNoTrialProcess(std::chrono::seconds(20)), std::vector<std::string>{});
  }
  std::string script_;
};

// A hero search arrives while a 2-node search trial runs: the trial stops through its checkpoint on both nodes, is
// requeued with no attempt counted, and, once the hero is done, resumes from the step it saved; every step once.
TEST_F(MultiNodeStops, AHeroSearchPreemptsATwoNodeTrialWhichResumesFromItsCheckpoint) {
  StartNodes("127.0.0.1", "127.0.0.1");
  const int64_t low = CreateSearch(Spec("low", "per_node"));
  ASSERT_TRUE(WaitForMetrics(low, std::chrono::seconds(60))) << TrialLogs();
  const int64_t hero =
      CreateSearch("name: hero\nobjective: {metric: score, mode: max}\nbudget: {max_trials: 1}\n"
                   "resources: {nodes: 1}\ncommand: [/bin/sh, -c, 'echo \"{{\\\"score\\\": 1}}\"']\n"
                   "space:\n  x: {type: float, low: 0, high: 1}\n",
                   v1::PRIORITY_HERO);
  auto h = testing::WaitForSearchEnd(*stub_, hero, std::chrono::seconds(60));
  ASSERT_TRUE(h) << TrialLogs();
  EXPECT_EQ(h->state(), v1::SEARCH_COMPLETED) << h->error();
  auto s = testing::WaitForSearchEnd(*stub_, low, std::chrono::seconds(90));
  ASSERT_TRUE(s) << TrialLogs();
  EXPECT_EQ(s->state(), v1::SEARCH_COMPLETED) << s->error() << TrialLogs();
  const auto trials = Trials(low);
  ASSERT_EQ(trials.size(), 1u);
  const v1::Trial& t = trials[0];
  EXPECT_EQ(t.state(), v1::TRIAL_COMPLETED) << t.error();
  EXPECT_EQ(t.attempt(), 0) << "a preemption is not a retry";
  EXPECT_EQ(t.preemptions(), 1);
  const auto outcomes = testing::Query(dir_ / "ladder.db", "SELECT outcome FROM allocations WHERE trial_id = " +
                                                               std::to_string(t.id()) + " ORDER BY id");
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_EQ(outcomes[0][0], "preempted");
  EXPECT_EQ(outcomes[1][0], "exited");
  const auto runs = Runs(t);
  ASSERT_EQ(runs.size(), 2u);
  const auto& [first_epoch, first] = *runs.begin();
  const auto& second = runs.rbegin()->second;
  ExpectBothRanksStoppedThroughTheCheckpoint(t, first_epoch);
  EXPECT_EQ(first.from, 0);
  ASSERT_FALSE(first.steps.empty());
  EXPECT_EQ(second.from, first.steps.back()) << "resumed at the step the first run saved (its last one stored)";
  EXPECT_EQ(second.lineage, t.id());
  EXPECT_EQ(second.steps.size(), 20u);
  ExpectEachStepOnce(t);
  EXPECT_EQ(WaitForNoTrialProcess(std::chrono::seconds(20)), std::vector<std::string>{});
}

// PBT over two 2-node trials (four nodes): the bottom trial is stopped through its checkpoint on both of its nodes
// and restarts — no attempt counted — from the top trial's checkpoint, with the top trial's lineage; every run's
// steps once.
TEST_F(MultiNodeStops, PbtExploitStopsBothRanksAndRestartsTheTrialFromTheSourcesCheckpoint) {
  for (const char* n : {"nodea", "nodeb", "nodec", "noded"}) AddNode(n, "127.0.0.1");
  const int64_t id = CreateSearch(
      "name: pbt\nobjective: {metric: score, mode: max}\nbudget: {max_trials: 2, parallelism: 2, max_retries: 0}\n"
      "resources: {nodes: 2, ranks_per_node: 1}\n"
      "scheduler: {type: pbt, resource: epoch, perturbation_interval: 10, quantile: 0.5, resample_probability: 0}\n"
      "command: [/bin/sh, " + script_ + ", '{x}']\nenv: {PERIODIC: '1', FIRST_STEPS: '60'}\n"
      "space:\n  x: {type: float, low: 0.1, high: 1}\n");
  std::vector<v1::Trial> trials;
  ASSERT_NO_FATAL_FAILURE(
      ExpectTwoTrialsCompletedWithEachStepOnce(id, std::chrono::seconds(150), "an exploit is not a retry", &trials));
  int exploits = 0;
  for (const auto& t : trials) {
    const std::string sql = "SELECT outcome, assignment_epoch FROM allocations WHERE trial_id = " +
                            std::to_string(t.id()) + " ORDER BY id";
    const auto outcomes = testing::Query(dir_ / "ladder.db", sql);
    const auto runs = Runs(t);
    for (size_t i = 0; i < outcomes.size(); ++i) {
      if (outcomes[i][0] != "exploit") continue;
      ++exploits;
      ExpectBothRanksStoppedThroughTheCheckpoint(t, std::stoll(outcomes[i][1]));
      ASSERT_LT(i + 1, outcomes.size()) << "it ran again";
      const auto next = runs.find(std::stoll(outcomes[i + 1][1]));
      ASSERT_NE(next, runs.end());
      const int64_t other = trials[0].id() == t.id() ? trials[1].id() : trials[0].id();
      EXPECT_EQ(next->second.lineage, other) << "the next run resumed from the source trial's checkpoint";
      EXPECT_GT(next->second.from, 0);
    }
  }
  EXPECT_GE(exploits, 1) << "the bottom trial was exploited" << TrialLogs();
  EXPECT_EQ(WaitForNoTrialProcess(std::chrono::seconds(20)), std::vector<std::string>{});
}

// A user cancels a search while its 2-node mpirun trial runs: mpirun forwards the stop to both ranks (on both
// "hosts"), the trial is cancelled, and no process of it is left on either node.
TEST_F(MultiNodeStops, CancellingASearchStopsBothRanksOfItsMpirunTrialAndLeavesNoProcess) {
  StartNodes("nodea", "nodeb");
  const int64_t id = CreateSearch(Spec("cancelled", "mpirun"));
  ASSERT_TRUE(WaitForMetrics(id, std::chrono::seconds(60))) << TrialLogs();
  grpc::ClientContext ctx;
  v1::CancelSearchRequest req;
  req.set_search_id(id);
  v1::CancelSearchResponse resp;
  ASSERT_TRUE(stub_->CancelSearch(&ctx, req, &resp).ok());
  EXPECT_EQ(WaitForNoTrialProcess(std::chrono::seconds(40)), std::vector<std::string>{}) << TrialLogs();
  const auto trials = Trials(id);
  ASSERT_EQ(trials.size(), 1u);
  const v1::Trial& t = trials[0];
  EXPECT_EQ(t.state(), v1::TRIAL_CANCELLED) << t.error();
  EXPECT_EQ(t.attempt(), 0);
  const auto runs = Runs(t);
  ASSERT_EQ(runs.size(), 1u);
  ExpectBothRanksStoppedThroughTheCheckpoint(t, runs.begin()->first);
  ExpectEachStepOnce(t);
  // The exit reaches the coordinator after the processes are gone: wait (bounded) for the run's record.
  std::vector<std::vector<std::string>> outcome;
  for (int i = 0; i < 200; ++i) {
    outcome = testing::Query(dir_ / "ladder.db", "SELECT outcome FROM allocations WHERE trial_id = " +
                                                     std::to_string(t.id()));
    if (outcome.size() == 1 && outcome[0][0] == "cancelled") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(outcome.size(), 1u);
  EXPECT_EQ(outcome[0][0], "cancelled");
}

// The worker that hosts rank 1 of a running 2-node trial stops gracefully (Worker::Stop, what ladder-worker does on
// SIGTERM): its rank asks the group to stop, both ranks leave through the checkpoint, and the trial waits — no
// attempt counted — for another node, where it resumes from the checkpoint; every step once.
TEST_F(MultiNodeStops, AWorkersShutdownStopsBothRanksAndTheTrialResumesFromItsCheckpointElsewhere) {
  ShutDownRankOnesWorker("{}");
}

// The same, with rank 0 (on the node that stays) exiting before rank 1 (on the stopping node): its exit — 143, though
// nobody signalled it — reaches the coordinator before the stopping worker's, and must not count an attempt.
TEST_F(MultiNodeStops, AWorkersShutdownCountsNoAttemptWhenTheOtherNodesRankExitsFirst) {
  ShutDownRankOnesWorker("{LINGER: '0.5'}");
}

// The worker of the node that holds the second half of a running 2-node mpirun trial stops gracefully. Its worker
// started nothing of the trial (mpirun on the first node starts every rank, here through the rsh agent), so the trial
// stops through mpirun: both ranks leave through the checkpoint, and the trial resumes — no attempt counted — on the
// node left and a new one.
TEST_F(MultiNodeStops, AWorkersShutdownOnAnMpirunTrialsSecondNodeRequeuesItWithNoAttempt) {
  ShutDownAnMpirunTrialsWorker(/*rank0s=*/false);
}

// The same with the first node's worker (the one that runs mpirun) stopping: it sends SIGUSR1 to mpirun, which
// forwards it to both ranks; they leave through the checkpoint and the trial resumes elsewhere with no attempt.
TEST_F(MultiNodeStops, AWorkersShutdownOnAnMpirunTrialsFirstNodeStopsItThroughMpirunWithNoAttempt) {
  ShutDownAnMpirunTrialsWorker(/*rank0s=*/true);
}

// The same shutdown with ladder-train over Gloo: the stopping worker SIGTERMs rank 1, the ranks agree on a step (an
// allreduce), rank 0 saves its checkpoint there, both exit 143; the trial resumes on the node left and a new one from
// that step, and trains to --max-steps with every step stored once.
TEST_F(MultiNodeStops, ALadderTrainGlooTrialStopsThroughItsCheckpointWhenAWorkerShutsDownAndResumes) {
  StartNodes("127.0.0.1", "127.0.0.1");
  const int64_t id = CreateSearch(
      "name: train-shutdown\nobjective: {metric: val_accuracy, mode: max}\nbudget: {max_trials: 1, max_retries: 0}\n"
      "resources: {nodes: 2, ranks_per_node: 1}\n"
      "command: [ladder-train, --comm, gloo, --epochs, '1000', --max-steps, '1500', --batch-size, '16',\n"
      "          --width, '32', --log-every, '1', --prefetch, '0', --lr, '{lr}',\n"
      "          --checkpoint, '{checkpoint_dir}/model.pt', --resume]\n"
      "env: {OMP_NUM_THREADS: '1'}\nspace:\n  lr: {type: categorical, values: ['0.05']}\n");
  ASSERT_TRUE(WaitForMetrics(id, std::chrono::seconds(60))) << TrialLogs();
  const v1::Trial running = Trials(id).at(0);
  ASSERT_EQ(running.placement_size(), 2);
  const int one = running.placement(0).first_rank() == 1 ? 0 : 1;
  const std::string rank1_node = running.placement(one).node_id();
  workers_[rank1_node == "nodea" ? 0 : 1]->Stop();
  AddNode("nodec", "127.0.0.1");
  auto s = testing::WaitForSearchEnd(*stub_, id, std::chrono::seconds(180));
  ASSERT_TRUE(s) << TrialLogs();
  EXPECT_EQ(s->state(), v1::SEARCH_COMPLETED) << s->error() << TrialLogs();
  const v1::Trial t = Trial(running.id());
  EXPECT_EQ(t.state(), v1::TRIAL_COMPLETED) << t.error();
  EXPECT_EQ(t.attempt(), 0) << t.error();
  const auto db = dir_ / "ladder.db";
  const auto outcomes = testing::Query(db, "SELECT outcome FROM allocations ORDER BY id");
  ASSERT_EQ(outcomes.size(), 2u) << TrialLogs();
  EXPECT_EQ(outcomes[0][0], "preempted");
  EXPECT_EQ(outcomes[1][0], "exited");
  // Training lines carry lr (evaluation lines do not): one per step, 1 to 1500.
  const auto steps = testing::Query(db, "SELECT COUNT(*), COUNT(DISTINCT step), MIN(step), MAX(step) FROM metrics "
                                        "WHERE name = 'lr'");
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0][0], steps[0][1]) << "a step stored twice";
  EXPECT_EQ(steps[0][2], "1");
  EXPECT_EQ(steps[0][3], "1500");
  EXPECT_EQ(steps[0][0], "1500") << "a step missing";
  const std::string logs = TrialLogs();
  EXPECT_NE(logs.find("stopped by signal"), std::string::npos) << logs;
  EXPECT_NE(logs.find("resumed from"), std::string::npos) << logs;
  EXPECT_EQ(WaitForNoTrialProcess(std::chrono::seconds(20)), std::vector<std::string>{});
}

// Slurm preempting the job that holds the workers SIGTERMs every task of every step itself (GraceTime), the trial's
// ranks as well as the workers, and a rank's exit can reach its worker before the worker's own SIGTERM does. While
// slurmctld says the job is being preempted (`scontrol show job`: a PreemptTime; a stand-in on PATH here, with the
// SLURM_JOB_ID a worker's step has), such an exit is the workers' stop, not a loss: run `preempted`, no attempt
// counted (max_retries 0: a loss would fail it), and the trial resumes from its checkpoint on two other nodes.
TEST_F(MultiNodeStops, RanksSigtermedBySlurmPreemptingTheWorkersJobArePreemptedNotLost) {
  const std::filesystem::path bin = dir_ / "fake-slurm";
  std::filesystem::create_directories(bin);
  std::ofstream(bin / "scontrol") << "#!/bin/sh\necho \"   PreemptEligibleTime=2026-11-27T16:00:00 "
                                     "PreemptTime=2026-11-27T16:01:00\"\n";
  std::filesystem::permissions(bin / "scontrol", std::filesystem::perms::owner_all);
  const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
  setenv("PATH", (bin.string() + ":" + path).c_str(), 1);
  setenv("SLURM_JOB_ID", "7", 1);
  StartNodes("127.0.0.1", "127.0.0.1");
  const int64_t id = CreateSearch(Spec("slurm-preempted", "per_node"));
  const bool printing = WaitForMetrics(id, std::chrono::seconds(60));
  // What slurmstepd does to each step: SIGTERM to every process of it. No worker is told anything.
  for (const auto& p : printing ? TrialProcesses() : std::vector<std::string>{}) kill(std::stoi(p), SIGTERM);
  AddNode("nodec", "127.0.0.1");
  AddNode("noded", "127.0.0.1");
  auto s = testing::WaitForSearchEnd(*stub_, id, std::chrono::seconds(90));
  setenv("PATH", path.c_str(), 1);
  unsetenv("SLURM_JOB_ID");
  ASSERT_TRUE(printing) << TrialLogs();
  ASSERT_TRUE(s) << TrialLogs();
  EXPECT_EQ(s->state(), v1::SEARCH_COMPLETED) << s->error() << TrialLogs();
  const v1::Trial t = Trials(id).at(0);
  EXPECT_EQ(t.state(), v1::TRIAL_COMPLETED) << t.error();
  EXPECT_EQ(t.attempt(), 0) << "Slurm's preemption of the workers' job is not the trial's failure";
  const auto outcomes = testing::Query(dir_ / "ladder.db", "SELECT outcome FROM allocations WHERE trial_id = " +
                                                               std::to_string(t.id()) + " ORDER BY id");
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_EQ(outcomes[0][0], "preempted");
  const auto runs = Runs(t);
  ASSERT_EQ(runs.size(), 2u);
  ExpectBothRanksStoppedThroughTheCheckpoint(t, runs.begin()->first);
  EXPECT_EQ(runs.rbegin()->second.from, runs.begin()->second.steps.back()) << "resumed from its checkpoint";
  ExpectEachStepOnce(t);
  EXPECT_EQ(WaitForNoTrialProcess(std::chrono::seconds(20)), std::vector<std::string>{});
}

// ASHA stops the worse of two 2-node trials (run one after the other) at its first rung: both ranks leave through the
// checkpoint, and the trial COMPLETES with the value it reached (run `stopped early`, no attempt), every step once.
TEST_F(MultiNodeStops, AnEarlyStopEndsBothRanksOfATwoNodeTrialWhichCompletesWithItsValue) {
  StartNodes("127.0.0.1", "127.0.0.1");
  const int64_t id = CreateSearch(
      "name: asha\nobjective: {metric: score, mode: max}\nbudget: {max_trials: 2, parallelism: 1, max_retries: 0}\n"
      "sampler: grid\nresources: {nodes: 2, ranks_per_node: 1}\n"
      "scheduler: {type: asha, resource: epoch, min_resource: 4, max_resource: 12, reduction_factor: 3}\n"
      "command: [/bin/sh, " + script_ + ", '{x}']\nenv: {FIRST_STEPS: '12'}\n"
      "space:\n  x: {type: categorical, values: ['1', '0.2']}\n");
  std::vector<v1::Trial> trials;
  ASSERT_NO_FATAL_FAILURE(ExpectTwoTrialsCompletedWithEachStepOnce(id, std::chrono::seconds(90), "", &trials));
  int stopped = 0;
  for (const auto& t : trials) {
    const auto outcome = testing::Query(dir_ / "ladder.db", "SELECT outcome FROM allocations WHERE trial_id = " +
                                                                std::to_string(t.id()));
    ASSERT_EQ(outcome.size(), 1u);
    // The better trial ran its 12 steps (ASHA marks it stopped at max_resource as well); the worse one is stopped.
    EXPECT_EQ(outcome[0][0], "stopped early");
    if (t.error().find("is not in the top") == std::string::npos) continue;
    ++stopped;
    EXPECT_EQ(t.error().rfind("stopped early: asha: rung 0", 0), 0u) << t.error();
    ExpectBothRanksStoppedThroughTheCheckpoint(t, Runs(t).begin()->first);
    EXPECT_LT(Runs(t).begin()->second.steps.size(), 12u);
  }
  EXPECT_EQ(stopped, 1) << TrialLogs();
  EXPECT_EQ(WaitForNoTrialProcess(std::chrono::seconds(20)), std::vector<std::string>{});
}

}  // namespace
}  // namespace ladder
