// Server and worker in one process on port 0, real trial processes, then a look straight into SQLite.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <sqlite3.h>

#include <set>

#include "server/server.h"
#include "tests/integration/system_support.h"
#include "tests/integration/test_support.h"
#include "worker/worker.h"

namespace ladder {
namespace {

class SearchE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::FreshDir("e2e");
    server::ServerOptions so;
    so.listen = "127.0.0.1:0";
    so.db_path = (dir_ / "ladder.db").string();
    so.token = "secret-token";
    server_ = std::make_unique<server::Server>(so);
    server_->Start();
    worker::WorkerOptions wo;
    wo.server = server_->address();
    wo.token = "secret-token";
    wo.node_id = "w1";
    wo.slots = 2;
    wo.trial_dir = (dir_ / "trials").string();
    worker_ = std::make_unique<worker::Worker>(wo);
    worker_->Start();
    ASSERT_TRUE(worker_->WaitRegistered(std::chrono::seconds(10)));
    channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    stub_ = v1::Ladder::NewStub(channel_);
  }
  void TearDown() override {
    worker_->Stop();
    server_->Stop();
    std::filesystem::remove_all(dir_);
  }
  grpc::Status Create(const std::string& yaml, v1::CreateSearchResponse* resp, const std::string& token) {
    grpc::ClientContext ctx;
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    v1::CreateSearchRequest req;
    req.set_spec_yaml(yaml);
    req.set_spec_path("e2e.yaml");
    return stub_->CreateSearch(&ctx, req, resp);
  }
  // Creates the search with the token and waits up to `limit` for it to end: its final state; nullopt (and a
  // failure) when it could not be created, nullopt when it did not end in time.
  std::optional<v1::Search> RunSearch(const std::string& yaml, std::chrono::seconds limit) {
    v1::CreateSearchResponse resp;
    auto st = Create(yaml, &resp, "secret-token");
    EXPECT_TRUE(st.ok()) << st.error_message();
    if (!st.ok()) return std::nullopt;
    return testing::WaitForSearchEnd(*stub_, resp.search().id(), limit, "secret-token");
  }
  // The rendezvous directory (worker/rendezvous_dir.h) of this process's worker of node `node` (in-process).
  static std::filesystem::path RendezvousDirOf(const std::string& node) {
    return std::filesystem::temp_directory_path() /
           ("ladder-rendezvous-" + std::to_string(::geteuid()) + "-" + node + "-" + std::to_string(::getpid()));
  }
  // Runs one query on the database file (a separate connection, so only committed data is visible).
  std::vector<std::vector<std::string>> Query(const std::string& sql) { return testing::Query(dir_ / "ladder.db", sql); }

  std::filesystem::path dir_;
  std::unique_ptr<server::Server> server_;
  std::unique_ptr<worker::Worker> worker_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Ladder::Stub> stub_;
};

// The fake trial: prints metrics for x, some garbage, and a blank line; the score peaks at x = 0.3.
constexpr const char* kFakeTrialSpec = R"(
name: e2e
objective: {metric: score, mode: max}
budget: {max_trials: 6, parallelism: 2}
sampler: {type: random, seed: 11}
command: [/bin/sh, -c, 'echo "{{\"step\": 1, \"score\": 0.5}}"; echo "not json"; echo; echo "{{\"step\": 2, \"score\": $(awk "BEGIN{{print 1 - ({x} - 0.3)^2}}")}}"; echo "{{broken"']
space:
  x: {type: float, low: 0.0, high: 1.0}
)";

TEST_F(SearchE2E, RunsTrialsAndStoresEverythingInSqlite) {
  auto done = RunSearch(kFakeTrialSpec, std::chrono::seconds(60));
  ASSERT_TRUE(done);
  EXPECT_EQ(done->state(), v1::SEARCH_COMPLETED) << done->error();
  EXPECT_EQ(done->completed(), 6);

  auto trials = Query("SELECT state, objective, metric_count, ignored_lines, last_ignored_line FROM trials");
  ASSERT_EQ(trials.size(), 6u);
  for (const auto& t : trials) {
    EXPECT_EQ(t[0], std::to_string(v1::TRIAL_COMPLETED));
    EXPECT_NE(t[1], "NULL");
    EXPECT_EQ(t[2], "2");
    EXPECT_EQ(t[3], "2") << "'not json' and '{broken' are counted; the blank line is not";
    EXPECT_EQ(t[4], "{broken");
  }
  // The objective is the last reported score, which matches the parameter the trial got.
  auto check = Query(
      "SELECT t.objective, p.real_value FROM trials t JOIN params p ON p.trial_id = t.id AND p.name = 'x'");
  ASSERT_EQ(check.size(), 6u);
  for (const auto& r : check) {
    double x = std::stod(r[1]);
    EXPECT_NEAR(std::stod(r[0]), 1 - (x - 0.3) * (x - 0.3), 1e-4);
  }
  EXPECT_EQ(Query("SELECT COUNT(*) FROM metrics WHERE name = 'score'")[0][0], "12");
  EXPECT_EQ(Query("SELECT COUNT(*) FROM allocations WHERE released_at IS NOT NULL AND outcome = 'exited'")[0][0],
            "6");
  EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'trial_completed'")[0][0], "6");
  EXPECT_EQ(Query("SELECT state FROM searches")[0][0], std::to_string(v1::SEARCH_COMPLETED));
  // Never more than 2 at a time: no two allocations of the 2 slots overlap beyond the slot count.
  auto allocs = Query("SELECT started_at, released_at FROM allocations");
  for (const auto& a : allocs) {
    int overlapping = 0;
    for (const auto& b : allocs) {
      if (std::stod(b[0]) <= std::stod(a[0]) && std::stod(a[0]) < std::stod(b[1])) ++overlapping;
    }
    EXPECT_LE(overlapping, 2);
  }
  // One-rank trials need no rendezvous: the worker made no directory for them (one killed now would leave none).
  EXPECT_FALSE(std::filesystem::exists(RendezvousDirOf("w1"))) << RendezvousDirOf("w1");
}

// Every call needs the token, reads included: a search's spec may carry credentials in its env.
TEST_F(SearchE2E, EveryCallNeedsTheToken) {
  v1::CreateSearchResponse resp;
  EXPECT_EQ(Create(kFakeTrialSpec, &resp, "").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Create(kFakeTrialSpec, &resp, "wrong").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Query("SELECT COUNT(*) FROM searches")[0][0], "0");
  ASSERT_TRUE(Create(kFakeTrialSpec, &resp, "secret-token").ok());
  for (const std::string token : {"", "wrong"}) {
    auto ctx = [&] {
      auto c = std::make_unique<grpc::ClientContext>();
      if (!token.empty()) c->AddMetadata("authorization", "Bearer " + token);
      return c;
    };
    v1::GetSearchRequest get;
    get.set_search_id(resp.search().id());
    v1::GetSearchResponse got;
    EXPECT_EQ(stub_->GetSearch(ctx().get(), get, &got).error_code(), grpc::StatusCode::UNAUTHENTICATED) << token;
    EXPECT_TRUE(got.search().spec_yaml().empty());
    v1::ListSearchesResponse list;
    EXPECT_EQ(stub_->ListSearches(ctx().get(), v1::ListSearchesRequest{}, &list).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    v1::ListTrialsRequest lt;
    lt.set_search_id(resp.search().id());
    v1::ListTrialsResponse trials;
    EXPECT_EQ(stub_->ListTrials(ctx().get(), lt, &trials).error_code(), grpc::StatusCode::UNAUTHENTICATED);
    v1::ServerInfoResponse info;
    EXPECT_EQ(stub_->ServerInfo(ctx().get(), v1::ServerInfoRequest{}, &info).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    auto c = ctx();
    auto reader = stub_->Watch(c.get(), v1::WatchRequest{});
    v1::Event ev;
    EXPECT_FALSE(reader->Read(&ev)) << "no snapshot for a caller without the token";
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
}

TEST_F(SearchE2E, MissingCommandFailsTrialsAndTheSearchWithAClearError) {
  auto done = RunSearch(R"(
name: missing
objective: {metric: score, mode: max}
budget: {max_trials: 10, parallelism: 2, max_failed_trials: 3}
command: [no-such-trainer-xyz, "--x={x}"]
space:
  x: {type: float, low: 0.0, high: 1.0}
)", std::chrono::seconds(30));
  ASSERT_TRUE(done);
  EXPECT_EQ(done->state(), v1::SEARCH_FAILED);
  EXPECT_NE(done->error().find("'no-such-trainer-xyz' not found"), std::string::npos) << done->error();
  EXPECT_LE(done->failed() + done->cancelled(), 10);
  auto rows = Query("SELECT DISTINCT error FROM trials WHERE state = " + std::to_string(v1::TRIAL_FAILED));
  ASSERT_FALSE(rows.empty());
  EXPECT_NE(rows[0][0].find("not found"), std::string::npos);
  EXPECT_EQ(Query("SELECT COUNT(*) FROM trials WHERE state IN (1, 2)")[0][0], "0") << "nothing left pending/running";
}

// A trial ended by a SIGTERM its worker did not send (what Slurm does to every process of a job it cancels or
// preempts; here the trial's first run sends it to itself) was stopped from outside: it is requeued and completes on
// its next attempt. (A rank that fails on its own still fails its trial: RankCrashStopsTheWholeGroupAndFailsTheTrial.)
TEST_F(SearchE2E, ATrialEndedByAnOutsideSigtermIsRequeuedNotFailed) {
  auto done = RunSearch(R"(
name: outside
objective: {metric: score, mode: max}
budget: {max_trials: 1}
command: [/bin/sh, -c, 'if [ "$LADDER_ATTEMPT" = 0 ]; then kill -TERM $$; sleep 5; fi; echo "{{\"score\": 1}}"']
space:
  x: {type: float, low: 0.0, high: 1.0}
)", std::chrono::seconds(30));
  ASSERT_TRUE(done);
  EXPECT_EQ(done->state(), v1::SEARCH_COMPLETED) << done->error();
  auto rows = Query("SELECT state, attempt FROM trials");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][0], std::to_string(v1::TRIAL_COMPLETED));
  EXPECT_EQ(rows[0][1], "1");
  EXPECT_EQ(Query("SELECT COUNT(*) FROM events WHERE kind = 'trial_requeued' AND detail LIKE '%SIGTERM from outside%'")[0][0],
            "1");
}

TEST_F(SearchE2E, CancelStopsRunningTrialProcesses) {
  v1::CreateSearchResponse resp;
  auto st = Create(R"(
name: sleepy
objective: {metric: score, mode: max}
budget: {max_trials: 4, parallelism: 2}
command: [/bin/sh, -c, 'echo "{{\"score\": {x}}}"; exec tail -f /dev/null']
space:
  x: {type: float, low: 0.0, high: 1.0}
)",
                   &resp, "secret-token");
  ASSERT_TRUE(st.ok()) << st.error_message();
  // Wait until both trials run (their first metric arrives), then cancel.
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    ctx.AddMetadata("authorization", "Bearer secret-token");
    v1::WatchRequest req;
    req.set_search_id(resp.search().id());
    auto reader = stub_->Watch(&ctx, req);
    v1::Event ev;
    std::set<int64_t> reporting;
    while (reporting.size() < 2 && reader->Read(&ev)) {
      if (ev.kind() == v1::Event::TRIAL_METRICS) reporting.insert(ev.trial().id());
    }
    ctx.TryCancel();
    reader->Finish();
    ASSERT_EQ(reporting.size(), 2u);
  }
  // Watch the cluster (worker updates carry busy slots) from before the cancel.
  grpc::ClientContext wctx;
  wctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  wctx.AddMetadata("authorization", "Bearer secret-token");
  v1::WatchRequest wreq;
  auto watch = stub_->Watch(&wctx, wreq);
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", "Bearer secret-token");
  v1::CancelSearchRequest creq;
  creq.set_search_id(resp.search().id());
  v1::CancelSearchResponse cresp;
  ASSERT_TRUE(stub_->CancelSearch(&ctx, creq, &cresp).ok());
  EXPECT_EQ(cresp.search().state(), v1::SEARCH_CANCELLED);
  // The processes get SIGTERM; sleep dies of it, the worker reports the exits and the slots come free.
  v1::Event ev;
  bool freed = false;
  while (!freed && watch->Read(&ev)) {
    freed = ev.kind() == v1::Event::WORKER_UPDATED && ev.worker().busy_slots() == 0;
  }
  wctx.TryCancel();
  watch->Finish();
  ASSERT_TRUE(freed) << "trial processes were not stopped";
  server_->Stop();  // flushes the store
  EXPECT_EQ(Query("SELECT COUNT(*) FROM allocations WHERE released_at IS NULL")[0][0], "0");
  EXPECT_EQ(Query("SELECT COUNT(*) FROM trials WHERE state = " + std::to_string(v1::TRIAL_CANCELLED))[0][0], "2");
}

}  // namespace
}  // namespace ladder

namespace ladder {
namespace {

// A trial of 3 local ranks (RANK/LOCAL_RANK per process): rank 1 crashes, once ranks 0 and 2 are up (their pid
// files written), while they would wait forever (as in a collective). The worker stops the whole group and the
// trial fails naming the rank.
TEST_F(SearchE2E, RankCrashStopsTheWholeGroupAndFailsTheTrial) {
  // Rank 0 reports its rank and world size; ranks 0 and 2 then block; rank 1 dies.
  v1::CreateSearchResponse resp;
  auto st = Create(R"(
name: ranks
objective: {metric: score, mode: max}
budget: {max_trials: 1, max_failed_trials: 1}
resources: {ranks_per_node: 3}
command: [/bin/sh, -c, 'case "$LADDER_RENDEZVOUS_FILE" in "${{TMPDIR:-/tmp}}"/ladder-rendezvous-`id -u`-*-*/trial-*) f=1;; *) f=0;; esac; echo "{{\"rank\": $RANK, \"world\": $WORLD_SIZE, \"local_world\": $LOCAL_WORLD_SIZE, \"worker_slots\": $LADDER_WORKER_SLOTS, \"rendezvous_file\": $f, \"score\": {x}}}"; echo $$ > "$LADDER_TRIAL_DIR/pid-$LOCAL_RANK"; if [ "$LOCAL_RANK" = 1 ]; then while [ ! -s "$LADDER_TRIAL_DIR/pid-0" ] || [ ! -s "$LADDER_TRIAL_DIR/pid-2" ]; do sleep 0.01; done; echo "rank $RANK gave up" >&2; exit 3; fi; exec tail -f /dev/null']
space:
  x: {type: float, low: 0.0, high: 1.0}
)",
                   &resp, "secret-token");
  ASSERT_TRUE(st.ok()) << st.error_message();
  // worker_ has 2 slots: a second worker with 3 slots runs the group.
  worker::WorkerOptions wo;
  wo.server = server_->address();
  wo.token = "secret-token";
  wo.node_id = "w3";
  wo.slots = 3;
  wo.trial_dir = (dir_ / "trials3").string();
  worker::Worker w3(wo);
  w3.Start();
  auto done = testing::WaitForSearchEnd(*stub_, resp.search().id(), std::chrono::seconds(30), "secret-token");
  ASSERT_TRUE(done) << "the trial hung";
  EXPECT_EQ(done->state(), v1::SEARCH_FAILED);
  auto trial = Query("SELECT id, state, exit_code, error FROM trials")[0];
  EXPECT_EQ(trial[1], std::to_string(v1::TRIAL_FAILED));
  EXPECT_EQ(trial[2], "3");
  // The error names the rank, ends with what it said last on stderr and where its log is, and the group's stop.
  EXPECT_NE(trial[3].find("rank 1: exited with code 3: rank 1 gave up (stderr: "), std::string::npos) << trial[3];
  EXPECT_NE(trial[3].find("stderr-rank1.log) (the other ranks were stopped)"), std::string::npos) << trial[3];
  // Rank 0's line is the trial's metrics; the ranks saw their own RANK and the group's sizes.
  auto m = Query("SELECT name, value FROM metrics ORDER BY name");
  std::map<std::string, std::string> values;
  for (const auto& r : m) values[r[0]] = r[1];
  EXPECT_EQ(values["rank"], "0.0");
  EXPECT_EQ(values["world"], "3.0");
  EXPECT_EQ(values["local_world"], "3.0");
  EXPECT_EQ(values["worker_slots"], "3.0") << "the worker's slots: the ranks it may run on the node at once";
  EXPECT_EQ(values["rendezvous_file"], "1.0") << "one node's ranks meet through a file in this user's rendezvous directory under /tmp (containers share it)";
  EXPECT_TRUE(std::filesystem::exists(RendezvousDirOf("w3"))) << "made for the first trial of several ranks";
  // Every rank's process is gone.
  for (int k = 0; k < 3; ++k) {
    std::ifstream in(dir_ / "trials3" / ("trial-" + trial[0]) / ("pid-" + std::to_string(k)));
    int pid = 0;
    ASSERT_TRUE(in >> pid) << "rank " << k << " did not start";
    EXPECT_NE(kill(pid, 0), 0) << "rank " << k << " (pid " << pid << ") still runs";
  }
  w3.Stop();
}

}  // namespace
}  // namespace ladder

namespace ladder {
namespace {

// Backpressure: a worker that may hold only 100 unacknowledged points per trial stops reading a trial that
// prints 5,000 lines at once, and resumes as the coordinator acknowledges them: every point arrives, in order.
TEST_F(SearchE2E, TinyAcknowledgementWindowLosesNothing) {
  worker_->Stop();  // only the small-window worker below runs trials
  // A coordinator that would hold metric acknowledgements for an hour: the trial finishes only because the worker
  // asks for them (MetricReport.ack_wanted) once half its window is unacknowledged.
  server_->Stop();
  server::ServerOptions so;
  so.listen = "127.0.0.1:0";
  so.db_path = (dir_ / "ladder.db").string();
  so.token = "secret-token";
  so.coordinator.ack_delay = std::chrono::hours(1);
  server_ = std::make_unique<server::Server>(so);
  server_->Start();
  channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
  stub_ = v1::Ladder::NewStub(channel_);
  worker::WorkerOptions wo;
  wo.server = server_->address();
  wo.token = "secret-token";
  wo.node_id = "small-window";
  wo.slots = 1;
  wo.max_unacked_points = 100;
  wo.trial_dir = (dir_ / "trials-sw").string();
  worker::Worker w(wo);
  w.Start();
  ASSERT_TRUE(w.WaitRegistered(std::chrono::seconds(10)));
  auto done = RunSearch(R"(
name: flood
objective: {metric: score, mode: max}
budget: {max_trials: 1}
command: [/bin/sh, -c, 'i=0; while [ $i -lt 5000 ]; do i=$((i+1)); echo "{{\"step\": $i, \"score\": {x}}}"; done']
space:
  x: {type: float, low: 0.0, high: 1.0}
)", std::chrono::seconds(60));
  ASSERT_TRUE(done);
  EXPECT_EQ(done->state(), v1::SEARCH_COMPLETED) << done->error();
  w.Stop();
  server_->Stop();
  auto r = Query("SELECT COUNT(*), COUNT(DISTINCT step), MIN(step), MAX(step) FROM metrics WHERE name = 'score'")[0];
  EXPECT_EQ(r[0], "5000");
  EXPECT_EQ(r[1], "5000");
  EXPECT_EQ(r[2], "1");
  EXPECT_EQ(r[3], "5000");
  EXPECT_EQ(Query("SELECT metric_count FROM trials")[0][0], "5000");
}

}  // namespace
}  // namespace ladder
