// Several objectives in the coordinator (the spec's objectives:): each completed trial's values (reported metrics
// at their last value, node_hours and wall_time measured), the multi-objective sampler told them, the Pareto front
// kept as trials complete (Search.pareto_front, Trial.pareto) and rebuilt after a restart, and a trial that never
// reported one of the metrics failing with its name.
#include "search/multiobjective/mo_sampler.h"
#include "search/spec/spec_reader.h"
#include "tests/server/coordinator_fixture.h"

namespace ladder::server {
namespace {

const char* kTwoMetrics = R"(
name: mo
objectives: [{metric: loss, mode: min}, {metric: acc, mode: max}]
budget: {max_trials: 5, parallelism: 1}
sampler: {type: tpe, seed: 3, n_startup_trials: 2}
command: [run, "--x={x}"]
space:
  x: {type: float, low: 0.0, high: 1.0}
)";

class CoordinatorParetoTest : public CoordinatorTest {
 protected:
  // The run reports loss and acc (and a later loss: the last value counts) and exits 0.
  void Run(const std::shared_ptr<FakeLink>& link, const v1::StartTrial& s, double loss, double acc) {
    Point(link, s, 1, {{"loss", loss + 1}, {"acc", acc}});
    Point(link, s, 2, {{"loss", loss}});
    Exit(link, s, 0);
  }
  std::vector<v1::Trial> List(int64_t id) {
    v1::ListTrialsRequest req;
    req.set_search_id(id);
    v1::ListTrialsResponse resp;
    EXPECT_TRUE(coord_->ListTrials(req, &resp).ok());
    return {resp.trials().begin(), resp.trials().end()};
  }
  // The trial numbers on the front, in Search.pareto_front's order, and those that ListTrials marks.
  std::vector<int> Front(int64_t id) {
    std::vector<int> out;
    const v1::Search s = GetSearch(id);
    for (int64_t tid : s.pareto_front()) out.push_back(GetTrial(tid).number());
    return out;
  }
  std::vector<int> Marked(int64_t id) {
    std::vector<int> out;
    for (const auto& t : List(id)) {
      if (t.pareto()) out.push_back(t.number());
    }
    return out;
  }
};

double X(const v1::StartTrial& s) { return std::stod(s.argv(1).substr(4)); }

TEST_F(CoordinatorParetoTest, TheFrontIsKeptAsTrialsCompleteAndRebuiltAfterARestart) {
  auto a = Connect("a", 1);
  const int64_t id = CreateSearch(kTwoMetrics);
  const v1::Search created = GetSearch(id);
  ASSERT_EQ(created.objectives_size(), 2);
  EXPECT_EQ(created.objectives(0).metric(), "loss");
  EXPECT_EQ(created.objectives(0).direction(), v1::MINIMIZE);
  EXPECT_EQ(created.objectives(1).metric(), "acc");
  EXPECT_EQ(created.objectives(1).direction(), v1::MAXIMIZE);
  // (loss, acc): 0 (0.5, 0.5) and 1 (0.3, 0.4) trade off; 2 (0.6, 0.4) is dominated by 0.
  const double values[][2] = {{0.5, 0.5}, {0.3, 0.4}, {0.6, 0.4}, {0.2, 0.9}, {0.1, 0.3}};
  std::vector<v1::StartTrial> starts;
  for (int i = 0; i < 3; ++i) {
    starts.push_back(a->Starts().back());
    Run(a, starts.back(), values[i][0], values[i][1]);
  }
  EXPECT_EQ(Front(id), (std::vector<int>{1, 0})) << "by the first objective, best first";
  EXPECT_EQ(Marked(id), (std::vector<int>{0, 1}));
  const v1::Trial t0 = List(id)[0];
  ASSERT_EQ(t0.objectives_size(), 2);
  EXPECT_EQ(t0.objectives(0), 0.5) << "the last loss reported, not the first";
  EXPECT_EQ(t0.objectives(1), 0.5);
  EXPECT_EQ(t0.objective(), 0.5) << "the trial's objective is its first";
  // Trial 2 (after its 2 startup trials) is multi-objective TPE's suggestion given both values of 0 and 1.
  auto spec = search::ParseSpec(kTwoMetrics, "mo.yaml").spec;
  std::string error;
  auto mo = search::MakeMultiObjectiveSampler(*spec, {{false, true}}, &error);
  ASSERT_TRUE(mo) << error;
  for (int i = 0; i < 2; ++i) {
    mo->Tell(i, {{"x", X(starts[static_cast<size_t>(i)])}}, std::vector<double>{values[i][0], values[i][1]});
  }
  EXPECT_NEAR(X(starts[2]), std::get<double>(mo->Ask(2)->at("x")), 1e-9);
  Close();
  Open();
  EXPECT_EQ(Front(id), (std::vector<int>{1, 0})) << "rebuilt from the stored values";
  auto b = Connect("a", 1);
  for (int i = 3; i < 5; ++i) Run(b, b->Starts().back(), values[i][0], values[i][1]);
  const v1::Search done = GetSearch(id);
  EXPECT_EQ(done.state(), v1::SEARCH_COMPLETED);
  EXPECT_EQ(Front(id), (std::vector<int>{4, 3})) << "3 dominates 0 and 1; 4 trades off against 3";
  EXPECT_EQ(Marked(id), (std::vector<int>{3, 4}));
  Close();
  Open();
  EXPECT_EQ(Front(id), (std::vector<int>{4, 3})) << "an ended search's front after a restart";
  ASSERT_EQ(done.pareto_front_size(), 2);
  EXPECT_TRUE(GetTrial(done.pareto_front(0)).pareto());
}

TEST_F(CoordinatorParetoTest, BuiltInMetricsAreMeasuredAndAMissingMetricFailsTheTrialNamingIt) {
  auto a = Connect("a", 1);
  const int64_t id = CreateSearch(R"(
name: cost
objectives: [{metric: loss, mode: min}, {metric: node_hours, mode: min}, {metric: wall_time, mode: min}]
budget: {max_trials: 2, parallelism: 1, max_failed_trials: 5}
sampler: random
command: [run]
space:
  x: {type: float, low: 0.0, high: 1.0}
)");
  const v1::StartTrial s0 = a->Starts().back();
  Point(a, s0, 1, {{"loss", 0.25}});
  Exit(a, s0, 0);
  const v1::Trial t0 = GetTrial(s0.trial_id());
  ASSERT_EQ(t0.state(), v1::TRIAL_COMPLETED) << t0.error();
  ASSERT_EQ(t0.objectives_size(), 3);
  EXPECT_EQ(t0.objectives(0), 0.25);
  EXPECT_DOUBLE_EQ(t0.objectives(1), t0.node_seconds() / 3600);
  ASSERT_EQ(t0.attempts_size(), 1);
  EXPECT_DOUBLE_EQ(t0.objectives(2), t0.attempts(0).ended_unix() - t0.attempts(0).started_unix());
  EXPECT_EQ(GetSearch(id).pareto_front_size(), 1);
  const v1::StartTrial s1 = a->Starts().back();
  Point(a, s1, 1, {{"accuracy", 0.9}});
  Exit(a, s1, 0);
  const v1::Trial t1 = GetTrial(s1.trial_id());
  EXPECT_EQ(t1.state(), v1::TRIAL_FAILED);
  EXPECT_EQ(t1.error(), "exited 0 without reporting the objective metric 'loss' (1 metrics lines, 0 ignored lines)");
  EXPECT_EQ(t1.objectives_size(), 0);
  EXPECT_FALSE(t1.pareto());
}

}  // namespace
}  // namespace ladder::server
