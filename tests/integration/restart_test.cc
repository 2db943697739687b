// System test: kill -9 of ladder-server, three times during one search. Real ladder-server and ladder-worker
// processes on 127.0.0.1; the server comes back on the same port and database each time.
//
// What must hold: the search completes; no trial was restarted (attempt 0, one pid per trial: each trial
// prints its own pid in every metrics line); every metric point that was in the database at a kill is still
// there at the end; and since workers resend what was not acknowledged, every trial's points are complete:
// steps 1..N, each exactly once.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <map>
#include <set>

#include "tests/integration/system_support.h"
#include "tests/integration/test_support.h"

namespace ladder {
namespace {

using testing::BinDir;
using testing::Child;
using testing::Query;
using testing::Spawn;

constexpr int kSteps = 50;  // points per trial, 0.1 s apart

// Follows the search's events until its trials have made `n` metric points of progress (or the search ended, or
// the deadline passed): watchers get each trial's newest point (coalesced), so progress is counted in steps.
// A call that started on the connection to the killed server ends at once: it is made again.
int WaitForMetricEvents(v1::Ladder::Stub& stub, int64_t sid, int n, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::system_clock::now() + timeout;
  int seen = 0;
  std::map<int64_t, int64_t> last_step;  // trial → the newest step seen
  while (seen < n && std::chrono::system_clock::now() < deadline) {
    grpc::ClientContext ctx;
    ctx.set_deadline(deadline);
    ctx.set_wait_for_ready(true);
    v1::WatchRequest req;
    req.set_search_id(sid);
    auto reader = stub.Watch(&ctx, req);
    v1::Event ev;
    bool ended = false;
    while (seen < n && !ended && reader->Read(&ev)) {
      if (ev.kind() == v1::Event::TRIAL_METRICS) {
        auto [it, fresh] = last_step.emplace(ev.trial().id(), ev.metrics().step());
        if (fresh) {
          ++seen;
        } else if (ev.metrics().step() > it->second) {
          seen += static_cast<int>(ev.metrics().step() - it->second);
          it->second = ev.metrics().step();
        }
      }
      ended = ev.kind() == v1::Event::SEARCH_UPDATED && ev.search().state() != v1::SEARCH_RUNNING;
    }
    ctx.TryCancel();
    reader->Finish();
    if (ended) break;
  }
  return seen;
}

TEST(System, SearchSurvivesRepeatedKill9OfTheCoordinatorWithoutRestartsOrLoss) {
  testing::TempDir dir("restart");
  const auto db = dir / "ladder.db";
  const int port = testing::FreePort();
  ASSERT_GT(port, 0);
  const std::string address = "127.0.0.1:" + std::to_string(port);
  auto start_server = [&](Child* c) {
    Spawn(c,
          {BinDir() + "/ladder-server", "--listen", address, "--db", db.string(), "--no-token",
           "--heartbeat-timeout-ms", "4000"},
          true);
    ASSERT_EQ(testing::ReadListenAddress(*c), address);
  };
  Child server;
  start_server(&server);
  std::vector<std::unique_ptr<Child>> workers;
  for (const char* node : {"a", "b"}) {
    workers.push_back(std::make_unique<Child>());
    Spawn(workers.back().get(),
          {BinDir() + "/ladder-worker", "--server", address, "--node-id", node, "--slots", "2", "--trial-dir",
           (dir / (std::string("trials-") + node)).string()},
          false);
  }

  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  auto stub = v1::Ladder::NewStub(channel);
  v1::CreateSearchRequest req;
  req.set_spec_yaml(R"(
name: crashy
objective: {metric: score, mode: max}
budget: {max_trials: 8, parallelism: 4, max_retries: 0}
command: [/bin/sh, -c, 'i=0; while [ $i -lt )" + std::to_string(kSteps) +
                    R"( ]; do i=$((i+1)); echo "{{\"step\": $i, \"pid\": $$, \"score\": {x}}}"; sleep 0.1; done']
space:
  x: {type: float, low: 0.0, high: 1.0}
)");
  v1::CreateSearchResponse resp;
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    ctx.set_wait_for_ready(true);
    auto st = stub->CreateSearch(&ctx, req, &resp);
    ASSERT_TRUE(st.ok()) << st.error_message();
  }
  const int64_t sid = resp.search().id();

  // Points in the database at each kill: (trial, step) → pid.
  std::map<std::pair<std::string, std::string>, std::string> durable_at_kills;
  for (int kill = 0; kill < 3; ++kill) {
    ASSERT_GE(WaitForMetricEvents(*stub, sid, 60, std::chrono::seconds(30)), 60)
        << "no progress before kill " << kill;
    server.Kill(SIGKILL);
    auto rows = Query(db, "SELECT trial_id, step, value FROM metrics WHERE name = 'pid'");
    for (const auto& r : rows) durable_at_kills[{r[0], r[1]}] = r[2];
    // The trials keep running while the coordinator is away; then it comes back on the same port.
    start_server(&server);
  }
  EXPECT_FALSE(durable_at_kills.empty());

  std::optional<v1::Search> done;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (!done && std::chrono::steady_clock::now() < give_up) {
    WaitForMetricEvents(*stub, sid, 1, std::chrono::seconds(30));  // waits for the channel to be ready again
    done = testing::WaitForSearchEnd(*stub, sid, std::chrono::seconds(60));
  }
  ASSERT_TRUE(done) << "the search did not finish";
  EXPECT_EQ(done->state(), v1::SEARCH_COMPLETED) << done->error();
  EXPECT_EQ(done->completed(), 8);
  server.Kill(SIGTERM);  // a clean stop flushes everything

  for (const auto& t : Query(db, "SELECT id, state, attempt FROM trials")) {
    EXPECT_EQ(t[1], std::to_string(v1::TRIAL_COMPLETED)) << "trial " << t[0];
    EXPECT_EQ(t[2], "0") << "trial " << t[0] << " was restarted";
  }
  EXPECT_EQ(Query(db, "SELECT COUNT(*) FROM events WHERE kind = 'trial_requeued'")[0][0], "0");
  EXPECT_NE(Query(db, "SELECT COUNT(*) FROM events WHERE kind = 'trial_reattached'")[0][0], "0");
  // One process per trial for its whole life.
  for (const auto& r : Query(db, "SELECT trial_id, COUNT(DISTINCT value) FROM metrics WHERE name = 'pid' GROUP BY "
                                 "trial_id")) {
    EXPECT_EQ(r[1], "1") << "trial " << r[0] << " ran in more than one process";
  }
  // Complete and without duplicates: steps 1..kSteps once each, for all 8 trials.
  auto per_trial = Query(db, "SELECT trial_id, COUNT(*), COUNT(DISTINCT step), MIN(step), MAX(step) FROM metrics "
                             "WHERE name = 'score' GROUP BY trial_id");
  ASSERT_EQ(per_trial.size(), 8u);
  for (const auto& r : per_trial) {
    EXPECT_EQ(r[1], std::to_string(kSteps)) << "trial " << r[0];
    EXPECT_EQ(r[2], std::to_string(kSteps)) << "trial " << r[0];
    EXPECT_EQ(r[3], "1");
    EXPECT_EQ(r[4], std::to_string(kSteps));
  }
  // Nothing that was durable at a kill went missing (or changed).
  std::map<std::pair<std::string, std::string>, std::string> final_points;
  for (const auto& r : Query(db, "SELECT trial_id, step, value FROM metrics WHERE name = 'pid'")) {
    final_points[{r[0], r[1]}] = r[2];
  }
  for (const auto& [key, pid] : durable_at_kills) {
    auto it = final_points.find(key);
    ASSERT_NE(it, final_points.end()) << "trial " << key.first << " step " << key.second << " was lost";
    EXPECT_EQ(it->second, pid);
  }
  for (auto& w : workers) w->Kill(SIGTERM);
}

}  // namespace
}  // namespace ladder
