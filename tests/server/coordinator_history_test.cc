// What the dashboards show of a trial beyond its state: its node-seconds (each run: its nodes x its time, across
// requeues and restarts) and its search's sum, its runs with their outcomes, its journal entries, the end of rank
// 0's stderr (heartbeats while it runs, the exit's once it ended), and how far ASHA let it go (its rung).
#include <thread>

#include "tests/server/coordinator_fixture.h"

namespace ladder::server {
namespace {

using CoordinatorHistoryTest = CoordinatorTest;

constexpr const char* kTwoNodes = R"(
name: pair
objective: {metric: score, mode: max}
budget: {max_trials: 1, parallelism: 1, max_retries: 2}
resources: {nodes: 2}
command: [run]
space:
  x: {type: float, low: 0.0, high: 1.0}
)";

// Two trials at once under ASHA with rungs at 1 and 3 (max_resource 9) of `resource`.
std::string AshaSpec(const std::string& resource) {
  return "name: asha\nobjective: {metric: score, mode: max}\nbudget: {max_trials: 2, parallelism: 2}\n"
         "scheduler: {type: asha, resource: " + resource + ", min_resource: 1, max_resource: 9, reduction_factor: 3}\n"
         "command: [run]\nspace:\n  x: {type: float, low: 0.0, high: 1.0}\n";
}

// Time passes with the workers heartbeating (the fixture's lease is 200 ms).
void Idle(Coordinator& c, boost::asio::io_context& loop, int ms, std::vector<std::shared_ptr<FakeLink>> links) {
  for (int slept = 0; slept < ms; slept += 40) {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(40, ms - slept)));
    for (auto& l : links) {
      v1::WorkerMessage hb;
      hb.mutable_heartbeat();
      c.OnWorkerMessage(l, hb);
    }
    loop.restart();
    loop.poll();
  }
}

TEST_F(CoordinatorHistoryTest, NodeSecondsCountEveryNodeOfEveryRunAndSurviveARestart) {
  auto a = Connect("a", 1), b = Connect("b", 1);
  const int64_t sid = CreateSearch(kTwoNodes);
  ASSERT_EQ(a->Starts().size(), 1u);
  const v1::StartTrial first = a->Starts().at(0);
  Idle(*coord_, loop_, 200, {a, b});
  // Running: the API counts the open run up to now, on both nodes.
  v1::Trial running = GetTrial(first.trial_id());
  EXPECT_GE(running.node_seconds(), 2 * 0.2);
  EXPECT_LT(running.node_seconds(), 2 * 5.0);
  EXPECT_NEAR(GetSearch(sid).node_seconds(), running.node_seconds(), 2 * 0.1);
  // Node b is lost: the run ends ("lost") and the trial is requeued; its first run's node-seconds stay.
  coord_->OnWorkerGone(b, "connection reset");
  Drain();
  Exit(a, first, 143, /*cancelled=*/true);  // a's rank stops as it was told
  const double after_first = GetTrial(first.trial_id()).node_seconds();
  EXPECT_GE(after_first, running.node_seconds());
  Idle(*coord_, loop_, 100, {a});
  EXPECT_DOUBLE_EQ(GetTrial(first.trial_id()).node_seconds(), after_first) << "a queued trial costs nothing";
  // The second run: both nodes again, then it ends.
  b = Connect("b", 1);
  ASSERT_EQ(a->Starts().size(), 2u);
  ASSERT_EQ(b->Starts().size(), 1u);
  const v1::StartTrial on_a = a->Starts().back(), on_b = b->Starts().back();
  Idle(*coord_, loop_, 150, {a, b});
  Metric(on_a.first_rank() == 0 ? a : b, on_a.first_rank() == 0 ? on_a : on_b, 0.5);
  Exit(a, on_a, 0);
  Exit(b, on_b, 0);
  v1::Trial done = GetTrial(first.trial_id());
  ASSERT_EQ(done.state(), v1::TRIAL_COMPLETED) << done.error();
  EXPECT_GE(done.node_seconds(), after_first + 2 * 0.15);
  EXPECT_NEAR(GetSearch(sid).node_seconds(), done.node_seconds(), 1e-9);
  // Its runs, oldest first, with their outcomes.
  ASSERT_EQ(done.attempts_size(), 2) << done.DebugString();
  EXPECT_EQ(done.attempts(0).attempt(), 0);
  EXPECT_EQ(done.attempts(0).outcome(), "lost");
  EXPECT_EQ(done.attempts(0).nodes_size(), 2);
  EXPECT_EQ(done.attempts(1).attempt(), 1);
  EXPECT_EQ(done.attempts(1).outcome(), "exited");
  EXPECT_GT(done.attempts(1).ended_unix(), done.attempts(1).started_unix());
  // Its journal: the requeue with the reason in words.
  bool requeued = false;
  for (const auto& j : done.history()) requeued |= j.kind() == "trial_requeued" && j.detail().find("connection reset") != std::string::npos;
  EXPECT_TRUE(requeued) << done.DebugString();
  // A restarted coordinator counts the same.
  Close();
  Open();
  EXPECT_NEAR(GetTrial(first.trial_id()).node_seconds(), done.node_seconds(), 1e-6);
  EXPECT_NEAR(GetSearch(sid).node_seconds(), done.node_seconds(), 1e-6);
}

TEST_F(CoordinatorHistoryTest, TheLogTailComesWithHeartbeatsAndIsStoredAtTheExit) {
  auto a = Connect("a", 1);
  CreateSearch();
  const v1::StartTrial s = a->Starts().at(0);
  EXPECT_EQ(GetTrial(s.trial_id()).log_tail(), "");
  v1::WorkerMessage hb;
  auto* run = hb.mutable_heartbeat()->add_running();
  run->set_trial_id(s.trial_id());
  run->set_assignment_epoch(s.assignment_epoch());
  run->set_log_tail("loading data\nepoch 1");
  coord_->OnWorkerMessage(a, hb);
  Drain();
  EXPECT_EQ(GetTrial(s.trial_id()).log_tail(), "loading data\nepoch 1");
  // A heartbeat without a tail (the log did not grow) keeps it; a stale run's tail is not taken.
  hb.mutable_heartbeat()->mutable_running(0)->clear_log_tail();
  coord_->OnWorkerMessage(a, hb);
  Drain();
  EXPECT_EQ(GetTrial(s.trial_id()).log_tail(), "loading data\nepoch 1");
  Metric(a, s, 0.5);
  v1::WorkerMessage e;
  e.mutable_exited()->set_trial_id(s.trial_id());
  e.mutable_exited()->set_assignment_epoch(s.assignment_epoch());
  e.mutable_exited()->set_log_tail("loading data\nepoch 1\nall done");
  coord_->OnWorkerMessage(a, e);
  Drain();
  EXPECT_EQ(GetTrial(s.trial_id()).log_tail(), "loading data\nepoch 1\nall done");
  Close();
  Open();
  EXPECT_EQ(GetTrial(s.trial_id()).log_tail(), "loading data\nepoch 1\nall done") << "stored with the trial";
}

TEST_F(CoordinatorHistoryTest, AnAshaTrialsRungIsTheHighestRungItReached) {
  auto a = Connect("a", 2);
  const int64_t sid = CreateSearch(AshaSpec("epoch"));
  const v1::Search search = GetSearch(sid);
  ASSERT_EQ(search.rungs_size(), 2);
  EXPECT_EQ(search.rungs(0), 1);
  EXPECT_EQ(search.rungs(1), 3);
  EXPECT_EQ(search.rung_metric(), "epoch");
  ASSERT_EQ(a->Starts().size(), 2u);
  const v1::StartTrial s = a->Starts().at(0), other = a->Starts().at(1);
  Point(a, s, 1, {{"epoch", 0.5}, {"score", 0.9}});
  EXPECT_EQ(GetTrial(s.trial_id()).rung(), 0) << "below the first rung";
  Point(a, s, 2, {{"epoch", 1}, {"score", 0.9}});
  EXPECT_EQ(GetTrial(s.trial_id()).rung(), 1);
  Point(a, s, 3, {{"epoch", 3}, {"score", 0.9}});
  EXPECT_EQ(GetTrial(s.trial_id()).rung(), 2);
  EXPECT_EQ(GetTrial(other.trial_id()).rung(), 0);
  Close();
  Open();
  EXPECT_EQ(GetTrial(s.trial_id()).rung(), 2) << "stored";
  EXPECT_EQ(GetSearch(sid).rungs_size(), 2);
}

// `resource: step` (documented in search/core/spec.h) judges at the points' own step, which a metrics line carries as
// "step" and not among its values: the scheduler used to never hear of such a trial.
TEST_F(CoordinatorHistoryTest, AshaOnTheStepJudgesAtThePointsStep) {
  auto a = Connect("a", 2);
  CreateSearch(AshaSpec("step"));
  ASSERT_EQ(a->Starts().size(), 2u);
  const v1::StartTrial good = a->Starts().at(0), bad = a->Starts().at(1);
  Point(a, good, 1, {{"score", 0.9}});
  Point(a, bad, 1, {{"score", 0.1}});  // rung 1 holds two values now: only the top ceil(2/3) = 1 goes on
  EXPECT_EQ(GetTrial(good.trial_id()).rung(), 1);
  EXPECT_EQ(GetTrial(bad.trial_id()).rung(), 1);
  bool stop_sent = false;
  for (const auto& m : a->sent) stop_sent |= m.has_cancel() && m.cancel().trial_id() == bad.trial_id();
  EXPECT_TRUE(stop_sent) << "the worse trial is stopped at its first rung";
  Exit(a, bad, 143, /*cancelled=*/true);
  const v1::Trial stopped = GetTrial(bad.trial_id());
  EXPECT_EQ(stopped.state(), v1::TRIAL_COMPLETED);
  EXPECT_NE(stopped.error().find("stopped early"), std::string::npos) << stopped.error();
  EXPECT_EQ(stopped.attempts(0).outcome(), "stopped early");
}

// A Slurm step cancelled from outside (scancel, a node failure) is not the trial's failure: it is requeued with its
// attempt counted, as when a node is lost; an ordinary non-zero exit still fails it.
TEST_F(CoordinatorHistoryTest, ACancelledSlurmStepIsRequeuedAFailedRunIsNot) {
  auto a = Connect("a", 1);
  CreateSearch();  // max_retries: 1
  const v1::StartTrial first = a->Starts().at(0);
  v1::WorkerMessage e;
  e.mutable_exited()->set_trial_id(first.trial_id());
  e.mutable_exited()->set_assignment_epoch(first.assignment_epoch());
  e.mutable_exited()->set_exit_code(137);
  e.mutable_exited()->set_step_cancelled(true);
  coord_->OnWorkerMessage(a, e);
  Drain();
  v1::Trial t = GetTrial(first.trial_id());
  EXPECT_EQ(t.attempt(), 1);
  EXPECT_NE(t.state(), v1::TRIAL_FAILED) << t.error();
  EXPECT_NE(t.error().find("Slurm step was cancelled"), std::string::npos) << t.error();
  ASSERT_EQ(a->Starts().size(), 2u) << "started again";
  EXPECT_EQ(t.attempts(0).outcome(), "lost");
  Exit(a, a->Starts().at(1), 3);  // the second run fails on its own: that is the trial's failure
  EXPECT_EQ(GetTrial(first.trial_id()).state(), v1::TRIAL_FAILED);
}

}  // namespace
}  // namespace ladder::server
