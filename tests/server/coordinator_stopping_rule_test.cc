// The coordinator with a stopping rule (the spec's `scheduler:`): ASHA stops trials early (they complete
// with their value), PBT restarts a bad trial from a good one's checkpoint with perturbed parameters, and the
// scheduler's state is rebuilt from the stored points after a restart.
#include <fstream>

#include "tests/server/coordinator_fixture.h"

namespace ladder::server {
namespace {

std::string Spec(const std::string& scheduler, int parallelism, int max_trials) {
  return "name: sched\n"
         "objective: {metric: score, mode: max}\n"
         "budget: {max_trials: " + std::to_string(max_trials) + ", parallelism: " + std::to_string(parallelism) +
         "}\n"
         "sampler: {type: random, seed: 5}\n"
         "scheduler: " + scheduler + "\n"
         "command: [train, '--x={x}', '--ckpt={checkpoint_dir}']\n"
         "space:\n  x: {type: float, low: 0.0, high: 1.0}\n";
}

std::vector<v1::CancelTrial> CancelsOf(const FakeLink& link, int64_t trial) {
  std::vector<v1::CancelTrial> out;
  for (const auto& m : link.sent) {
    if (m.has_cancel() && m.cancel().trial_id() == trial) out.push_back(m.cancel());
  }
  return out;
}

constexpr const char* kAsha = "{type: asha, resource: epoch, min_resource: 1, max_resource: 9, reduction_factor: 3}";

class CoordinatorStoppingRuleTest : public CoordinatorTest {
 protected:
  // An exit 143 its worker did not ask for (step_cancelled): a multi-node trial's rank that stopped with its group
  // before its own worker got the cancel.
  void UnaskedExit143(const std::shared_ptr<FakeLink>& link, const v1::StartTrial& s) {
    v1::WorkerMessage e;
    e.mutable_exited()->set_trial_id(s.trial_id());
    e.mutable_exited()->set_assignment_epoch(s.assignment_epoch());
    e.mutable_exited()->set_exit_code(143);
    e.mutable_exited()->set_error("exited with code 143");
    e.mutable_exited()->set_step_cancelled(true);
    coord_->OnWorkerMessage(link, e);
    Drain();
  }
  struct ThreeAshaTrials {
    std::shared_ptr<FakeLink> a;
    int64_t search_id = 0;
    std::vector<v1::StartTrial> starts;
  };
  // An ASHA search of three trials on node a (3 slots), the first two reported at rung 1 (epoch 1) with 0.9 and 0.8.
  void StartThreeTwoAtRungOne(ThreeAshaTrials* out) {
    out->a = Connect("a", 3);
    out->search_id = CreateSearch(Spec(kAsha, 3, 3));
    out->starts = out->a->Starts();
    ASSERT_EQ(out->starts.size(), 3u);
    Point(out->a, out->starts[0], 1, {{"epoch", 1}, {"score", 0.9}}, 0);
    Point(out->a, out->starts[1], 1, {{"epoch", 1}, {"score", 0.8}}, 0);
  }
};

TEST_F(CoordinatorStoppingRuleTest, AshaStopsATrialBelowTheRungCutoffAndItCompletesWithItsValue) {
  ThreeAshaTrials three;
  ASSERT_NO_FATAL_FAILURE(StartThreeTwoAtRungOne(&three));
  auto& [a, id, starts] = three;
  Drain();
  EXPECT_TRUE(CancelsOf(*a, starts[0].trial_id()).empty()) << "first at the rung: it goes on";
  Point(a, starts[2], 1, {{"epoch", 1}, {"score", 0.1}}, 0);  // the worst of 3 at rung 1: only the top 1 of 3 goes on
  Drain();
  auto cancels = CancelsOf(*a, starts[2].trial_id());
  ASSERT_EQ(cancels.size(), 1u);
  EXPECT_NE(cancels[0].reason().find("stopped early"), std::string::npos) << cancels[0].reason();
  Exit(a, starts[2], 143, /*cancelled=*/true);
  auto t = GetTrial(starts[2].trial_id());
  EXPECT_EQ(t.state(), v1::TRIAL_COMPLETED) << "an early stop is a completed trial";
  EXPECT_DOUBLE_EQ(t.objective(), 0.1);
  EXPECT_EQ(t.error().rfind("stopped early: asha", 0), 0u) << t.error();
  // A trial that reaches max_resource is stopped too (it is done).
  Point(a, starts[0], 9, {{"epoch", 9}, {"score", 0.95}}, 1);
  Drain();
  ASSERT_EQ(CancelsOf(*a, starts[0].trial_id()).size(), 1u);
  Exit(a, starts[0], 0, true);
  EXPECT_EQ(GetTrial(starts[0].trial_id()).state(), v1::TRIAL_COMPLETED);
  EXPECT_DOUBLE_EQ(GetSearch(id).best_objective(), 0.95);
}

// A stopped trial's exit that reaches the coordinator as a SIGTERM its worker did not send (a multi-node trial's rank
// that stopped with its group before its own worker got the cancel: exit 143, step_cancelled) is the early stop
// asked for, not a stop from outside ladder: the trial completes with its value, not requeued.
TEST_F(CoordinatorStoppingRuleTest, AnEarlyStoppedTrialsUnaskedExit143StillCompletesIt) {
  ThreeAshaTrials three;
  ASSERT_NO_FATAL_FAILURE(StartThreeTwoAtRungOne(&three));
  auto& [a, id, starts] = three;
  Point(a, starts[2], 1, {{"epoch", 1}, {"score", 0.1}}, 0);
  Drain();
  ASSERT_EQ(CancelsOf(*a, starts[2].trial_id()).size(), 1u);
  UnaskedExit143(a, starts[2]);
  const auto t = GetTrial(starts[2].trial_id());
  EXPECT_EQ(t.state(), v1::TRIAL_COMPLETED) << t.error();
  EXPECT_EQ(t.attempt(), 0);
  EXPECT_DOUBLE_EQ(t.objective(), 0.1);
}

TEST_F(CoordinatorStoppingRuleTest, AshaRungsAreRebuiltFromStoredPointsAfterARestart) {
  ThreeAshaTrials three;
  ASSERT_NO_FATAL_FAILURE(StartThreeTwoAtRungOne(&three));
  auto& [a, id, starts] = three;
  Drain();
  Close();  // the coordinator dies; the three runs go on
  Open();
  std::vector<std::pair<int64_t, int64_t>> running;
  for (const auto& s : starts) running.push_back({s.trial_id(), s.assignment_epoch()});
  auto a2 = Connect("a", 3, running);
  Point(a2, starts[2], 1, {{"epoch", 1}, {"score", 0.1}}, 0);
  Drain();
  EXPECT_EQ(CancelsOf(*a2, starts[2].trial_id()).size(), 1u)
      << "the rung remembers 0.9 and 0.8 from before the restart, so 0.1 is cut";
}

// A coordinator crash between an early stop's cancel and the run's exit: the exit (cancelled, as asked) reaches
// the next coordinator, which knows from the replayed reports that the trial was stopped early — it completes
// with its value instead of ending CANCELLED — and which sends the cancel again in case the first was never sent.
TEST_F(CoordinatorStoppingRuleTest, AnEarlyStopInFlightAcrossACrashStillCompletesTheTrialWithItsValue) {
  ThreeAshaTrials three;
  ASSERT_NO_FATAL_FAILURE(StartThreeTwoAtRungOne(&three));
  auto& [a, id, starts] = three;
  Point(a, starts[2], 1, {{"epoch", 1}, {"score", 0.1}}, 0);
  Drain();
  ASSERT_EQ(CancelsOf(*a, starts[2].trial_id()).size(), 1u);
  // Crash: dropped without Stop() (what was flushed before the cancel went out survives).
  coord_.reset();
  store_.reset();
  Open();
  std::vector<std::pair<int64_t, int64_t>> running;
  for (const auto& s : starts) running.push_back({s.trial_id(), s.assignment_epoch()});
  auto a2 = Connect("a", 3, running);
  auto again = CancelsOf(*a2, starts[2].trial_id());
  ASSERT_EQ(again.size(), 1u) << "the decision is sent again to the re-attached run";
  EXPECT_EQ(again[0].assignment_epoch(), starts[2].assignment_epoch());
  EXPECT_NE(again[0].reason().find("stopped early by asha"), std::string::npos) << again[0].reason();
  EXPECT_EQ(CancelsOf(*a2, starts[0].trial_id()).size(), CancelsOf(*a, starts[0].trial_id()).size());
  EXPECT_EQ(CancelsOf(*a2, starts[1].trial_id()).size(), CancelsOf(*a, starts[1].trial_id()).size());
  Exit(a2, starts[2], 143, /*cancelled=*/true);
  auto t = GetTrial(starts[2].trial_id());
  EXPECT_EQ(t.state(), v1::TRIAL_COMPLETED);
  EXPECT_DOUBLE_EQ(t.objective(), 0.1);
  EXPECT_EQ(t.error().rfind("stopped early: asha", 0), 0u) << t.error();
  EXPECT_EQ(GetSearch(id).cancelled(), 0);
}

// GetParam(): the bad trial's exit comes unasked (exit 143, step_cancelled: a rank that stopped with its group before
// its worker got the cancel), else as the cancel's answer.
class CoordinatorPbtTest : public CoordinatorStoppingRuleTest, public ::testing::WithParamInterface<bool> {};
INSTANTIATE_TEST_SUITE_P(ExitAskedOrUnasked, CoordinatorPbtTest, ::testing::Bool());

TEST_P(CoordinatorPbtTest, PbtRestartsABadTrialFromAGoodOnesCheckpointWithPerturbedParameters) {
  auto a = Connect("a", 2);
  auto id = CreateSearch(
      Spec("{type: pbt, resource: epoch, perturbation_interval: 1, quantile: 0.5, resample_probability: 0}", 2, 2));
  auto starts = a->Starts();
  ASSERT_EQ(starts.size(), 2u);
  auto good = GetTrial(starts[0].trial_id()), bad = GetTrial(starts[1].trial_id());
  // The good trial saved a checkpoint.
  std::filesystem::create_directories(starts[0].checkpoint_dir());
  std::ofstream(std::filesystem::path(starts[0].checkpoint_dir()) / "model.pt") << "good weights";
  std::filesystem::create_directories(starts[1].checkpoint_dir());
  std::ofstream(std::filesystem::path(starts[1].checkpoint_dir()) / "stale.pt") << "bad weights";
  Point(a, starts[0], 1, {{"epoch", 1}, {"score", 0.9}}, 0);
  Point(a, starts[1], 1, {{"epoch", 1}, {"score", 0.2}}, 0);
  Drain();
  auto cancels = CancelsOf(*a, bad.id());
  ASSERT_EQ(cancels.size(), 1u) << "the bottom half exploits the top half";
  EXPECT_NE(cancels[0].reason().find("pbt"), std::string::npos) << cancels[0].reason();
  if (GetParam()) {
    UnaskedExit143(a, starts[1]);  // the exploit asked for it: not a stop from outside ladder
  } else {
    Exit(a, starts[1], 143, /*cancelled=*/true);
  }
  auto t = GetTrial(bad.id());
  ASSERT_EQ(a->Starts().size(), 3u) << "it starts again at once";
  auto again = a->Starts()[2];
  EXPECT_EQ(again.trial_id(), bad.id());
  EXPECT_EQ(t.attempt(), 0);
  double good_x = good.params().at("x").float_value();
  double new_x = GetTrial(bad.id()).params().at("x").float_value();
  EXPECT_TRUE(std::abs(new_x - std::min(1.0, good_x * 0.8)) < 1e-12 || std::abs(new_x - std::min(1.0, good_x * 1.2)) < 1e-12)
      << "the good trial's x (" << good_x << ") times 0.8 or 1.2, got " << new_x;
  ASSERT_EQ(again.argv(1).rfind("--x=", 0), 0u);
  EXPECT_NEAR(std::stod(again.argv(1).substr(4)), new_x, 1e-9) << "launched with the new parameters";
  std::ifstream in(std::filesystem::path(again.checkpoint_dir()) / "model.pt");
  std::string weights;
  std::getline(in, weights);
  EXPECT_EQ(weights, "good weights") << "its checkpoint directory holds the good trial's checkpoint";
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(again.checkpoint_dir()) / "stale.pt"))
      << "and nothing of its own";
  EXPECT_FALSE(std::filesystem::exists(again.checkpoint_dir() + ".exploit-tmp"));
  EXPECT_FALSE(std::filesystem::exists(again.checkpoint_dir() + ".exploit-old"));
  EXPECT_EQ(GetSearch(id).state(), v1::SEARCH_RUNNING);

  // A coordinator crash while the exploited trial runs again: the exploit decided on its earlier run's point is
  // not re-applied to the new run (that would wipe its progress on every restart).
  coord_.reset();
  store_.reset();
  Open();
  auto a2 = Connect("a", 2, {{starts[0].trial_id(), starts[0].assignment_epoch()},
                             {again.trial_id(), again.assignment_epoch()}});
  EXPECT_TRUE(CancelsOf(*a2, bad.id()).empty()) << "the new run goes on";
  EXPECT_EQ(GetTrial(bad.id()).state(), v1::TRIAL_RUNNING);
  std::getline(std::ifstream(std::filesystem::path(again.checkpoint_dir()) / "model.pt"), weights);
  EXPECT_EQ(weights, "good weights");
}

}  // namespace
}  // namespace ladder::server
