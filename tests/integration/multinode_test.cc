// Multi-node trials on this machine: one coordinator and two workers in one process, each worker acting as a
// node. A real `ladder-train` runs over both "nodes" with Gloo (every worker starts its ranks with the
// rendezvous variables) and with MPI (the first worker runs mpirun over both hosts; mpirun reaches the second
// "host" through an rsh agent that runs the command here, as ssh would on a cluster). A rank that crashes on
// one node stops the group's ranks on the other.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>

#include "tests/integration/multinode_fixture.h"

namespace ladder {
namespace {

using testing::MultiNode;

TEST_F(MultiNode, GlooTrialRunsOneRankOnEachNodeWithTheRendezvousOfRankZerosNode) {
  StartNodes("127.0.0.1", "127.0.0.1");
  auto s = Run(TrainSpec("gloo", "per_node"), std::chrono::seconds(120));
  ASSERT_TRUE(s) << TrialLogs();
  ASSERT_EQ(s->state(), v1::SEARCH_COMPLETED) << s->error() << TrialLogs();
  auto t = OnlyTrial(s->id());
  EXPECT_EQ(t.state(), v1::TRIAL_COMPLETED) << t.error();
  ASSERT_EQ(t.placement_size(), 2);
  EXPECT_NE(t.placement(0).node_id(), t.placement(1).node_id());
  EXPECT_EQ(LastValue(t, "ranks"), 2) << "the trainer saw a world of 2 ranks";
  EXPECT_GT(t.objective(), 0.5);
}

// Another process listens on the port the coordinator picks for the trial's rendezvous (trial 1: base + 1):
// rank 0 cannot serve the store there, exits 75, and the trial runs again on another port of the range and
// completes, its attempt unused.
TEST_F(MultiNode, ARendezvousPortHeldByAnotherProcessCostsNoAttemptAndTheTrialCompletesOnAnother) {
  const int taken = port_base_ + 1 % kPortSpan;
  const int holder = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(holder, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(taken));
  const bool held = bind(holder, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && listen(holder, 16) == 0;
  // Taken by someone else meanwhile does as well: the port is in use either way.
  ASSERT_TRUE(held || errno == EADDRINUSE) << std::strerror(errno);
  StartNodes("127.0.0.1", "127.0.0.1");
  auto s = Run(TrainSpec("gloo", "per_node"), std::chrono::seconds(180));
  close(holder);
  ASSERT_TRUE(s) << TrialLogs();
  ASSERT_EQ(s->state(), v1::SEARCH_COMPLETED) << s->error() << TrialLogs();
  auto t = OnlyTrial(s->id());
  ASSERT_EQ(t.id(), 1) << "the port held is trial 1's";
  EXPECT_EQ(t.state(), v1::TRIAL_COMPLETED) << t.error();
  EXPECT_EQ(t.attempt(), 0) << "a port collision never costs an attempt";
  EXPECT_EQ(LastValue(t, "ranks"), 2);
  ASSERT_GE(t.attempts_size(), 2) << "a run that found the port taken, then the one that completed";
  EXPECT_EQ(t.attempts(0).outcome(), "rendezvous port in use");
  // The first entry names the port held here (a later one, if any, a port something else held meanwhile).
  std::vector<std::string> said;
  for (const auto& e : t.history()) {
    if (e.kind() == "trial_port_in_use") said.push_back(e.detail());
  }
  ASSERT_FALSE(said.empty()) << "the journal says why the trial ran again";
  EXPECT_NE(said[0].find("rendezvous port " + std::to_string(taken) + ": another process holds it"),
            std::string::npos) << said[0];
}

TEST_F(MultiNode, MpiTrialIsStartedByMpirunOnTheFirstNodeOverBothHosts) {
  StartNodes("nodea", "nodeb");  // names only mpirun (through the rsh agent) has to reach
  auto s = Run(TrainSpec("mpi", "mpirun"), std::chrono::seconds(120));
  ASSERT_TRUE(s) << TrialLogs();
  ASSERT_EQ(s->state(), v1::SEARCH_COMPLETED) << s->error() << TrialLogs();
  auto t = OnlyTrial(s->id());
  EXPECT_EQ(t.state(), v1::TRIAL_COMPLETED) << t.error();
  ASSERT_EQ(t.placement_size(), 2);
  ASSERT_GE(t.command_size(), 1);
  EXPECT_EQ(LastValue(t, "ranks"), 2);
  EXPECT_GT(t.objective(), 0.5);
}

TEST_F(MultiNode, RankCrashOnOneNodeStopsTheRankOnTheOtherNode) {
  StartNodes("127.0.0.1", "127.0.0.1");
  // Rank 1 fails at once; rank 0 would wait in a collective forever (here: it blocks until it is stopped).
  auto s = Run("name: crash\n"
               "objective: {metric: score, mode: max}\n"
               "budget: {max_trials: 1, max_retries: 0, max_failed_trials: 1}\n"
               "resources: {nodes: 2, ranks_per_node: 1}\n"
               "command: [sh, -c, 'if [ \"$RANK\" = 1 ]; then exit 3; fi; exec tail -f /dev/null']\n"
               "space:\n  x: {type: float, low: 0, high: 1}\n",
               std::chrono::seconds(30));
  ASSERT_TRUE(s) << "the search ended although rank 0 never would by itself";
  EXPECT_EQ(s->state(), v1::SEARCH_FAILED);
  auto t = OnlyTrial(s->id());
  EXPECT_EQ(t.state(), v1::TRIAL_FAILED);
  EXPECT_NE(t.error().find("exited with code 3"), std::string::npos) << t.error();
  // Rank 0's node reports its run stopped (its slot given back) without waiting for the sleep: follow the
  // event stream (it starts with every worker's state) until no worker has a busy slot.
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  auto reader = stub_->Watch(&ctx, v1::WatchRequest{});
  std::map<std::string, int> busy;
  v1::Event ev;
  bool idle = false;
  while (!idle && reader->Read(&ev)) {
    if (ev.kind() != v1::Event::WORKER_UPDATED) continue;
    busy[ev.worker().node_id()] = ev.worker().busy_slots();
    idle = busy.size() == 2 && busy["nodea"] == 0 && busy["nodeb"] == 0;
  }
  ctx.TryCancel();
  reader->Finish();
  EXPECT_TRUE(idle) << "the other node's rank was stopped and its slot given back";
}

TEST_F(MultiNode, NodeCountFidelityRelaunchesAPromotedTrialOnBothNodesFromItsCheckpoint) {
  // scheduler.resource nodes: stage 1 trains epoch 1 on one node; ASHA promotes the trial (alone at its
  // rung), and stage 2 resumes from the checkpoint on both nodes (Gloo, a world of 2) and trains epoch 2.
  StartNodes("127.0.0.1", "127.0.0.1");
  auto s = Run("name: nodes-fidelity\n"
               "objective: {metric: val_accuracy, mode: max}\n"
               "budget: {max_trials: 1, max_retries: 0}\n"
               "scheduler: {type: asha, resource: nodes, min_resource: 1, max_resource: 2, reduction_factor: 2}\n"
               "command: [ladder-train, --epochs, '{nodes}', --batch-size, '32', --lr, '{lr}', --prefetch, '0',\n"
               "          --checkpoint, '{checkpoint_dir}/model.pt', --resume]\n"
               "env: {OMP_NUM_THREADS: '1'}\n"
               "space:\n  lr: {type: categorical, values: ['0.05']}\n",
               std::chrono::seconds(120));
  ASSERT_TRUE(s) << TrialLogs();
  ASSERT_EQ(s->state(), v1::SEARCH_COMPLETED) << s->error() << TrialLogs();
  auto t = OnlyTrial(s->id());
  EXPECT_EQ(t.state(), v1::TRIAL_COMPLETED) << t.error();
  EXPECT_EQ(t.group().nodes(), 2);
  ASSERT_EQ(t.placement_size(), 2) << "the last stage ran on both nodes";
  EXPECT_NE(t.placement(0).node_id(), t.placement(1).node_id());
  // Evaluation lines: epoch 1 on one rank; then, on two ranks with twice the global batch, steps that go on
  // from stage 1's last step (resumed, not trained again from step 1) up to epoch 2. Between them, the stage's
  // report to ASHA.
  std::vector<std::array<double, 4>> evals;  // step, epoch, ranks, global_batch
  int stage_reports = 0;
  for (const auto& p : t.metrics()) {
    const auto& v = p.values();
    if (v.count("ranks")) evals.push_back({static_cast<double>(p.step()), v.at("epoch"), v.at("ranks"), v.at("global_batch")});
    if (v.count("nodes")) {
      ++stage_reports;
      EXPECT_EQ(v.at("nodes"), 1);
      EXPECT_TRUE(v.count("val_accuracy"));
    }
  }
  ASSERT_GE(evals.size(), 2u);
  EXPECT_EQ(evals.front()[1], 1);
  EXPECT_EQ(evals.front()[2], 1);
  EXPECT_EQ(evals.front()[3], 32);
  for (size_t i = 1; i < evals.size(); ++i) {
    EXPECT_EQ(evals[i][2], 2) << "eval " << i;
    EXPECT_EQ(evals[i][3], 64) << "eval " << i;
    EXPECT_GT(evals[i][0], evals.front()[0]) << "stage 2 resumed after stage 1's last step";
  }
  EXPECT_EQ(evals.back()[1], 2);
  EXPECT_EQ(stage_reports, 1);
  EXPECT_GT(t.objective(), 0.5);
}

// A 2-node `launcher: mpirun` trial stopped as ladder up stops it at a Slurm time limit (the coordinator pauses and
// stops it as a preemption): the worker sends mpirun SIGUSR1, which Open MPI forwards at once to both ranks (its own
// SIGTERM would reach them late, then SIGKILL them), so rank 0 writes its checkpoint and rank 1's handler runs. A
// new coordinator and workers on the same database resume the trial from that checkpoint: every step stored once.
TEST_F(MultiNode, AnMpirunTrialStopsThroughItsCheckpointAndResumesWithNoStepRepeated) {
  StartNodes("nodea", "nodeb");
  const std::string script =
      "ck=$LADDER_CHECKPOINT_DIR/step; s=0; r=0; if [ -f $ck ]; then s=$(cat $ck); r=1; fi; "
      // Rank 0 leaves once rank 1's handler has run (or 5 s): mpirun ends the others when one exits non-zero.
      "if [ \"$OMPI_COMM_WORLD_RANK\" = 0 ]; then trap \"echo \\$s > $ck.tmp && mv $ck.tmp $ck; n=0; "
      "while [ ! -f $LADDER_CHECKPOINT_DIR/rank1-stopped ] && [ \\$n -lt 100 ]; do sleep 0.05; n=\\$((n + 1)); done; "
      "exit 138\" USR1; "
      "else trap \"touch $LADDER_CHECKPOINT_DIR/rank1-stopped; exit 0\" USR1; fi; e=$((s + 20)); "
      "while [ $r = 0 ] || [ $s -lt $e ]; do s=$((s + 1)); if [ \"$OMPI_COMM_WORLD_RANK\" = 0 ]; then "
      "echo \"{{\\\"step\\\": $s, \\\"score\\\": $s}}\"; fi; sleep 0.05; done";
  grpc::ClientContext ctx;
  v1::CreateSearchRequest req;
  req.set_spec_yaml("name: mpi-resumable\nobjective: {metric: score, mode: max}\nbudget: {max_trials: 1}\n"
                    "resources: {nodes: 2, ranks_per_node: 1, launcher: mpirun}\ncommand: [/bin/sh, -c, '" +
                    script + "']\nspace:\n  x: {type: float, low: 0, high: 1}\n");
  v1::CreateSearchResponse created;
  ASSERT_TRUE(stub_->CreateSearch(&ctx, req, &created).ok());
  // Once its points reach the coordinator, the trial is stopped as at a time limit.
  grpc::ClientContext wctx;
  wctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  v1::WatchRequest wreq;
  wreq.set_search_id(created.search().id());
  auto watch = stub_->Watch(&wctx, wreq);
  v1::Event ev;
  bool printing = false;
  while (!printing && watch->Read(&ev)) printing = ev.kind() == v1::Event::TRIAL_METRICS;
  wctx.TryCancel();
  watch->Finish();
  ASSERT_TRUE(printing) << TrialLogs();
  EXPECT_EQ(server_->PauseAndWait("the Slurm job reaches its time limit", std::chrono::seconds(60)), 0)
      << "mpirun ended within the pause" << TrialLogs();
  for (auto& w : workers_) w->Stop();
  workers_.clear();
  server_->Stop();
  // The next job: a coordinator on the same database, the same two nodes.
  server_ = std::make_unique<server::Server>(options_);
  server_->Start();
  channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
  stub_ = v1::Ladder::NewStub(channel_);
  StartNodes("nodea", "nodeb");
  auto s = testing::WaitForSearchEnd(*stub_, created.search().id(), std::chrono::seconds(60));
  ASSERT_TRUE(s) << TrialLogs();
  EXPECT_EQ(s->state(), v1::SEARCH_COMPLETED) << s->error() << TrialLogs();
  const auto db = dir_ / "ladder.db";
  const auto t = testing::Query(db, "SELECT attempt, preemptions FROM trials");
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0][0], "0") << "a stop at the time limit is not a failure";
  const auto steps = testing::Query(db, "SELECT COUNT(*), COUNT(DISTINCT step), MIN(step), MAX(step) FROM metrics "
                                        "WHERE name = 'score'");
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0][0], steps[0][1]) << "a step stored twice";
  EXPECT_EQ(steps[0][2], "1");
  EXPECT_EQ(steps[0][3], steps[0][0]) << "a step missing";
  EXPECT_GT(std::stoi(steps[0][3]), 20) << "resumed from its checkpoint, then 20 steps";
  const auto runs = testing::Query(db, "SELECT outcome FROM allocations ORDER BY id");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0][0], "preempted");
  bool rank1_stopped = false;
  std::error_code ec;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir_, ec)) {
    rank1_stopped |= e.path().filename() == "rank1-stopped";
  }
  EXPECT_TRUE(rank1_stopped) << "rank 1 (on the other node) got the stop signal, not SIGKILL" << TrialLogs();
}

}  // namespace
}  // namespace ladder
