// System tests: real ladder-server and ladder-worker processes; kill -9 of the worker during a search, a worker
// frozen as by a power loss (no TCP close), and a paused worker whose rank must be gone before its trial runs
// elsewhere.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "tests/integration/system_support.h"
#include "tests/support/proc_stat.h"
#include "tests/integration/test_support.h"

namespace ladder {
namespace {

using testing::BinDir;
using testing::Child;
using testing::Spawn;

TEST(System, KilledWorkerTrialsAreRequeuedAndTheSearchFinishesOnANewWorker) {
  testing::TempDir dir("system");
  Child server;
  Spawn(&server,
        {BinDir() + "/ladder-server", "--listen", "127.0.0.1:0", "--db", (dir / "ladder.db").string(), "--no-token",
         "--heartbeat-timeout-ms", "1500"},
        true);
  std::string address = testing::ReadListenAddress(server);
  ASSERT_FALSE(address.empty()) << "the server printed no address";

  auto worker_args = [&](const std::string& node) {
    return std::vector<std::string>{BinDir() + "/ladder-worker", "--server", address, "--node-id", node, "--slots",
                                    "2", "--trial-dir", (dir / ("trials-" + node)).string()};
  };
  Child worker_a;
  Spawn(&worker_a, worker_args("a"), false);

  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  auto stub = v1::Ladder::NewStub(channel);
  // Each trial reports 20 points, 0.1 s apart.
  grpc::ClientContext cctx;
  cctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  cctx.set_wait_for_ready(true);
  v1::CreateSearchRequest req;
  req.set_spec_yaml(R"(
name: survive
objective: {metric: score, mode: max}
budget: {max_trials: 4, parallelism: 2, max_retries: 2}
command: [/bin/sh, -c, 'i=0; while [ $i -lt 20 ]; do i=$((i+1)); echo "{{\"step\": $i, \"score\": {x}}}"; sleep 0.1; done']
space:
  x: {type: float, low: 0.0, high: 1.0}
)");
  v1::CreateSearchResponse resp;
  auto st = stub->CreateSearch(&cctx, req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  const int64_t sid = resp.search().id();

  grpc::ClientContext wctx;
  wctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(90));
  v1::WatchRequest wreq;
  wreq.set_search_id(sid);
  auto watch = stub->Watch(&wctx, wreq);
  v1::Event ev;
  // 1. Both first trials report metrics on worker a → kill -9 the worker.
  std::set<int64_t> reporting;
  while (reporting.size() < 2 && watch->Read(&ev)) {
    if (ev.kind() == v1::Event::TRIAL_METRICS) reporting.insert(ev.trial().id());
  }
  ASSERT_EQ(reporting.size(), 2u);
  worker_a.Kill(SIGKILL);
  // 2. The coordinator notices and requeues both.
  std::set<int64_t> requeued;
  while (requeued.size() < 2 && watch->Read(&ev)) {
    if (ev.kind() == v1::Event::TRIAL_UPDATED && ev.trial().state() == v1::TRIAL_PENDING &&
        ev.trial().attempt() == 1) {
      requeued.insert(ev.trial().id());
    }
  }
  EXPECT_EQ(requeued, reporting);
  // 3. A new worker comes; the search finishes with every trial completed.
  Child worker_b;
  Spawn(&worker_b, worker_args("b"), false);
  std::optional<v1::Search> final_search;
  while (watch->Read(&ev)) {
    if (ev.kind() == v1::Event::SEARCH_UPDATED && ev.search().state() != v1::SEARCH_RUNNING) {
      final_search = ev.search();
      break;
    }
  }
  wctx.TryCancel();
  watch->Finish();
  ASSERT_TRUE(final_search) << "the search did not finish";
  EXPECT_EQ(final_search->state(), v1::SEARCH_COMPLETED) << final_search->error();
  EXPECT_EQ(final_search->completed(), 4);

  grpc::ClientContext lctx;
  v1::ListTrialsRequest lreq;
  lreq.set_search_id(sid);
  v1::ListTrialsResponse trials;
  ASSERT_TRUE(stub->ListTrials(&lctx, lreq, &trials).ok());
  int retried = 0;
  for (const auto& t : trials.trials()) {
    EXPECT_EQ(t.state(), v1::TRIAL_COMPLETED);
    EXPECT_EQ(t.placement(0).node_id(), "b") << "every trial finished on the new worker";
    retried += t.attempt() == 1;
  }
  EXPECT_EQ(retried, 2);
  worker_b.Kill(SIGTERM);
  server.Kill(SIGTERM);
}

// A node lost without a word (power, a kernel hang): its connection is never closed, so only its lease finds it.
// The worker is frozen with SIGSTOP (its sockets stay open, nothing is sent; a network namespace would need the
// coordinator to listen beyond 127.0.0.1): its running trial is requeued once the lease runs out, and completes on
// another worker.
TEST(System, AFrozenWorkersTrialsAreRequeuedWhenItsLeaseRunsOut) {
  testing::TempDir dir("frozen");
  Child server;
  Spawn(&server,
        {BinDir() + "/ladder-server", "--listen", "127.0.0.1:0", "--db", (dir / "ladder.db").string(), "--no-token",
         "--heartbeat-timeout-ms", "1500"},
        true);
  const std::string address = testing::ReadListenAddress(server);
  ASSERT_FALSE(address.empty()) << "the server printed no address";
  auto worker_args = [&](const std::string& node) {
    return std::vector<std::string>{BinDir() + "/ladder-worker", "--server", address, "--node-id", node, "--slots",
                                    "1", "--trial-dir", (dir / ("trials-" + node)).string()};
  };
  Child frozen;
  Spawn(&frozen, worker_args("a"), false);
  auto stub = v1::Ladder::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext cctx;
  cctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  cctx.set_wait_for_ready(true);
  v1::CreateSearchRequest req;
  req.set_spec_yaml("name: frozen\nobjective: {metric: score, mode: max}\nbudget: {max_trials: 1, max_retries: 2}\n"
                    "command: [/bin/sh, -c, 'i=0; while [ $i -lt 30 ]; do i=$((i+1)); echo \"{{\\\"step\\\": $i, "
                    "\\\"score\\\": {x}}}\"; sleep 0.1; done']\nspace:\n  x: {type: float, low: 0.0, high: 1.0}\n");
  v1::CreateSearchResponse resp;
  ASSERT_TRUE(stub->CreateSearch(&cctx, req, &resp).ok());
  grpc::ClientContext wctx;
  wctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(90));
  v1::WatchRequest wreq;
  wreq.set_search_id(resp.search().id());
  auto watch = stub->Watch(&wctx, wreq);
  v1::Event ev;
  bool reporting = false;
  while (!reporting && watch->Read(&ev)) reporting = ev.kind() == v1::Event::TRIAL_METRICS;
  ASSERT_TRUE(reporting);
  ASSERT_EQ(kill(frozen.pid, SIGSTOP), 0);
  bool requeued = false;
  while (!requeued && watch->Read(&ev)) {
    requeued = ev.kind() == v1::Event::TRIAL_UPDATED && ev.trial().state() == v1::TRIAL_PENDING &&
               ev.trial().attempt() == 1;
  }
  EXPECT_TRUE(requeued) << "the frozen worker's trial was not requeued";
  Child other;
  Spawn(&other, worker_args("b"), false);
  std::optional<v1::Search> ended;
  while (!ended && watch->Read(&ev)) {
    if (ev.kind() == v1::Event::SEARCH_UPDATED && ev.search().state() != v1::SEARCH_RUNNING) ended = ev.search();
  }
  wctx.TryCancel();
  watch->Finish();
  ASSERT_TRUE(ended) << "the search did not end";
  EXPECT_EQ(ended->state(), v1::SEARCH_COMPLETED) << ended->error();
  const auto runs = testing::Query(dir / "ladder.db", "SELECT outcome FROM allocations ORDER BY id");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_NE(runs[0][0], "exited") << "the frozen worker's run was given up, not ended";
  EXPECT_EQ(runs[1][0], "exited");
  const auto trial = testing::Query(dir / "ladder.db", "SELECT state, attempt FROM trials");
  ASSERT_EQ(trial.size(), 1u);
  EXPECT_EQ(trial[0][0], "3");
  EXPECT_EQ(trial[0][1], "1");
  kill(frozen.pid, SIGCONT);
  frozen.Kill(SIGKILL);
  other.Kill(SIGTERM);
  server.Kill(SIGTERM);
}


// A worker paused (SIGSTOP) past its lease: its trial runs again on another node, and by then the paused worker's
// rank is gone (its rank guard killed it at the lease less the margin, worker/rank_guard.h) — the two runs never
// overlap, though the paused worker could not stop anything itself.
TEST(System, APausedWorkersRankIsGoneBeforeItsTrialStartsElsewhere) {
  testing::TempDir dir("pause");
  Child server;
  Spawn(&server,
        {BinDir() + "/ladder-server", "--listen", "127.0.0.1:0", "--db", (dir / "ladder.db").string(), "--no-token",
         "--heartbeat-timeout-ms", "1500"},
        true);
  std::string address = testing::ReadListenAddress(server);
  ASSERT_FALSE(address.empty()) << "the server printed no address";
  auto worker_args = [&](const std::string& node) {
    return std::vector<std::string>{BinDir() + "/ladder-worker", "--server", address, "--node-id", node, "--slots",
                                    "1", "--trial-dir", (dir / ("trials-" + node)).string()};
  };
  Child worker_a;
  Spawn(&worker_a, worker_args("a"), false);

  auto stub = v1::Ladder::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext cctx;
  cctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  cctx.set_wait_for_ready(true);
  v1::CreateSearchRequest req;
  // Every run records its start and each point with its epoch and the time (ns), before the point goes to stdout.
  const std::string record = (dir / "record").string();
  const std::string script = R"sh(echo "start $LADDER_ASSIGNMENT_EPOCH $$ $(date +%s%N)" >> RECORD; i=0; )sh"
                             R"sh(while [ $i -lt 40 ]; do i=$((i+1)); echo "point $LADDER_ASSIGNMENT_EPOCH $$ $(date +%s%N)" )sh"
                             R"sh(>> RECORD; echo "{{\"step\": $i, \"score\": {x}}}"; sleep 0.1; done)sh";
  req.set_spec_yaml(R"(
name: pause
objective: {metric: score, mode: max}
budget: {max_trials: 1, parallelism: 1, max_retries: 2}
command: [/bin/sh, -c, ')" + std::regex_replace(script, std::regex("RECORD"), record) + R"(']
space:
  x: {type: float, low: 0.0, high: 1.0}
)");
  v1::CreateSearchResponse resp;
  auto st = stub->CreateSearch(&cctx, req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  grpc::ClientContext wctx;
  wctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(90));
  v1::WatchRequest wreq;
  wreq.set_search_id(resp.search().id());
  auto watch = stub->Watch(&wctx, wreq);
  v1::Event ev;
  // 1. The trial runs on a; b comes; a is paused.
  bool reporting = false;
  while (!reporting && watch->Read(&ev)) reporting = ev.kind() == v1::Event::TRIAL_METRICS;
  ASSERT_TRUE(reporting);
  Child worker_b;
  Spawn(&worker_b, worker_args("b"), false);
  std::ifstream first_line(record);
  std::string word;
  int64_t old_epoch = 0;
  int old_rank = 0;
  ASSERT_TRUE(first_line >> word >> old_epoch >> old_rank) << "the first run recorded no start";
  ASSERT_EQ(kill(worker_a.pid, SIGSTOP), 0);
  // 2. When the trial is running on b, nothing of the paused worker's rank lives: its process group holds at
  // most the rank itself as a zombie (its parent, the paused worker, cannot reap it).
  bool moved = false;
  while (!moved && watch->Read(&ev)) {
    moved = ev.kind() == v1::Event::TRIAL_UPDATED && ev.trial().state() == v1::TRIAL_RUNNING &&
            ev.trial().placement_size() > 0 && ev.trial().placement(0).node_id() == "b";
  }
  ASSERT_TRUE(moved) << "the trial never ran on b";
  std::vector<std::string> alive;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto stat = testing::ReadProcStat(std::stoi(name));
    if (stat.pgrp == old_rank && stat.state != 'Z' && stat.state != '?') alive.push_back(name + " " + stat.state);
  }
  EXPECT_TRUE(alive.empty()) << "the paused worker's rank (process group " << old_rank << ") still runs: "
                             << ::testing::PrintToString(alive);
  // 3. a wakes (and is fenced); the search completes on b.
  kill(worker_a.pid, SIGCONT);
  std::optional<v1::Search> final_search;
  while (!final_search && watch->Read(&ev)) {
    if (ev.kind() == v1::Event::SEARCH_UPDATED && ev.search().state() != v1::SEARCH_RUNNING) final_search = ev.search();
  }
  wctx.TryCancel();
  watch->Finish();
  ASSERT_TRUE(final_search) << "the search did not finish";
  EXPECT_EQ(final_search->state(), v1::SEARCH_COMPLETED) << final_search->error();
  // The records: the old run's last point came before the new run started.
  std::ifstream in(record);
  std::string line;
  int64_t old_last = 0, new_start = 0;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    int64_t epoch = 0, pid = 0, ns = 0;
    if (!(words >> word >> epoch >> pid >> ns)) continue;
    if (epoch == old_epoch) old_last = std::max(old_last, ns);
    if (epoch != old_epoch && word == "start" && new_start == 0) new_start = ns;
  }
  ASSERT_GT(new_start, 0) << "no second run recorded";
  EXPECT_LT(old_last, new_start) << "the paused worker's run went on after the trial started on b (by "
                                 << (old_last - new_start) / 1000000 << " ms)";
  worker_b.Kill(SIGTERM);
  worker_a.Kill(SIGTERM);
  server.Kill(SIGTERM);
}

}  // namespace
}  // namespace ladder
