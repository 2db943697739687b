// System tests: a worker that loses its coordinator (kill -9 of ladder-server) keeps its runs going while the
// coordinator comes back within the worker's lease, and stops them (SIGTERM) once it has been cut off for longer,
// before a restarted coordinator could give them away (common/coordinator_loss_rule.h). Real ladder-server and
// ladder-worker processes on 127.0.0.1; the server comes back on the same port and database.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <string>
#include <thread>

#include "tests/integration/system_support.h"
#include "tests/integration/test_support.h"

namespace ladder {
namespace {

using testing::BinDir;
using testing::Child;
using testing::Query;
using testing::Spawn;

// Every run appends "start EPOCH" to the record, and "term EPOCH" when it gets SIGTERM; it prints a point every
// 0.1 s, `steps` of them.
std::string Spec(const std::string& record, int steps) {
  const std::string script =
      R"sh(trap ''echo term $LADDER_ASSIGNMENT_EPOCH >> RECORD; exit 143'' TERM; )sh"  // '' in YAML: one quote
      R"sh(echo "start $LADDER_ASSIGNMENT_EPOCH" >> RECORD; i=0; while [ $i -lt STEPS ]; do i=$((i+1)); )sh"
      R"sh(echo "{{\"step\": $i, \"score\": {x}}}"; sleep 0.1; done)sh";
  std::string command = std::regex_replace(script, std::regex("RECORD"), record);
  command = std::regex_replace(command, std::regex("STEPS"), std::to_string(steps));
  return R"(
name: lost
objective: {metric: score, mode: max}
budget: {max_trials: 1, parallelism: 1, max_retries: 2}
command: [/bin/sh, -c, ')" + command + R"(']
space:
  x: {type: float, low: 0.0, high: 1.0}
)";
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

int Count(const std::string& text, const std::string& word) {
  int n = 0;
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) ++n;
  return n;
}

struct Cluster {
  testing::TempDir dir{"lost"};
  std::string address;
  std::string lease_ms;
  Child server, worker;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Ladder::Stub> stub;

  explicit Cluster(const std::string& lease) : lease_ms(lease) {
    address = "127.0.0.1:" + std::to_string(testing::FreePort());
    StartServer();
    Spawn(&worker,
          {BinDir() + "/ladder-worker", "--server", address, "--node-id", "a", "--slots", "1", "--trial-dir",
           (dir / "trials").string()},
          false);
    channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
    stub = v1::Ladder::NewStub(channel);
  }
  ~Cluster() {
    worker.Kill(SIGTERM);
    server.Kill(SIGTERM);
  }
  void StartServer() {
    Spawn(&server,
          {BinDir() + "/ladder-server", "--listen", address, "--db", (dir / "ladder.db").string(), "--no-token",
           "--heartbeat-timeout-ms", lease_ms},
          true);
    ASSERT_EQ(testing::ReadListenAddress(server), address);
  }
  int64_t Submit(const std::string& spec) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    ctx.set_wait_for_ready(true);
    v1::CreateSearchRequest req;
    req.set_spec_yaml(spec);
    v1::CreateSearchResponse resp;
    auto st = stub->CreateSearch(&ctx, req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return resp.search().id();
  }
  // Until the search's trial has reported a point.
  bool WaitForPoint(int64_t sid) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    v1::WatchRequest req;
    req.set_search_id(sid);
    auto watch = stub->Watch(&ctx, req);
    v1::Event ev;
    bool seen = false;
    while (!seen && watch->Read(&ev)) seen = ev.kind() == v1::Event::TRIAL_METRICS;
    ctx.TryCancel();
    watch->Finish();
    return seen;
  }
};

// Polls `path` (a trial's record: written by the trial, nothing to wait on) until it holds `word` `n` times.
bool WaitForRecord(const std::string& path, const std::string& word, int n, std::chrono::seconds timeout) {
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  while (Count(ReadAll(path), word) < n) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

TEST(System, AWorkerCutOffFromItsCoordinatorPastItsLeaseStopsItsRunsAndReportsThemStopped) {
  Cluster c("1000");  // the lease: the worker stops its runs 1 s after the coordinator last heard it
  const std::string record = (c.dir / "record").string();
  const int64_t sid = c.Submit(Spec(record, 600));
  ASSERT_TRUE(c.WaitForPoint(sid));
  c.server.Kill(SIGKILL);
  const auto killed = std::chrono::steady_clock::now();
  // The trial gets SIGTERM once the worker has been cut off for its lease (and not at once).
  ASSERT_TRUE(WaitForRecord(record, "term ", 1, std::chrono::seconds(10))) << "the run was not stopped";
  EXPECT_GE(std::chrono::steady_clock::now() - killed, std::chrono::milliseconds(500));
  // The coordinator comes back: the worker reports the run stopped (cancelled, with why), and the trial runs again.
  c.StartServer();
  ASSERT_TRUE(WaitForRecord(record, "start ", 2, std::chrono::seconds(20))) << "the trial did not run again";
  const auto requeued = Query(c.dir / "ladder.db", "SELECT detail FROM events WHERE kind = 'trial_requeued'");
  ASSERT_EQ(requeued.size(), 1u);
  EXPECT_NE(requeued[0][0].find("stopped by its worker"), std::string::npos) << requeued[0][0];
  EXPECT_NE(requeued[0][0].find("the coordinator had not heard from this worker"), std::string::npos)
      << requeued[0][0];
}

TEST(System, AWorkerWhoseCoordinatorComesBackWithinItsLeaseKeepsItsRuns) {
  Cluster c("4000");
  const std::string record = (c.dir / "record").string();
  const int64_t sid = c.Submit(Spec(record, 70));  // 7 s: past the lease after the kill
  ASSERT_TRUE(c.WaitForPoint(sid));
  c.server.Kill(SIGKILL);
  c.StartServer();
  std::optional<v1::Search> done;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  // The channel reconnects to the restarted coordinator: wait for it to be connected, then for the search's end (a
  // stream cut while the server came back is watched again).
  while (!done && std::chrono::steady_clock::now() < give_up) {
    if (!c.channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(5))) continue;
    done = testing::WaitForSearchEnd(*c.stub, sid, std::chrono::seconds(30));
  }
  ASSERT_TRUE(done) << "the search did not finish";
  EXPECT_EQ(done->state(), v1::SEARCH_COMPLETED) << done->error();
  const std::string runs = ReadAll(record);
  EXPECT_EQ(Count(runs, "start "), 1) << runs;
  EXPECT_EQ(Count(runs, "term "), 0) << runs;
  const auto db = c.dir / "ladder.db";
  EXPECT_EQ(Query(db, "SELECT COUNT(*) FROM events WHERE kind = 'trial_requeued'")[0][0], "0");
  EXPECT_EQ(Query(db, "SELECT COUNT(*) FROM events WHERE kind = 'trial_reattached'")[0][0], "1");
}

}  // namespace
}  // namespace ladder
