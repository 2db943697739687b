// The coordinator without sockets: fake worker links, the loop run by hand.
#include <sqlite3.h>

#include "tests/server/coordinator_fixture.h"

namespace ladder::server {
namespace {

// A search of one trial.
constexpr const char* kOneTrial = R"(
name: one
objective: {metric: score, mode: max}
budget: {max_trials: 1}
command: [run]
space:
  x: {type: float, low: 0.0, high: 1.0}
)";

TEST_F(CoordinatorTest, RunsASearchToCompletionRespectingParallelism) {
  auto link = Connect("n1", 4);
  auto id = CreateSearch();
  auto starts = link->Starts();
  ASSERT_EQ(starts.size(), 2u) << "parallelism 2 even though the worker has 4 slots";
  EXPECT_EQ(starts[0].argv(0), "run");
  EXPECT_EQ(starts[0].argv(2), "--id=" + std::to_string(starts[0].trial_id()));
  EXPECT_EQ(starts[0].env().at("RANK"), "0");
  EXPECT_EQ(starts[0].env().at("WORLD_SIZE"), "1");
  EXPECT_NE(starts[0].assignment_epoch(), starts[1].assignment_epoch());
  Report(link, starts[0], 0.5);
  ASSERT_EQ(link->Starts().size(), 3u) << "a finished trial frees a place for the next";
  Report(link, starts[1], 0.9);
  starts = link->Starts();
  ASSERT_EQ(starts.size(), 4u);
  Report(link, starts[2], 0.7);
  Report(link, starts[3], 0.1);
  EXPECT_EQ(link->Starts().size(), 4u) << "budget is 4 trials";
  auto s = GetSearch(id);
  EXPECT_EQ(s.state(), v1::SEARCH_COMPLETED);
  EXPECT_EQ(s.completed(), 4);
  EXPECT_DOUBLE_EQ(s.best_objective(), 0.9);
  EXPECT_EQ(s.best_trial_id(), starts[1].trial_id());
  auto t = GetTrial(starts[1].trial_id());
  EXPECT_EQ(t.state(), v1::TRIAL_COMPLETED);
  EXPECT_EQ(t.metric_count(), 1);
}

TEST_F(CoordinatorTest, RejectsInvalidSpecNamingTheField) {
  v1::CreateSearchRequest req;
  req.set_spec_yaml("name: x\nobjective: {metric: a, mode: max}\nbudget: {max_trials: eight}\ncommand: [a]\n"
                    "space:\n  x: {type: float, low: 0, high: 1}\n");
  req.set_spec_path("bad.yaml");
  v1::CreateSearchResponse resp;
  auto st = coord_->CreateSearch(req, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(st.error_message().find("bad.yaml:3"), std::string::npos) << st.error_message();
  EXPECT_NE(st.error_message().find("max_trials"), std::string::npos) << st.error_message();
  v1::ListSearchesResponse list;
  coord_->ListSearches({}, &list);
  EXPECT_EQ(list.searches_size(), 0) << "nothing half-written";
}

TEST_F(CoordinatorTest, FailedTrialsFailTheSearchAtTheLimit) {
  auto link = Connect("n1", 2);
  auto id = CreateSearch();
  auto starts = link->Starts();
  v1::WorkerMessage e;
  e.mutable_exited()->set_trial_id(starts[0].trial_id());
  e.mutable_exited()->set_assignment_epoch(starts[0].assignment_epoch());
  e.mutable_exited()->set_exit_code(127);
  e.mutable_exited()->set_error("command 'run' not found");
  coord_->OnWorkerMessage(link, e);
  Drain();
  EXPECT_EQ(GetTrial(starts[0].trial_id()).error(), "command 'run' not found");
  EXPECT_EQ(GetSearch(id).state(), v1::SEARCH_RUNNING);
  // A trial that exits 0 without the objective also fails, with a reason.
  v1::WorkerMessage e2;
  e2.mutable_exited()->set_trial_id(starts[1].trial_id());
  e2.mutable_exited()->set_assignment_epoch(starts[1].assignment_epoch());
  coord_->OnWorkerMessage(link, e2);
  Drain();
  auto t = GetTrial(starts[1].trial_id());
  EXPECT_EQ(t.state(), v1::TRIAL_FAILED);
  EXPECT_NE(t.error().find("objective metric 'score'"), std::string::npos) << t.error();
  auto s = GetSearch(id);
  EXPECT_EQ(s.state(), v1::SEARCH_FAILED);
  EXPECT_NE(s.error().find("max_failed_trials"), std::string::npos) << s.error();
}

// A search whose every trial failed has not completed, even under budget.max_failed_trials (default 3: a 1-trial
// search with a wrong command used to end "completed" and `ladder search start --wait` exit 0).
TEST_F(CoordinatorTest, ASearchWhoseEveryTrialFailedFailsNamingTheLastError) {
  auto a = Connect("a", 1);
  auto id = CreateSearch(kOneTrial);
  Exit(a, a->Starts().at(0), 2);
  auto s = GetSearch(id);
  EXPECT_EQ(s.state(), v1::SEARCH_FAILED);
  EXPECT_EQ(s.error(), "no trial completed (1 failed); last error: trial 0: exited with code 2") << s.error();
  // One success among failures under the limit still completes.
  auto two = CreateSearch(R"(
name: two
objective: {metric: score, mode: max}
budget: {max_trials: 2, parallelism: 1}
command: [run]
space:
  x: {type: float, low: 0.0, high: 1.0}
)");
  Exit(a, a->Starts().at(1), 2);
  Report(a, a->Starts().at(2), 0.5);
  EXPECT_EQ(GetSearch(two).state(), v1::SEARCH_COMPLETED);
}

TEST_F(CoordinatorTest, WorkerLossRequeuesOnAnotherWorkerThenFailsWhenOutOfRetries) {
  auto a = Connect("a", 1);
  auto id = CreateSearch();
  auto first = a->Starts().at(0);
  coord_->OnWorkerGone(a, "test");
  Drain();
  auto t = GetTrial(first.trial_id());
  EXPECT_EQ(t.state(), v1::TRIAL_PENDING);
  EXPECT_EQ(t.attempt(), 1);
  auto b = Connect("b", 1);
  auto again = b->Starts().at(0);
  EXPECT_EQ(again.trial_id(), first.trial_id()) << "the requeued trial runs before new ones";
  EXPECT_GT(again.assignment_epoch(), first.assignment_epoch());
  // A late message from the fenced run is ignored and answered with a cancel.
  v1::WorkerMessage stale;
  stale.mutable_exited()->set_trial_id(first.trial_id());
  stale.mutable_exited()->set_assignment_epoch(first.assignment_epoch());
  coord_->OnWorkerMessage(b, stale);
  Drain();
  EXPECT_EQ(GetTrial(first.trial_id()).state(), v1::TRIAL_RUNNING);
  // max_retries is 1: a second loss fails it.
  coord_->OnWorkerGone(b, "test");
  Drain();
  t = GetTrial(first.trial_id());
  EXPECT_EQ(t.state(), v1::TRIAL_FAILED);
  EXPECT_NE(t.error().find("no retries left"), std::string::npos) << t.error();
  EXPECT_EQ(GetSearch(id).failed(), 1);
}

TEST_F(CoordinatorTest, LeaseExpiryMarksWorkerDown) {
  auto a = Connect("a", 1);
  CreateSearch();
  auto first = a->Starts().at(0);
  // No heartbeats: run the loop past the 200 ms lease (in slices, until the expiry has been acted on: a loaded
  // machine may run the periodic tick late, and the lease can only have expired by then).
  loop_.restart();
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
       std::chrono::steady_clock::now() < until &&
       !(a->closed && GetTrial(first.trial_id()).state() == v1::TRIAL_PENDING);) {
    loop_.run_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(a->closed);
  EXPECT_EQ(a->close_status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_EQ(GetTrial(first.trial_id()).state(), v1::TRIAL_PENDING);
  v1::ServerInfoResponse info;
  coord_->ServerInfo({}, &info);
  ASSERT_EQ(info.workers_size(), 1);
  EXPECT_EQ(info.workers(0).state(), v1::WORKER_DOWN);
}

TEST_F(CoordinatorTest, NodesKnownBeforeARestartAreListedDownUntilTheyRegister) {
  auto a = Connect("a", 2);
  Close();
  Open();
  v1::ServerInfoResponse info;
  coord_->ServerInfo({}, &info);
  ASSERT_EQ(info.workers_size(), 1);
  EXPECT_EQ(info.workers(0).node_id(), "a");
  EXPECT_EQ(info.workers(0).state(), v1::WORKER_DOWN);
  EXPECT_EQ(info.workers(0).resources().slots(), 2) << "what it registered with last";
  EXPECT_EQ(info.workers(0).state_reason(), "not registered since the coordinator started");
  CreateSearch();
  auto again = Connect("a", 2);
  EXPECT_EQ(again->Starts().size(), 2u) << "registered again, it takes trials";
  info.Clear();
  coord_->ServerInfo({}, &info);
  ASSERT_EQ(info.workers_size(), 1);
  EXPECT_EQ(info.workers(0).state(), v1::WORKER_UP);
  EXPECT_EQ(info.workers(0).state_reason(), "");
}

TEST_F(CoordinatorTest, CancelStopsRunningTrials) {
  auto a = Connect("a", 2);
  auto id = CreateSearch();
  v1::CancelSearchRequest req;
  req.set_search_id(id);
  v1::CancelSearchResponse resp;
  ASSERT_TRUE(coord_->CancelSearch(req, &resp).ok());
  Drain();
  int cancels = 0;
  for (const auto& m : a->sent) cancels += m.has_cancel();
  EXPECT_EQ(cancels, 2);
  EXPECT_EQ(GetSearch(id).state(), v1::SEARCH_CANCELLED);
  EXPECT_EQ(coord_->CancelSearch(req, &resp).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
}

// A worker that shuts down stops its runs and says so: its node takes no new trials (draining) and each trial
// waits for another node, as after a preemption — no attempt used up, not handed straight back.
TEST_F(CoordinatorTest, AStoppingWorkersTrialsGoToAnotherNodeWithoutUsingAnAttempt) {
  auto a = Connect("a", 1);
  auto id = CreateSearch();
  auto first = a->Starts().at(0);
  v1::WorkerMessage e;
  e.mutable_exited()->set_trial_id(first.trial_id());
  e.mutable_exited()->set_assignment_epoch(first.assignment_epoch());
  e.mutable_exited()->set_exit_code(143);
  e.mutable_exited()->set_cancelled(true);
  e.mutable_exited()->set_worker_stopping(true);
  coord_->OnWorkerMessage(a, e);
  Drain();
  EXPECT_EQ(a->Starts().size(), 1u) << "not handed back to the stopping worker";
  auto t = GetTrial(first.trial_id());
  EXPECT_EQ(t.state(), v1::TRIAL_PENDING);
  EXPECT_EQ(t.attempt(), 0);
  EXPECT_EQ(t.preemptions(), 1);
  auto b = Connect("b", 1);
  ASSERT_EQ(b->Starts().size(), 1u);
  EXPECT_EQ(b->Starts()[0].trial_id(), first.trial_id());
  EXPECT_EQ(GetSearch(id).cancelled(), 0);
}

// A run that its worker stopped although nobody asked (a preemption in flight across a coordinator restart, a
// worker shutting down) is not a cancelled trial: it is requeued and runs again.
TEST_F(CoordinatorTest, AStopNobodyAskedForRequeuesTheTrial) {
  auto a = Connect("a", 1);
  auto id = CreateSearch();
  auto first = a->Starts().at(0);
  Exit(a, first, 143, /*cancelled=*/true);
  auto t = GetTrial(first.trial_id());
  EXPECT_NE(t.error().find("stopped by its worker without a request from this coordinator"), std::string::npos)
      << t.error();
  EXPECT_EQ(t.attempt(), 1);
  ASSERT_EQ(a->Starts().size(), 2u) << "requeued and started again";
  EXPECT_EQ(a->Starts()[1].trial_id(), first.trial_id());
  EXPECT_EQ(GetSearch(id).cancelled(), 0);
}

// Every start reaches its worker only after the trial's allocation (and so its assignment epoch) is committed: a
// coordinator that crashed right after sending it comes back knowing the run, and never hands the same epoch
// out again.
TEST_F(CoordinatorTest, AStartIsSentOnlyOnceItsAllocationIsCommitted) {
  struct CheckingLink : FakeLink {
    std::filesystem::path db;
    std::vector<std::string> problems;
    void Send(const v1::CoordinatorMessage& m) override {
      if (m.has_start()) {
        sqlite3* h = nullptr;
        int found = -1;
        if (sqlite3_open_v2(db.string().c_str(), &h, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
          sqlite3_stmt* st = nullptr;
          if (sqlite3_prepare_v2(h, "SELECT count(*) FROM allocations WHERE trial_id = ? AND assignment_epoch = ?", -1,
                                 &st, nullptr) == SQLITE_OK) {
            sqlite3_bind_int64(st, 1, m.start().trial_id());
            sqlite3_bind_int64(st, 2, m.start().assignment_epoch());
            if (sqlite3_step(st) == SQLITE_ROW) found = sqlite3_column_int(st, 0);
          }
          sqlite3_finalize(st);
        }
        sqlite3_close(h);
        if (found != 1) {
          problems.push_back("trial " + std::to_string(m.start().trial_id()) + " epoch " +
                             std::to_string(m.start().assignment_epoch()) + ": " + std::to_string(found) +
                             " committed allocations when its start was sent");
        }
      }
      FakeLink::Send(m);
    }
  };
  auto link = std::make_shared<CheckingLink>();
  link->db = dir_ / "ladder.db";
  v1::WorkerMessage reg;
  reg.mutable_register_()->set_node_id("a");
  reg.mutable_register_()->mutable_resources()->set_hostname("a");
  reg.mutable_register_()->mutable_resources()->set_slots(2);
  reg.mutable_register_()->mutable_resources()->set_cores(2);
  coord_->OnWorkerMessage(link, reg);
  Drain();
  CreateSearch();
  auto starts = link->Starts();
  ASSERT_EQ(starts.size(), 2u);
  Report(link, starts[0], 0.5);  // the next start comes from the exit's handler
  ASSERT_EQ(link->Starts().size(), 3u);
  EXPECT_TRUE(link->problems.empty()) << link->problems.front();
}

TEST_F(CoordinatorTest, RestartReattachesRunningTrialsAndFinishesTheSearch) {
  auto a = Connect("a", 2);
  auto id = CreateSearch();
  auto starts = a->Starts();
  ASSERT_EQ(starts.size(), 2u);
  Report(a, starts[0], 0.4);
  auto third = a->Starts().at(2);
  // Coordinator "crash": drop it without Stop(); the store keeps what was flushed.
  store_->Flush();
  coord_.reset();
  store_.reset();
  Open();
  // The worker comes back still running trials 2 and 3.
  auto a2 = Connect("a", 2, {{starts[1].trial_id(), starts[1].assignment_epoch()},
                             {third.trial_id(), third.assignment_epoch()}});
  EXPECT_TRUE(a2->Starts().empty()) << "both slots are still busy with the re-attached trials";
  EXPECT_EQ(GetTrial(starts[1].trial_id()).state(), v1::TRIAL_RUNNING);
  Report(a2, starts[1], 0.8);
  Report(a2, third, 0.6);
  auto fourth = a2->Starts().at(0);
  Report(a2, fourth, 0.2);
  auto s = GetSearch(id);
  EXPECT_EQ(s.state(), v1::SEARCH_COMPLETED);
  EXPECT_EQ(s.completed(), 4);
  EXPECT_DOUBLE_EQ(s.best_objective(), 0.8);
}

}  // namespace
}  // namespace ladder::server

// ---------------------------------------------------------------------------------------------------------
// Faults: acknowledgements, watchdog, quarantine, checkpoints
// ---------------------------------------------------------------------------------------------------------

namespace ladder::server {
namespace {

std::vector<v1::TrialAck> Acks(const FakeLink& link) {
  std::vector<v1::TrialAck> out;
  for (const auto& m : link.sent) {
    if (m.has_ack()) out.insert(out.end(), m.ack().trials().begin(), m.ack().trials().end());
  }
  return out;
}

v1::WorkerMessage Points(const v1::StartTrial& s, int64_t first_seq, int n, double score) {
  v1::WorkerMessage m;
  auto* mr = m.mutable_metrics();
  mr->set_trial_id(s.trial_id());
  mr->set_assignment_epoch(s.assignment_epoch());
  mr->set_first_seq(first_seq);
  for (int i = 0; i < n; ++i) {
    auto* p = mr->add_points();
    p->set_step(first_seq + i);
    (*p->mutable_values())["score"] = score;
  }
  return m;
}

// The database failing under the coordinator (here: the metrics table renamed away by another connection, as
// a full disk or an I/O error would fail a write) stops it: nothing of the failed batch is acknowledged or
// committed, it acts on nothing more, and on_fatal is told (ladder-server exits on it). A restart recovers
// from what was committed, and the worker's resend stores the points.
TEST_F(CoordinatorTest, ADatabaseFailureStopsTheCoordinatorWithoutAcknowledgingWhatWasLost) {
  Close();
  std::string fatal;
  options_.on_fatal = [&fatal](const std::string& what) { fatal = what; };
  Open();
  auto a = Connect("a", 1);
  CreateSearch();
  auto s = a->Starts().at(0);
  store_->Flush();
  auto exec = [&](const char* sql) {
    sqlite3* h = nullptr;
    ASSERT_EQ(sqlite3_open((dir_ / "ladder.db").c_str(), &h), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(h, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(h);
    sqlite3_close(h);
  };
  exec("ALTER TABLE metrics RENAME TO metrics_away");
  coord_->OnWorkerMessage(a, Points(s, 0, 3, 0.1));
  loop_.restart();
  loop_.run_for(std::chrono::milliseconds(120));  // past the flush interval
  EXPECT_NE(fatal.find("metrics"), std::string::npos) << "on_fatal: '" << fatal << "'";
  EXPECT_TRUE(coord_->failed());
  EXPECT_TRUE(Acks(*a).empty()) << "nothing of the lost batch is acknowledged";
  Exit(a, s, 0);
  EXPECT_TRUE(Acks(*a).empty()) << "a stopped coordinator acts on nothing more";
  Close();
  exec("ALTER TABLE metrics_away RENAME TO metrics");
  options_.on_fatal = nullptr;
  Open();
  auto a2 = Connect("a", 1, {{s.trial_id(), s.assignment_epoch()}});
  EXPECT_EQ(GetTrial(s.trial_id()).state(), v1::TRIAL_RUNNING) << "the exit was never stored";
  EXPECT_EQ(GetTrial(s.trial_id()).metric_count(), 0);
  coord_->OnWorkerMessage(a2, Points(s, 0, 3, 0.1));  // the worker resends what was not acknowledged
  Drain();
  EXPECT_EQ(GetTrial(s.trial_id()).metric_count(), 3);
}

TEST_F(CoordinatorTest, StoresEachPointOnceAndAcknowledgesOnlyAfterCommit) {
  Close();
  options_.ack_delay = std::chrono::milliseconds(0);  // every commit sends what it acknowledges (the delay: below)
  // A commit a second: no commit falls between sending points and looking, however slowly a loaded machine runs.
  options_.flush_interval = std::chrono::seconds(1);
  lease_ = std::chrono::hours(1);  // the fake worker does not beat while the test waits for a commit
  Open();
  auto a = Connect("a", 1);
  CreateSearch();
  auto s = a->Starts().at(0);
  auto run_until_acks = [&](size_t n) {  // the next commit, however late
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (Acks(*a).size() < n && std::chrono::steady_clock::now() < give_up) {
      loop_.restart();
      loop_.run_for(std::chrono::milliseconds(50));
    }
  };
  coord_->OnWorkerMessage(a, Points(s, 0, 3, 0.1));
  Drain();
  EXPECT_TRUE(Acks(*a).empty()) << "nothing is acknowledged before the batch is committed";
  run_until_acks(1);
  auto acks = Acks(*a);
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].trial_id(), s.trial_id());
  EXPECT_EQ(acks[0].assignment_epoch(), s.assignment_epoch());
  EXPECT_EQ(acks[0].durable_seq(), 3);
  EXPECT_FALSE(acks[0].exit_durable());
  // A resend after a reconnect overlaps what is stored: only points 3 and 4 are new.
  coord_->OnWorkerMessage(a, Points(s, 1, 4, 0.2));
  Drain();
  EXPECT_EQ(GetTrial(s.trial_id()).metric_count(), 5);
  v1::WorkerMessage e;
  e.mutable_exited()->set_trial_id(s.trial_id());
  e.mutable_exited()->set_assignment_epoch(s.assignment_epoch());
  coord_->OnWorkerMessage(a, e);
  run_until_acks(2);
  acks = Acks(*a);
  ASSERT_EQ(acks.size(), 2u);
  EXPECT_EQ(acks[1].durable_seq(), 5);
  EXPECT_TRUE(acks[1].exit_durable());
  v1::GetTrialRequest req;
  req.set_trial_id(s.trial_id());
  req.set_include_metrics(true);
  v1::GetTrialResponse resp;
  ASSERT_TRUE(coord_->GetTrial(req, &resp).ok());
  EXPECT_EQ(resp.trial().metrics_size(), 5);
  EXPECT_EQ(resp.trial().state(), v1::TRIAL_COMPLETED);
  EXPECT_DOUBLE_EQ(resp.trial().objective(), 0.2);
  // An exit already stored, sent again (its acknowledgement was lost), is acknowledged and changes nothing.
  coord_->OnWorkerMessage(a, e);
  Close();  // commits
  EXPECT_TRUE(Acks(*a).back().exit_durable());
}

TEST_F(CoordinatorTest, RestartReattachesARunThatExitedButWasNotAcknowledged) {
  auto a = Connect("a", 1);
  auto id = CreateSearch(kOneTrial);
  auto s = a->Starts().at(0);
  coord_->OnWorkerMessage(a, Points(s, 0, 2, 0.3));
  Drain();
  store_->Flush();
  coord_.reset();  // crash before acknowledging: the worker still holds the points, and then the run ends
  store_.reset();
  Open();
  auto link = std::make_shared<FakeLink>();
  v1::WorkerMessage reg;
  reg.mutable_register_()->set_node_id("a");
  reg.mutable_register_()->mutable_resources()->set_slots(1);
  auto* r = reg.mutable_register_()->add_running();
  r->set_trial_id(s.trial_id());
  r->set_assignment_epoch(s.assignment_epoch());
  r->set_exited(true);
  coord_->OnWorkerMessage(link, reg);
  coord_->OnWorkerMessage(link, Points(s, 0, 4, 0.7));  // everything unacknowledged, again
  v1::WorkerMessage e;
  e.mutable_exited()->set_trial_id(s.trial_id());
  e.mutable_exited()->set_assignment_epoch(s.assignment_epoch());
  coord_->OnWorkerMessage(link, e);
  Drain();
  ASSERT_FALSE(link->sent.empty());
  EXPECT_EQ(link->sent[0].registered().cancel_trials_size(), 0);
  auto t = GetTrial(s.trial_id());
  EXPECT_EQ(t.state(), v1::TRIAL_COMPLETED);
  EXPECT_EQ(t.attempt(), 0) << "not restarted";
  EXPECT_EQ(t.metric_count(), 4) << "the 2 points stored before the crash are not stored twice";
  EXPECT_EQ(GetSearch(id).state(), v1::SEARCH_COMPLETED);
}

TEST_F(CoordinatorTest, WatchdogFailsATrialWithoutProgressNamingTheField) {
  auto a = Connect("a", 1);
  CreateSearch(R"(
name: hang
objective: {metric: score, mode: max}
budget: {max_trials: 1}
trial: {progress_timeout: 0.15s}
command: [run]
space:
  x: {type: float, low: 0.0, high: 1.0}
)");
  auto s = a->Starts().at(0);
  // Heartbeats keep the worker alive, but the trial prints nothing.
  std::optional<v1::CancelTrial> cancel;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!cancel && std::chrono::steady_clock::now() < deadline) {
    v1::WorkerMessage hb;
    hb.mutable_heartbeat();
    coord_->OnWorkerMessage(a, hb);
    loop_.restart();
    loop_.run_for(std::chrono::milliseconds(20));
    for (const auto& m : a->sent) {
      if (m.has_cancel()) cancel = m.cancel();
    }
  }
  ASSERT_TRUE(cancel) << "the watchdog did not stop the trial";
  EXPECT_EQ(cancel->trial_id(), s.trial_id());
  EXPECT_NE(cancel->reason().find("trial.progress_timeout"), std::string::npos) << cancel->reason();
  EXPECT_EQ(GetTrial(s.trial_id()).state(), v1::TRIAL_RUNNING) << "slots stay held until the process is gone";
  v1::WorkerMessage e;
  e.mutable_exited()->set_trial_id(s.trial_id());
  e.mutable_exited()->set_assignment_epoch(s.assignment_epoch());
  e.mutable_exited()->set_exit_code(143);
  e.mutable_exited()->set_cancelled(true);
  coord_->OnWorkerMessage(a, e);
  Drain();
  auto t = GetTrial(s.trial_id());
  EXPECT_EQ(t.state(), v1::TRIAL_FAILED);
  EXPECT_NE(t.error().find("no metrics line"), std::string::npos) << t.error();
  EXPECT_NE(t.error().find("trial.progress_timeout"), std::string::npos) << t.error();
}

TEST_F(CoordinatorTest, InvalidProgressTimeoutNamesTheField) {
  v1::CreateSearchRequest req;
  req.set_spec_yaml("name: x\nobjective: {metric: a, mode: max}\nbudget: {max_trials: 1}\ncommand: [a]\n"
                    "trial: {progress_timeout: soon}\nspace:\n  x: {type: float, low: 0, high: 1}\n");
  req.set_spec_path("w.yaml");
  v1::CreateSearchResponse resp;
  auto st = coord_->CreateSearch(req, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(st.error_message().find("w.yaml:5"), std::string::npos) << st.error_message();
  EXPECT_NE(st.error_message().find("trial.progress_timeout"), std::string::npos) << st.error_message();
}

TEST_F(CoordinatorTest, RequeuedAttemptGetsTheSameCheckpointDirectory) {
  auto a = Connect("a", 1);
  CreateSearch(R"(
name: ckpt
objective: {metric: score, mode: max}
budget: {max_trials: 1, max_retries: 1}
command: [run, --checkpoint, "{checkpoint_dir}/model.pt", --resume]
space:
  x: {type: float, low: 0.0, high: 1.0}
)");
  auto first = a->Starts().at(0);
  const std::string dir = first.env().at("LADDER_CHECKPOINT_DIR");
  EXPECT_EQ(first.checkpoint_dir(), dir);
  EXPECT_EQ(first.argv(2), dir + "/model.pt");
  EXPECT_NE(dir.find("trial-" + std::to_string(first.trial_id())), std::string::npos) << dir;
  EXPECT_EQ(dir.front(), '/') << "absolute, so every node and attempt sees the same path";
  coord_->OnWorkerGone(a, "test");
  Drain();
  auto b = Connect("b", 1);
  auto second = b->Starts().at(0);
  EXPECT_EQ(second.trial_id(), first.trial_id());
  EXPECT_EQ(second.env().at("LADDER_ATTEMPT"), "1");
  EXPECT_EQ(second.env().at("LADDER_CHECKPOINT_DIR"), dir) << "the retry resumes from the same checkpoint";
  EXPECT_EQ(second.argv(2), dir + "/model.pt");
  EXPECT_EQ(GetTrial(first.trial_id()).checkpoint_dir(), dir);
}

TEST_F(CoordinatorTest, NodeThatKeepsFailingIsQuarantinedAcrossRestarts) {
  LoseNodeThreeTimesWhileRunning("bad");
  if (HasFatalFailure()) return;
  v1::ServerInfoResponse info;
  coord_->ServerInfo({}, &info);
  ASSERT_EQ(info.workers_size(), 1);
  EXPECT_EQ(info.workers(0).state(), v1::WORKER_QUARANTINED);
  EXPECT_EQ(info.workers(0).recent_failures(), 3);
  EXPECT_NE(info.workers(0).state_reason().find("3 failures"), std::string::npos) << info.workers(0).state_reason();
  // It may reconnect, but gets no trial; a healthy node gets the requeued one.
  auto bad = Connect("bad", 1);
  EXPECT_TRUE(bad->Starts().empty());
  auto good = Connect("good", 1);
  ASSERT_EQ(good->Starts().size(), 1u);
  EXPECT_EQ(good->Starts()[0].env().at("LADDER_ATTEMPT"), "3");
  // Still quarantined after a coordinator restart.
  Close();
  Open();
  auto again = Connect("bad", 1);
  EXPECT_TRUE(again->Starts().empty());
  info.Clear();
  coord_->ServerInfo({}, &info);
  bool found = false;
  for (const auto& w : info.workers()) {
    if (w.node_id() == "bad") {
      found = true;
      EXPECT_EQ(w.state(), v1::WORKER_QUARANTINED);
      EXPECT_FALSE(w.state_reason().empty());
    }
  }
  EXPECT_TRUE(found);
}

TEST_F(CoordinatorTest, ReleasingAQuarantinedNodeLetsItTakeTrialsAgainAndOutlivesARestart) {
  LoseNodeThreeTimesWhileRunning("bad");
  if (HasFatalFailure()) return;
  auto bad = Connect("bad", 1);
  EXPECT_TRUE(bad->Starts().empty()) << "quarantined";
  // Errors: an unknown node, a node that is not quarantined.
  v1::ReleaseNodeRequest req;
  v1::ReleaseNodeResponse resp;
  req.set_node_id("nope");
  EXPECT_EQ(coord_->ReleaseNode(req, &resp).error_code(), grpc::StatusCode::NOT_FOUND);
  auto good = Connect("good", 1);
  ASSERT_EQ(good->Starts().size(), 1u) << "the requeued trial goes to the healthy node";
  req.set_node_id("good");
  auto st = coord_->ReleaseNode(req, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(st.error_message().find("not quarantined (it is up)"), std::string::npos) << st.error_message();
  // Released while its worker is connected: UP, failures cleared, and it takes the next trial.
  req.set_node_id("bad");
  ASSERT_TRUE(coord_->ReleaseNode(req, &resp).ok());
  EXPECT_EQ(resp.worker().state(), v1::WORKER_UP);
  EXPECT_EQ(resp.worker().recent_failures(), 0);
  EXPECT_EQ(resp.worker().state_reason(), "");
  Drain();
  EXPECT_TRUE(bad->Starts().empty()) << "parallelism 1: the trial on 'good' still runs";
  coord_->OnWorkerGone(good, "maintenance");  // its trial is requeued: only "bad" is left to take it
  Drain();
  EXPECT_EQ(bad->Starts().size(), 1u) << "the released node takes trials again";
  // The release is stored: after a restart "bad" registers as an ordinary node and gets work.
  Close();
  Open();
  auto again = Connect("bad", 1);
  v1::ServerInfoResponse info;
  coord_->ServerInfo({}, &info);
  int seen = 0;
  for (const auto& w : info.workers()) {
    if (w.node_id() != "bad") continue;
    ++seen;
    EXPECT_EQ(w.state(), v1::WORKER_UP) << w.state_reason();
  }
  EXPECT_EQ(seen, 1);
}

// Pause (ladder up --slurm before its job ends): every running trial is told to stop and, once stopped, waits in the
// queue with its attempt; nothing starts any more, even on a free slot.
TEST_F(CoordinatorTest, APauseStopsTheRunningTrialsAsPreemptionsAndStartsNothing) {
  auto a = Connect("a", 2);
  auto id = CreateSearch();  // 2 at a time
  ASSERT_EQ(a->Starts().size(), 2u);
  const size_t sent_before = a->sent.size();
  EXPECT_EQ(coord_->Pause("the Slurm job reaches its time limit"), 2);
  Drain();
  int cancels = 0;
  for (size_t i = sent_before; i < a->sent.size(); ++i) cancels += a->sent[i].has_cancel();
  EXPECT_EQ(cancels, 2);
  const auto starts = a->Starts();
  Exit(a, starts[0], 143, /*cancelled=*/true);
  EXPECT_EQ(coord_->RunningTrials(), 1);
  Exit(a, starts[1], 143, /*cancelled=*/true);
  EXPECT_EQ(coord_->RunningTrials(), 0);
  for (const auto& s : starts) {
    auto t = GetTrial(s.trial_id());
    EXPECT_EQ(t.state(), v1::TRIAL_PENDING);
    EXPECT_EQ(t.attempt(), 0) << "a pause costs no attempt";
    EXPECT_EQ(t.preemptions(), 1);
  }
  EXPECT_EQ(a->Starts().size(), 2u) << "paused: nothing starts on the free slots";
  EXPECT_EQ(GetSearch(id).failed(), 0);
  // The next coordinator on this database runs them again.
  Close();
  Open();
  auto b = Connect("b", 2);
  EXPECT_EQ(b->Starts().size(), 2u);
}

// A preemption's intent outlives a coordinator crash between the decision and the run's exit: the cancelled exit
// that reaches the restarted coordinator puts the trial back in the queue as a preemption (attempt 0), and a run
// whose cancel may not have gone out before the crash is told again to stop.
TEST_F(CoordinatorTest, APreemptionDecidedBeforeACrashIsNotCountedAsAnAttemptAfterTheRestart) {
  auto a = Connect("a", 2);
  CreateSearch();  // 2 at a time
  const auto starts = a->Starts();
  ASSERT_EQ(starts.size(), 2u);
  EXPECT_EQ(coord_->Pause("the Slurm job reaches its time limit"), 2);  // stops both to wait in the queue
  Drain();
  // Crash: what was committed stays (the decision is, since its cancels went out); no Stop().
  store_->Flush();
  coord_.reset();
  store_.reset();
  Open();
  auto a2 = Connect("a", 2, {{starts[0].trial_id(), starts[0].assignment_epoch()},
                             {starts[1].trial_id(), starts[1].assignment_epoch()}});
  int cancels = 0;
  for (const auto& m : a2->sent) cancels += m.has_cancel() && m.cancel().reason().find("preempted") != std::string::npos;
  EXPECT_EQ(cancels, 2) << "both re-attached runs are told again to stop";
  for (const auto& s : starts) {
    Exit(a2, s, 143, /*cancelled=*/true);
    auto t = GetTrial(s.trial_id());
    EXPECT_EQ(t.attempt(), 0) << "a preemption is not a retry: " << t.error();
    EXPECT_EQ(t.preemptions(), 1);
    EXPECT_EQ(t.error().find("without a request"), std::string::npos) << t.error();
  }
  const auto again = a2->Starts();  // this coordinator is not paused: both run again, from their checkpoints
  ASSERT_EQ(again.size(), 2u);
  for (const auto& s : again) EXPECT_EQ(s.env().at("LADDER_ATTEMPT"), "0");
  EXPECT_EQ(again[0].env().at("LADDER_ASSIGNMENT_EPOCH"), std::to_string(again[0].assignment_epoch()));
}

}  // namespace
}  // namespace ladder::server
