// System tests: real ladder-server and ladder-worker processes; kill -9 of the worker during a search, and a worker
// frozen as by a power loss (no TCP close).
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <set>

#include "tests/integration/system_support.h"
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

}  // namespace
}  // namespace ladder
