// The climb's probes through the coordinator (AddProbe): trials of a `scales:` search at a larger batch, marked as
// probes, with {micro_batches} in their command; an ended search runs them and then ends as it had; refusals.
#include <cmath>

#include "tests/server/coordinator_fixture.h"

namespace ladder::server {
namespace {

constexpr const char* kScalesSpec = R"(
name: scales
objective: {metric: score, mode: min}
budget: {parallelism: 8, max_failed_trials: 1}
scales: {global_batch: [32, 64], lr: {low: 0.1, high: 0.2}, per_octave: 1, extend: 0}
command: [train, "--batch-size={global_batch}", "--lr={lr}", "--micro-batches={micro_batches}"]
)";

std::string Arg(const v1::StartTrial& s, const std::string& prefix) {
  for (const auto& a : s.argv()) {
    if (a.rfind(prefix, 0) == 0) return a.substr(prefix.size());
  }
  return "";
}

class CoordinatorProbesTest : public CoordinatorTest {
 protected:
  // A scales search whose 4 grid trials all completed (scores 1..4: trial 0 the best).
  int64_t CompletedSweep(const std::shared_ptr<FakeLink>& link) {
    const int64_t id = CreateSearch(kScalesSpec);
    auto grid = link->Starts();
    EXPECT_EQ(grid.size(), 4u);
    for (size_t i = 0; i < grid.size(); ++i) {
      EXPECT_EQ(Arg(grid[i], "--micro-batches="), "1") << "an ordinary trial accumulates nothing";
      Report(link, grid[i], 1.0 + static_cast<double>(i));
    }
    EXPECT_EQ(GetSearch(id).state(), v1::SEARCH_COMPLETED);
    return id;
  }
  grpc::Status AddProbe(int64_t search_id, std::vector<double> lrs, v1::AddProbeResponse* resp,
                        int64_t batch = 256, int micro = 4) {
    v1::AddProbeRequest req;
    req.set_search_id(search_id);
    req.set_global_batch(batch);
    req.set_micro_batches(micro);
    req.set_target_batch(1024);
    for (double lr : lrs) req.add_lrs(lr);
    grpc::Status st = coord_->AddProbe(req, resp);
    Drain();
    return st;
  }
};

TEST_F(CoordinatorProbesTest, AProbeOnACompletedSearchRunsMarkedTrialsAndTheSearchCompletesAgain) {
  auto a = Connect("a", 8);
  const int64_t id = CompletedSweep(a);
  const double finished = GetSearch(id).finished_unix();
  v1::AddProbeResponse resp;
  ASSERT_TRUE(AddProbe(id, {0.1, 0.2, 0.4}, &resp).ok());
  ASSERT_EQ(resp.trials_size(), 3);
  EXPECT_EQ(resp.search().state(), v1::SEARCH_RUNNING);
  EXPECT_EQ(resp.search().probes(), 3);
  EXPECT_EQ(resp.search().max_trials(), 4) << "probes do not count against max_trials";
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(resp.trials(i).probe());
    EXPECT_EQ(resp.trials(i).micro_batches(), 4);
    EXPECT_EQ(resp.trials(i).number(), 4 + i);
  }
  auto starts = a->Starts();
  ASSERT_EQ(starts.size(), 7u) << "the probe's three trials start";
  for (size_t i = 4; i < 7; ++i) {
    EXPECT_EQ(Arg(starts[i], "--batch-size="), "256");
    EXPECT_EQ(Arg(starts[i], "--micro-batches="), "4");
  }
  EXPECT_NEAR(std::stod(Arg(starts[6], "--lr=")), 0.4, 1e-12);
  Report(a, starts[4], 0.5);  // better than every sampled trial: still not the best (a probe is no configuration)
  Report(a, starts[5], 0.6);
  EXPECT_EQ(GetSearch(id).state(), v1::SEARCH_RUNNING) << "one probe trial still runs";
  Report(a, starts[6], 0.7);
  const v1::Search done = GetSearch(id);
  EXPECT_EQ(done.state(), v1::SEARCH_COMPLETED);
  EXPECT_EQ(done.completed(), 7);
  EXPECT_EQ(done.best_trial_number(), 0);
  EXPECT_GE(done.finished_unix(), finished);
  EXPECT_TRUE(GetTrial(resp.trials(0).id()).probe());
  EXPECT_FALSE(GetTrial(done.best_trial_id()).probe());
  EXPECT_EQ(a->Starts().size(), 7u) << "no sampled trial was created meanwhile";
}

TEST_F(CoordinatorProbesTest, AFailedProbeTrialDoesNotFailTheSearch) {
  auto a = Connect("a", 8);
  const int64_t id = CompletedSweep(a);
  v1::AddProbeResponse resp;
  ASSERT_TRUE(AddProbe(id, {0.8, 1.6}, &resp).ok());
  auto starts = a->Starts();
  ASSERT_EQ(starts.size(), 6u);
  Exit(a, starts[4], 1);  // diverged
  Exit(a, starts[5], 1);
  const v1::Search done = GetSearch(id);
  EXPECT_EQ(done.state(), v1::SEARCH_COMPLETED) << done.error();
  EXPECT_EQ(done.failed(), 2);
}

TEST_F(CoordinatorProbesTest, ProbeTrialsKeepTheirMarkAcrossARestartAndStillRun) {
  int64_t id = 0;
  std::vector<int64_t> probe_ids;
  {
    auto a = Connect("a", 8);
    id = CompletedSweep(a);
    a.reset();
  }
  Close();
  Open();
  v1::AddProbeResponse resp;
  ASSERT_TRUE(AddProbe(id, {0.1, 0.2}, &resp).ok()) << "an ended search loaded from the database takes a probe";
  Close();
  Open();
  EXPECT_EQ(GetSearch(id).state(), v1::SEARCH_RUNNING);
  EXPECT_EQ(GetSearch(id).probes(), 2);
  const v1::Trial t = GetTrial(resp.trials(1).id());
  EXPECT_TRUE(t.probe());
  EXPECT_EQ(t.micro_batches(), 4);
  auto b = Connect("b", 8);
  auto starts = b->Starts();
  ASSERT_EQ(starts.size(), 2u) << "only the probe's trials: the sweep is done";
  for (const auto& s : starts) EXPECT_EQ(Arg(s, "--micro-batches="), "4");
  Report(b, starts[0], 0.9);
  Report(b, starts[1], 0.8);
  EXPECT_EQ(GetSearch(id).state(), v1::SEARCH_COMPLETED);
}

// A search that failed on its failure budget with grid points never started, reopened by a probe, the coordinator
// restarted meanwhile: it samples nothing, and it fails again once its probe has ended.
TEST_F(CoordinatorProbesTest, ASearchAProbeReopenedAfterItFailedFailsAgainAfterARestartWithoutSampling) {
  std::string spec = kScalesSpec;
  spec.replace(spec.find("parallelism: 8"), 14, "parallelism: 1");
  auto a = Connect("a", 8);
  const int64_t id = CreateSearch(spec);
  ASSERT_EQ(a->Starts().size(), 1u);
  Exit(a, a->Starts()[0], 1);
  ASSERT_EQ(GetSearch(id).state(), v1::SEARCH_FAILED) << "one failure is the budget: 3 grid points never ran";
  a.reset();
  Close();
  Open();  // no worker: the probe waits in the queue across the next restart
  v1::AddProbeResponse resp;
  ASSERT_TRUE(AddProbe(id, {0.1}, &resp).ok());
  Close();
  {
    // As a database migrated from before schema 10, which did not store the state a probe reopened a search from.
    store::Db raw((dir_ / "ladder.db").string());
    raw.Exec("UPDATE searches SET reopened_state=0, reopened_error=''");
  }
  Open();
  auto b = Connect("b", 8);
  ASSERT_EQ(b->Starts().size(), 1u);
  EXPECT_TRUE(GetTrial(b->Starts()[0].trial_id()).probe());
  Report(b, b->Starts()[0], 0.5);
  EXPECT_EQ(b->Starts().size(), 1u) << "no grid point starts after the probe";
  const v1::Search done = GetSearch(id);
  EXPECT_EQ(done.state(), v1::SEARCH_FAILED);
  EXPECT_NE(done.error().find("budget.max_failed_trials"), std::string::npos) << done.error();
}

// A search that failed with no trial completed (under its failure budget), reopened by a probe, the coordinator
// restarted while the probe waits: once the probe trial has completed the search fails again, with its own error.
// The state it had is stored with it; before, the restart left the search to end by its own rule, and the probe's
// completed trial made it COMPLETED.
TEST_F(CoordinatorProbesTest, ASearchAProbeReopenedEndsAsItHadAfterARestart) {
  std::string spec = kScalesSpec;
  spec.replace(spec.find("max_failed_trials: 1"), 20, "max_failed_trials: 9");
  int64_t id = 0;
  std::string error;
  {
    auto a = Connect("a", 8);
    id = CreateSearch(spec);
    auto grid = a->Starts();
    ASSERT_EQ(grid.size(), 4u);
    for (const auto& start : grid) Exit(a, start, 1);
    const v1::Search failed = GetSearch(id);
    ASSERT_EQ(failed.state(), v1::SEARCH_FAILED);
    error = failed.error();
    ASSERT_NE(error.find("no trial completed"), std::string::npos) << error;
  }
  Close();
  Open();  // no worker: the probe waits in the queue across the next restart
  v1::AddProbeResponse resp;
  ASSERT_TRUE(AddProbe(id, {0.1}, &resp).ok());
  ASSERT_EQ(GetSearch(id).state(), v1::SEARCH_RUNNING);
  Close();
  Open();
  auto b = Connect("b", 8);
  ASSERT_EQ(b->Starts().size(), 1u) << "only the probe: a reopened search samples nothing";
  Report(b, b->Starts()[0], 0.5);
  const v1::Search done = GetSearch(id);
  EXPECT_EQ(done.state(), v1::SEARCH_FAILED);
  EXPECT_EQ(done.error(), error);
  EXPECT_GT(done.finished_unix(), 0);
  Close();
  Open();  // ended again: nothing is left reopened
  EXPECT_EQ(GetSearch(id).state(), v1::SEARCH_FAILED);
  EXPECT_EQ(GetSearch(id).error(), error);
}

TEST_F(CoordinatorProbesTest, AProbeInARunningSearchLeavesItsSampledTrialsAsTheyWere) {
  auto a = Connect("a", 8);
  const int64_t id = CreateSearch(R"(
name: scales
objective: {metric: score, mode: min}
budget: {parallelism: 2}
scales: {global_batch: [32, 64], lr: {low: 0.1, high: 0.2}, per_octave: 1, extend: 0}
command: [train, "--batch-size={global_batch}", "--lr={lr}", "--micro-batches={micro_batches}"]
)");
  ASSERT_EQ(a->Starts().size(), 2u);
  v1::AddProbeResponse resp;
  ASSERT_TRUE(AddProbe(id, {0.3}, &resp, 128, 2).ok());
  EXPECT_EQ(resp.trials(0).number(), 2);
  for (size_t done = 0; done < a->Starts().size(); ++done) Report(a, a->Starts()[done], 1.0);
  auto starts = a->Starts();
  ASSERT_EQ(starts.size(), 5u) << "the grid's 4 trials and the probe";
  std::vector<std::string> sampled;
  for (const auto& s : starts) {
    if (Arg(s, "--micro-batches=") == "1") sampled.push_back(Arg(s, "--batch-size=") + "@" + Arg(s, "--lr="));
  }
  ASSERT_EQ(sampled.size(), 4u);
  EXPECT_EQ(sampled[2].substr(0, 3), "64@") << "the grid in order: no grid point was skipped for the probe";
  EXPECT_EQ(sampled[3].substr(0, 3), "64@");
  EXPECT_EQ(GetSearch(id).state(), v1::SEARCH_COMPLETED);
}

TEST_F(CoordinatorProbesTest, Refusals) {
  v1::AddProbeResponse resp;
  EXPECT_EQ(AddProbe(99, {0.1}, &resp).error_code(), grpc::StatusCode::NOT_FOUND);
  const int64_t plain = CreateSearch(kSpec);
  grpc::Status st = AddProbe(plain, {0.1}, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(st.error_message().find("probes need a scales: search"), std::string::npos) << st.error_message();
  const int64_t scales = CreateSearch(kScalesSpec);
  EXPECT_EQ(AddProbe(scales, {}, &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(AddProbe(scales, {-0.1}, &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(AddProbe(scales, {0.1}, &resp, 0).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  v1::CancelSearchRequest creq;
  creq.set_search_id(scales);
  v1::CancelSearchResponse cresp;
  ASSERT_TRUE(coord_->CancelSearch(creq, &cresp).ok());
  Drain();
  st = AddProbe(scales, {0.1}, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(st.error_message().find("cancelled"), std::string::npos) << st.error_message();
  EXPECT_EQ(GetSearch(scales).probes(), 0);
  EXPECT_EQ(GetSearch(scales).state(), v1::SEARCH_CANCELLED);
}

}  // namespace
}  // namespace ladder::server
