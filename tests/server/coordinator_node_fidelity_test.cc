// Node count as the fidelity (scheduler.resource: nodes): a trial runs in stages on growing node groups; at the
// end of each stage ASHA judges it at the rung of its node count; a promoted trial is relaunched, at promoted
// priority, on the next level's node count from the same checkpoint directory; the stages survive a restart.
#include <algorithm>

#include "tests/server/coordinator_fixture.h"

namespace ladder::server {
namespace {

constexpr const char* kNodesSpec = R"(
name: nodes-fidelity
objective: {metric: score, mode: max}
budget: {max_trials: 2, parallelism: 2}
sampler: {type: random, seed: 5}
scheduler: {type: asha, resource: nodes, min_resource: 1, max_resource: 4, reduction_factor: 2}
command: [train, "--x={x}", "--epochs={nodes}", "--ckpt={checkpoint_dir}"]
space:
  x: {type: float, low: 0.0, high: 1.0}
)";

using Links = std::vector<std::shared_ptr<FakeLink>>;

// The starts of one assignment of `trial` across the links (one per node of its group), rank 0's first.
std::vector<std::pair<std::shared_ptr<FakeLink>, v1::StartTrial>> StartsOf(const Links& links, int64_t trial,
                                                                          int64_t after_epoch = 0) {
  std::vector<std::pair<std::shared_ptr<FakeLink>, v1::StartTrial>> out;
  int64_t epoch = 0;
  for (const auto& l : links) {
    for (const auto& s : l->Starts()) {
      if (s.trial_id() == trial && s.assignment_epoch() > after_epoch) epoch = std::max(epoch, s.assignment_epoch());
    }
  }
  for (const auto& l : links) {
    for (const auto& s : l->Starts()) {
      if (s.trial_id() == trial && s.assignment_epoch() == epoch) out.push_back({l, s});
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.second.first_rank() < y.second.first_rank(); });
  return out;
}

// The trials started so far on any of the links, ascending (with repeats for multi-node starts).
std::vector<int64_t> StartedTrials(const Links& links) {
  std::vector<int64_t> trials;
  for (const auto& l : links) {
    for (const auto& s : l->Starts()) trials.push_back(s.trial_id());
  }
  std::sort(trials.begin(), trials.end());
  return trials;
}

std::string Arg(const v1::StartTrial& s, const std::string& prefix) {
  for (const auto& a : s.argv()) {
    if (a.rfind(prefix, 0) == 0) return a.substr(prefix.size());
  }
  return "";
}

class CoordinatorNodeFidelityTest : public CoordinatorTest {
 protected:
  // Rank 0's node reports the score, then every node of the stage exits 0.
  void FinishStage(const std::vector<std::pair<std::shared_ptr<FakeLink>, v1::StartTrial>>& stage, double score) {
    Metric(stage.front().first, stage.front().second, score);
    for (const auto& [link, start] : stage) Exit(link, start, 0);
  }
};

TEST_F(CoordinatorNodeFidelityTest, APromotedTrialIsRelaunchedOnTwiceTheNodesFromItsCheckpointUntilMaxResource) {
  Links links = {Connect("a", 1), Connect("b", 1), Connect("c", 1), Connect("d", 1)};
  auto id = CreateSearch(kNodesSpec);
  // Both trials start their first stage on one node each.
  std::vector<int64_t> trials = StartedTrials(links);
  ASSERT_EQ(trials.size(), 2u);
  auto good = StartsOf(links, trials[0]);
  auto bad = StartsOf(links, trials[1]);
  ASSERT_EQ(good.size(), 1u);
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(Arg(good[0].second, "--epochs="), "1") << "{nodes} is the stage's node count";
  EXPECT_EQ(good[0].second.env().at("LADDER_NODES"), "1");
  EXPECT_EQ(GetTrial(trials[0]).group().nodes(), 1);
  const std::string ckpt = Arg(good[0].second, "--ckpt=");
  ASSERT_FALSE(ckpt.empty());

  // Stage 1 of the good trial: first at rung nodes=1, it goes on, to 2 nodes.
  FinishStage(good, 0.9);
  auto t = GetTrial(trials[0]);
  EXPECT_NE(t.state(), v1::TRIAL_COMPLETED) << t.error();
  EXPECT_EQ(t.group().nodes(), 2);
  EXPECT_NE(t.error().find("promoted from 1 to 2 nodes"), std::string::npos) << t.error();
  auto stage2 = StartsOf(links, trials[0], good[0].second.assignment_epoch());
  ASSERT_EQ(stage2.size(), 2u) << "relaunched on a group of two nodes";
  EXPECT_EQ(stage2[0].second.env().at("WORLD_SIZE"), "2");
  EXPECT_EQ(stage2[1].second.env().at("RANK"), "1");
  EXPECT_EQ(Arg(stage2[0].second, "--epochs="), "2");
  EXPECT_EQ(Arg(stage2[0].second, "--ckpt="), ckpt) << "the same checkpoint directory: it resumes";
  EXPECT_EQ(stage2[0].second.checkpoint_dir(), good[0].second.checkpoint_dir());
  EXPECT_EQ(GetTrial(trials[0]).attempt(), 0) << "a promotion is not a retry";

  // The bad trial's stage 1: below the cutoff of rung nodes=1 (top 1 of 2): stopped, COMPLETED with its value.
  FinishStage(bad, 0.1);
  auto b = GetTrial(trials[1]);
  EXPECT_EQ(b.state(), v1::TRIAL_COMPLETED);
  EXPECT_DOUBLE_EQ(b.objective(), 0.1);
  EXPECT_EQ(b.error().rfind("stopped early: asha", 0), 0u) << b.error();
  EXPECT_EQ(b.group().nodes(), 1);

  // Stage 2 (2 nodes): first at rung nodes=2, promoted to max_resource: 4 nodes, the last stage.
  FinishStage(stage2, 0.95);
  auto stage3 = StartsOf(links, trials[0], stage2[0].second.assignment_epoch());
  ASSERT_EQ(stage3.size(), 4u);
  EXPECT_EQ(Arg(stage3[0].second, "--epochs="), "4");
  EXPECT_EQ(stage3[3].second.env().at("WORLD_SIZE"), "4");
  FinishStage(stage3, 0.97);
  t = GetTrial(trials[0]);
  EXPECT_EQ(t.state(), v1::TRIAL_COMPLETED);
  EXPECT_DOUBLE_EQ(t.objective(), 0.97);
  EXPECT_EQ(t.error(), "") << "a trial that ran every stage completes normally";
  EXPECT_EQ(GetSearch(id).state(), v1::SEARCH_COMPLETED);
  EXPECT_DOUBLE_EQ(GetSearch(id).best_objective(), 0.97);
  // Each judged stage is stored as a (nodes, score) point.
  int stage_points = 0;
  for (const auto& p : store_->LoadMetrics(trials[0])) {
    if (p.values().count("nodes")) {
      ++stage_points;
      EXPECT_EQ(p.values().at("score"), stage_points == 1 ? 0.9 : 0.95);
    }
  }
  EXPECT_EQ(stage_points, 2);
}

TEST_F(CoordinatorNodeFidelityTest, APromotedStageOutranksSearchTrialsAndStagesSurviveARestart) {
  Links links = {Connect("a", 1), Connect("b", 1)};
  CreateSearch(kNodesSpec);
  std::vector<int64_t> trials = StartedTrials(links);
  ASSERT_EQ(trials.size(), 2u);
  auto first = StartsOf(links, trials[0]);
  auto other = StartsOf(links, trials[1]);
  // Trial 0 is promoted to 2 nodes while trial 1 holds one of the two: the promoted stage preempts it.
  FinishStage(first, 0.9);
  bool preempt_sent = false;
  for (const auto& m : other[0].first->sent) preempt_sent |= m.has_cancel() && m.cancel().trial_id() == trials[1];
  ASSERT_TRUE(preempt_sent) << "promoted priority preempts a search trial through its checkpoint";
  Exit(other[0].first, other[0].second, 143, /*cancelled=*/true);
  EXPECT_EQ(GetTrial(trials[1]).state(), v1::TRIAL_PENDING);
  EXPECT_EQ(GetTrial(trials[1]).preemptions(), 1);
  auto stage2 = StartsOf(links, trials[0], first[0].second.assignment_epoch());
  ASSERT_EQ(stage2.size(), 2u);

  // The coordinator dies while stage 2 runs; after the restart the trial is still a 2-node trial and the
  // rung of nodes=1 still holds 0.9.
  Close();
  Open();
  std::vector<std::pair<int64_t, int64_t>> running = {{trials[0], stage2[0].second.assignment_epoch()}};
  Links again = {Connect("a", 1, running), Connect("b", 1, running)};
  auto t = GetTrial(trials[0]);
  EXPECT_EQ(t.state(), v1::TRIAL_RUNNING);
  EXPECT_EQ(t.group().nodes(), 2);
  EXPECT_EQ(GetTrial(trials[1]).group().nodes(), 1);
  // Stage 2 ends: promoted to 4 nodes, which this cluster does not have: it waits (PENDING).
  std::vector<std::pair<std::shared_ptr<FakeLink>, v1::StartTrial>> reattached = {{again[0], stage2[0].second},
                                                                                   {again[1], stage2[1].second}};
  std::sort(reattached.begin(), reattached.end(), [](const auto& x, const auto& y) {
    return x.second.first_rank() < y.second.first_rank();
  });
  FinishStage(reattached, 0.95);
  t = GetTrial(trials[0]);
  EXPECT_EQ(t.state(), v1::TRIAL_PENDING);
  EXPECT_EQ(t.group().nodes(), 4);
  // Trial 1 runs its first stage again and is judged against the replayed rung: 0.5 < 0.9, stopped.
  auto resumed = StartsOf(again, trials[1]);
  ASSERT_EQ(resumed.size(), 1u);
  FinishStage(resumed, 0.5);
  auto b = GetTrial(trials[1]);
  EXPECT_EQ(b.state(), v1::TRIAL_COMPLETED);
  EXPECT_EQ(b.error().rfind("stopped early: asha", 0), 0u) << b.error();
}

}  // namespace
}  // namespace ladder::server
