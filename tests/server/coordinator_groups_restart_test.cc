// The coordinator with multi-node trials across its own restart: a group re-attached where it runs, a group not
// given out while a member's worker has not registered again, and what a worker that comes back without its run
// (or having exited it) or never comes back does to the group.
#include <map>

#include "tests/server/coordinator_groups_support.h"

namespace ladder::server {
namespace {

TEST_F(CoordinatorGroupTest, RestartReattachesATwoNodeTrialWhereItRuns) {
  auto a = Connect("a", 2);
  auto b = Connect("b", 2);
  auto c = Connect("c", 2);
  CreateSearch(kTwoNodeSpec);
  std::vector<std::pair<std::shared_ptr<FakeLink>, v1::StartTrial>> members;
  std::shared_ptr<FakeLink> idle;
  for (auto& [name, l] : std::vector<std::pair<std::string, std::shared_ptr<FakeLink>>>{{"a", a}, {"b", b}, {"c", c}}) {
    if (l->Starts().empty()) idle = l; else members.push_back({l, l->Starts()[0]});
  }
  ASSERT_EQ(members.size(), 2u);
  auto st = members[0].second;
  Close();  // the coordinator dies; the workers keep running their ranks
  Open();
  std::map<std::shared_ptr<FakeLink>, std::string> names = {{a, "a"}, {b, "b"}, {c, "c"}};
  std::vector<std::shared_ptr<FakeLink>> relinked;
  for (auto& [l, s] : members) relinked.push_back(Connect(names[l], 2, {{s.trial_id(), s.assignment_epoch()}}));
  auto idle2 = Connect(names[idle], 2);
  for (auto& l : relinked) {
    for (const auto& m : l->sent) {
      ASSERT_FALSE(m.has_registered() && m.registered().cancel_trials_size() > 0) << "re-attached, not cancelled";
    }
  }
  auto t = GetTrial(st.trial_id());
  EXPECT_EQ(t.state(), v1::TRIAL_RUNNING);
  EXPECT_EQ(t.attempt(), 0);
  EXPECT_TRUE(idle2->Starts().empty()) << "parallelism 1: nothing else runs, and the group keeps its nodes";
  Metric(relinked[0], members[0].second, 0.7);
  Exit(relinked[0], members[0].second, 0);
  Exit(relinked[1], members[1].second, 0);
  EXPECT_EQ(GetTrial(st.trial_id()).state(), v1::TRIAL_COMPLETED);
  EXPECT_EQ(idle2->Starts().size() + relinked[0]->Starts().size() + relinked[1]->Starts().size(), 2u)
      << "the second trial starts on two nodes";
}

// A member stopped from outside ladder (its Slurm step cancelled, a SIGTERM its worker did not send) while the other
// ran is stored with the trial (schema 11): after a coordinator restart before the other member's exit, the re-attached
// member is told again to stop (the first cancel may not have reached it), and its exit — 143, not asked: its ranks
// stopped with the group's — requeues the trial as that outside stop (attempt + 1), not as its failure. Before, the
// restarted coordinator had forgotten the stop, and that exit FAILED the trial.
TEST_F(CoordinatorGroupTest, AMemberStoppedFromOutsideLadderIsRememberedAcrossARestart) {
  auto a = Connect("a", 2), b = Connect("b", 2), c = Connect("c", 2);
  CreateSearch(kTwoNodeSpec);
  const RunningGroup g = StartOneGroup(a, b, c);
  std::map<std::string, std::shared_ptr<FakeLink>> links = {{"a", a}, {"b", b}, {"c", c}};
  const int64_t id = g.rank0.trial_id();
  Metric(links[g.rank0_node], g.rank0, 0.5);
  MemberExit(*coord_, links[g.rank0_node], g.rank0, "outside");
  Drain();
  ASSERT_EQ(Cancels(*links[g.other_node]).size(), 1u) << "the other member is told to stop";
  store_->Flush();
  coord_.reset();  // the coordinator dies before the other member's exit
  store_.reset();
  Open();
  auto other = Connect(g.other_node, 2, {{id, g.other.assignment_epoch()}});
  const auto again = Cancels(*other);
  EXPECT_EQ(again.size(), 1u) << "the re-attached member is told again to stop";
  if (!again.empty()) EXPECT_NE(again[0].reason().find("from outside ladder"), std::string::npos) << again[0].reason();
  Exit(other, g.other, 143);  // its ranks stopped with the group's: 143, which its worker did not ask for
  EXPECT_EQ(GetTrial(id).state(), v1::TRIAL_RUNNING) << "rank 0's worker has not re-registered: it may still run it";
  auto rank0 = Connect(g.rank0_node, 2);  // back without the run (its exit was acknowledged before the crash)
  const auto t = GetTrial(id);
  EXPECT_NE(t.state(), v1::TRIAL_FAILED) << t.error();
  EXPECT_EQ(t.attempt(), 1) << "requeued as on a lost node: " << t.error();
  EXPECT_NE(t.error().find("requeued (attempt 1)"), std::string::npos) << t.error();
}

// After a restart, a group member whose worker has not registered again is presumed running (its worker may be
// reconnecting with it): when the trial is stopped in the meantime (here its other member's ranks stop without a
// request: a requeue), its node group is not given out again until that worker is heard — so the trial never
// starts elsewhere while its old rank 0 may still run.
TEST_F(CoordinatorGroupTest, AfterARestartAGroupIsNotGivenAwayWhileAMembersWorkerHasNotReRegistered) {
  // The re-attach window (the lease's three) does not end during the test.
  const RunningGroup g = CrashWhileOneGroupRuns(std::chrono::hours(1));
  ASSERT_FALSE(g.rank0_node.empty());
  ASSERT_FALSE(g.other_node.empty());
  const int64_t id = g.rank0.trial_id();
  auto other = Connect(g.other_node, 2, {{id, g.other.assignment_epoch()}});
  auto idle = Connect(g.idle_node, 2);
  Exit(other, g.other, 128 + 15, /*cancelled=*/true);  // stopped without a request of this coordinator: requeued
  EXPECT_EQ(GetTrial(id).state(), v1::TRIAL_PENDING);
  EXPECT_TRUE(other->Starts().empty() && idle->Starts().empty())
      << "rank 0's worker has not re-registered and may still run it: the trial waits for it";
  // Rank 0's worker comes back with the old run: it is told to stop it, and once it has, the trial runs again.
  auto rank0 = Connect(g.rank0_node, 2, {{id, g.rank0.assignment_epoch()}});
  ASSERT_FALSE(rank0->sent.empty());
  ASSERT_TRUE(rank0->sent.front().has_registered());
  const auto& told = rank0->sent.front().registered().cancel_trials();
  EXPECT_NE(std::find(told.begin(), told.end(), id), told.end()) << "the old run is not the coordinator's any more";
  EXPECT_TRUE(other->Starts().empty() && idle->Starts().empty() && rank0->Starts().empty())
      << "not before the old run's exit";
  Exit(rank0, g.rank0, 128 + 15, /*cancelled=*/true);
  size_t again = 0;
  for (const auto& l : {other, idle, rank0}) {
    for (const auto& s : l->Starts()) {
      EXPECT_EQ(s.trial_id(), id);
      EXPECT_GT(s.assignment_epoch(), g.rank0.assignment_epoch());
      ++again;
    }
  }
  EXPECT_EQ(again, 2u) << "the trial runs again on two nodes";
}

// The same, when rank 0's worker comes back having exited the run (it forgets it once told): the group is free at once.
TEST_F(CoordinatorGroupTest, AfterARestartAWorkerThatComesBackHavingExitedTheRunFreesTheGroupAtOnce) {
  const RunningGroup g = CrashWhileOneGroupRuns(std::chrono::hours(1));
  const int64_t id = g.rank0.trial_id();
  auto other = Connect(g.other_node, 2, {{id, g.other.assignment_epoch()}});
  auto idle = Connect(g.idle_node, 2);
  Exit(other, g.other, 128 + 15, /*cancelled=*/true);
  ASSERT_TRUE(other->Starts().empty() && idle->Starts().empty());
  auto rank0 = std::make_shared<FakeLink>();
  v1::WorkerMessage reg;
  reg.mutable_register_()->set_node_id(g.rank0_node);
  reg.mutable_register_()->mutable_resources()->set_hostname(g.rank0_node);
  reg.mutable_register_()->mutable_resources()->set_address(g.rank0_node + ".addr");
  reg.mutable_register_()->mutable_resources()->set_slots(2);
  reg.mutable_register_()->mutable_resources()->set_cores(2);
  auto* run = reg.mutable_register_()->add_running();
  run->set_trial_id(id);
  run->set_assignment_epoch(g.rank0.assignment_epoch());
  run->set_exited(true);
  coord_->OnWorkerMessage(rank0, reg);
  Drain();
  EXPECT_EQ(other->Starts().size() + idle->Starts().size() + rank0->Starts().size(), 2u)
      << "its exit is as good as heard: the trial runs again on two nodes";
}

// The same, when rank 0's worker never comes back: the re-attach deadline gives the group up.
TEST_F(CoordinatorGroupTest, AfterARestartAGroupWhoseMemberNeverReRegistersRunsAgainAtTheReattachDeadline) {
  const RunningGroup g = CrashWhileOneGroupRuns(std::chrono::milliseconds(300));
  const int64_t id = g.rank0.trial_id();
  auto other = Connect(g.other_node, 2, {{id, g.other.assignment_epoch()}});
  auto idle = Connect(g.idle_node, 2);
  Exit(other, g.other, 128 + 15, /*cancelled=*/true);
  for (int i = 0; i < 24; ++i) {  // past the re-attach deadline (three leases), the two workers beating
    for (const auto& l : {other, idle}) {
      v1::WorkerMessage beat;
      beat.mutable_heartbeat();
      coord_->OnWorkerMessage(l, beat);
    }
    loop_.restart();
    loop_.run_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(other->Starts().size(), 1u) << "the group is given up at the deadline";
  ASSERT_EQ(idle->Starts().size(), 1u);
  EXPECT_EQ(other->Starts()[0].trial_id(), id);
  EXPECT_GT(other->Starts()[0].assignment_epoch(), g.rank0.assignment_epoch());
}

// After a restart a worker resends every run's state, a report without points too, also for a member that does
// not run rank 0: that is no stale run, and it is not told to stop (it was, and every group trial running at a
// coordinator restart ran again).
TEST_F(CoordinatorGroupTest, AReportWithoutPointsFromAMemberThatDoesNotRunRankZeroIsNotFenced) {
  const RunningGroup g = CrashWhileOneGroupRuns(std::chrono::hours(1));
  const int64_t id = g.rank0.trial_id();
  auto rank0 = Connect(g.rank0_node, 2, {{id, g.rank0.assignment_epoch()}});
  auto other = Connect(g.other_node, 2, {{id, g.other.assignment_epoch()}});
  v1::WorkerMessage m;
  m.mutable_metrics()->set_trial_id(id);
  m.mutable_metrics()->set_assignment_epoch(g.other.assignment_epoch());
  m.mutable_metrics()->set_first_seq(0);
  m.mutable_metrics()->set_ignored_lines(0);
  coord_->OnWorkerMessage(other, m);
  Drain();
  EXPECT_TRUE(Cancels(*other).empty()) << Cancels(*other)[0].reason();
  EXPECT_TRUE(Cancels(*rank0).empty());
  EXPECT_EQ(GetTrial(id).state(), v1::TRIAL_RUNNING);
  EXPECT_EQ(GetTrial(id).attempt(), 0);
}

// After a restart, a worker that registers without a run it was given, a run that stored nothing (its start never
// reached the worker: the coordinator died between committing the start and sending it), costs the trial no
// attempt: the group's other member is stopped, and the trial runs again at once rather than at the re-attach
// deadline (an hour away here).
TEST_F(CoordinatorGroupTest, AfterARestartARunItsWorkerNeverGotRunsAgainWithoutCostingAnAttempt) {
  const RunningGroup g = CrashWhileOneGroupRuns(std::chrono::hours(1));
  const int64_t id = g.rank0.trial_id();
  auto rank0 = Connect(g.rank0_node, 2);  // without the run
  auto other = Connect(g.other_node, 2, {{id, g.other.assignment_epoch()}});
  ASSERT_EQ(Cancels(*other).size(), 1u) << "the rest of the group is stopped";
  Exit(other, g.other, 128 + 15, /*cancelled=*/true);
  auto idle = Connect(g.idle_node, 2);
  EXPECT_EQ(rank0->Starts().size() + other->Starts().size() + idle->Starts().size(), 2u)
      << "the trial runs again on two nodes";
  const v1::Trial t = GetTrial(id);
  EXPECT_EQ(t.state(), v1::TRIAL_RUNNING);
  EXPECT_EQ(t.attempt(), 0) << t.error();
}

}  // namespace
}  // namespace ladder::server
