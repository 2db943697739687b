// The coordinator builds the spec's ensemble when a search completes: greedy selection over the best trials'
// saved validation predictions, stored with the search (it survives a restart), or an error naming the file.
#include <fstream>
#include <sstream>

#include "tests/server/coordinator_fixture.h"

namespace ladder::server {
namespace {

using CoordinatorEnsembleTest = CoordinatorTest;

constexpr const char* kEnsembleSpec = R"(
name: ens
objective: {metric: score, mode: max}
budget: {max_trials: 3, parallelism: 3}
command: [train, "--x={x}"]
ensemble: {predictions_file: "{checkpoint_dir}/val.csv", size: 6, top_k: 2, metric: accuracy}
space:
  x: {type: float, low: 0.0, high: 1.0}
)";

void WritePredictions(const v1::StartTrial& s, const std::string& csv) {
  std::filesystem::create_directories(s.checkpoint_dir());
  std::ofstream(std::filesystem::path(s.checkpoint_dir()) / "val.csv") << csv;
}

// Four validation examples of 2 classes, labels 0 1 1 0. Trial A is right on examples 1-3 and unsure about 4;
// trial B on 1, 2, 4 and unsure about 3: their average is right on all four. Trial C is worse than both and
// below top_k.
constexpr const char* kA = "label,p0,p1\n0,0.9,0.1\n1,0.1,0.9\n1,0.4,0.6\n0,0.45,0.55\n";
constexpr const char* kB = "label,p0,p1\n0,0.9,0.1\n1,0.2,0.8\n1,0.6,0.4\n0,0.9,0.1\n";
constexpr const char* kC = "label,p0,p1\n0,0.1,0.9\n1,0.9,0.1\n1,0.9,0.1\n0,0.1,0.9\n";

TEST_F(CoordinatorEnsembleTest, CompletedSearchGetsTheGreedyEnsembleOfItsTopTrialsAndKeepsItAcrossARestart) {
  auto a = Connect("a", 3);
  auto id = CreateSearch(kEnsembleSpec);
  auto starts = a->Starts();
  ASSERT_EQ(starts.size(), 3u);
  WritePredictions(starts[0], kA);
  WritePredictions(starts[1], kB);
  WritePredictions(starts[2], kC);
  Report(a, starts[0], 0.75);
  Report(a, starts[1], 0.74);
  Report(a, starts[2], 0.10);
  auto s = GetSearch(id);
  ASSERT_EQ(s.state(), v1::SEARCH_COMPLETED);
  ASSERT_TRUE(s.has_ensemble());
  const auto& e = s.ensemble();
  EXPECT_EQ(e.error(), "");
  EXPECT_EQ(e.metric(), "accuracy");
  EXPECT_EQ(e.candidates(), 2) << "top_k 2: trial C is not read";
  EXPECT_DOUBLE_EQ(e.best_single_value(), 0.75);
  EXPECT_EQ(e.best_single_trial_id(), starts[0].trial_id());
  ASSERT_TRUE(e.has_best_single_trial_number());
  EXPECT_EQ(e.best_single_trial_number(), GetTrial(starts[0].trial_id()).number());
  EXPECT_EQ(s.best_trial_number(), GetTrial(s.best_trial_id()).number());
  EXPECT_DOUBLE_EQ(e.value(), 1.0) << "the average of A and B is right on every example";
  ASSERT_EQ(e.members_size(), 2);
  std::set<int64_t> ids = {e.members(0).trial_id(), e.members(1).trial_id()};
  EXPECT_EQ(ids, (std::set<int64_t>{starts[0].trial_id(), starts[1].trial_id()}));
  EXPECT_NEAR(e.members(0).weight() + e.members(1).weight(), 1.0, 1e-12);
  Close();
  Open();
  auto again = GetSearch(id);
  ASSERT_TRUE(again.has_ensemble()) << "stored with the search";
  EXPECT_DOUBLE_EQ(again.ensemble().value(), 1.0);
  EXPECT_EQ(again.ensemble().members_size(), 2);
}

TEST_F(CoordinatorEnsembleTest, MissingPredictionsFileIsReportedNamingTheTrialAndThePath) {
  auto a = Connect("a", 3);
  auto id = CreateSearch(kEnsembleSpec);
  auto starts = a->Starts();
  WritePredictions(starts[0], kA);  // trial 1 saved nothing
  Report(a, starts[0], 0.75);
  Report(a, starts[1], 0.74);
  Report(a, starts[2], 0.10);
  auto s = GetSearch(id);
  ASSERT_EQ(s.state(), v1::SEARCH_COMPLETED) << "the search itself still completed";
  ASSERT_TRUE(s.has_ensemble());
  EXPECT_NE(s.ensemble().error().find("trial 1"), std::string::npos) << s.ensemble().error();
  EXPECT_NE(s.ensemble().error().find("val.csv"), std::string::npos) << s.ensemble().error();
  EXPECT_EQ(s.ensemble().members_size(), 0);
}

TEST_F(CoordinatorEnsembleTest, RetrainStepGetsTheMembersAndTheSearchCompletesAfterIt) {
  auto a = Connect("a", 3);
  std::string spec = kEnsembleSpec;
  spec.replace(spec.find("metric: accuracy}"), 17,
               "metric: accuracy, retrain: [retrain, \"--members={ensemble_file}\", \"--out={checkpoint_dir}\"]}");
  auto id = CreateSearch(spec);
  auto starts = a->Starts();
  ASSERT_EQ(starts.size(), 3u);
  WritePredictions(starts[0], kA);
  WritePredictions(starts[1], kB);
  WritePredictions(starts[2], kC);
  Report(a, starts[0], 0.75);
  Report(a, starts[1], 0.74);
  Report(a, starts[2], 0.10);
  ASSERT_EQ(a->Starts().size(), 4u) << "the retrain step starts once the ensemble is chosen";
  auto step = a->Starts()[3];
  EXPECT_EQ(GetSearch(id).state(), v1::SEARCH_RUNNING) << "the search waits for its last step";
  ASSERT_EQ(step.argv_size(), 3);
  EXPECT_EQ(step.argv(0), "retrain");
  std::string file = step.argv(1).substr(std::string("--members=").size());
  EXPECT_EQ(step.env().at("LADDER_ENSEMBLE_FILE"), file);
  EXPECT_EQ(step.argv(2), "--out=" + step.checkpoint_dir());
  std::ifstream in(file);
  ASSERT_TRUE(in) << file;
  std::stringstream text;
  text << in.rdbuf();
  for (const auto& s : {starts[0], starts[1]}) {
    EXPECT_NE(text.str().find("\"trial_id\": " + std::to_string(s.trial_id())), std::string::npos) << text.str();
    EXPECT_NE(text.str().find(s.checkpoint_dir()), std::string::npos) << "members' checkpoints are listed";
  }
  EXPECT_EQ(text.str().find("\"trial_id\": " + std::to_string(starts[2].trial_id())), std::string::npos);
  auto t = GetTrial(step.trial_id());
  EXPECT_TRUE(t.workflow_step());
  EXPECT_EQ(t.params_size(), 0);
  Report(a, step, 0.99);
  auto s = GetSearch(id);
  EXPECT_EQ(s.state(), v1::SEARCH_COMPLETED);
  EXPECT_EQ(s.ensemble().retrain_trial_id(), step.trial_id());
  EXPECT_DOUBLE_EQ(s.best_objective(), 0.75) << "the step is not a configuration: it is not the best trial";
  Close();
  Open();
  EXPECT_TRUE(GetTrial(step.trial_id()).workflow_step()) << "known as the step after a restart";
  EXPECT_EQ(GetSearch(id).ensemble().retrain_trial_id(), step.trial_id());
  EXPECT_DOUBLE_EQ(GetSearch(id).best_objective(), 0.75) << "nor the best trial after a restart";
  EXPECT_EQ(GetSearch(id).best_trial_id(), starts[0].trial_id());
}

}  // namespace
}  // namespace ladder::server
