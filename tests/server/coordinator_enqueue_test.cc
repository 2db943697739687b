// Known points first: the spec's `enqueue:` points run as the search's first trials, in order, before any
// sampled one, count against max_trials, and the model-based sampler learns from their results without being
// asked for them; EnqueueTrial (ladder search enqueue) adds points to a running search, checked against its space,
// stored, and run before its next sampled trial.
#include <cmath>

#include "search/samplers/sampler.h"
#include "search/spec/spec_reader.h"
#include "tests/server/coordinator_fixture.h"

namespace ladder::server {
namespace {

constexpr const char* kEnqueueSpec = R"(
name: known
objective: {metric: score, mode: max}
budget: {max_trials: 4, parallelism: 1}
sampler: {type: tpe, seed: 5, n_startup_trials: 2}
command: [run, "--x={x}", "--opt={opt}"]
space:
  x: {type: float, low: 0.0, high: 1.0}
  opt: {type: categorical, values: [sgd, adam]}
enqueue:
  - {x: 0.25, opt: adam}
  - {x: 0.75, opt: sgd}
)";

std::string Arg(const v1::StartTrial& s, const std::string& prefix) {
  for (const auto& a : s.argv()) {
    if (a.rfind(prefix, 0) == 0) return a.substr(prefix.size());
  }
  return "";
}

search::Params ParamsOf(const v1::StartTrial& s) {
  return {{"x", std::stod(Arg(s, "--x="))}, {"opt", Arg(s, "--opt=")}};
}

using CoordinatorEnqueueTest = CoordinatorTest;

TEST_F(CoordinatorEnqueueTest, SpecPointsRunFirstInOrderAndTheSamplerLearnsFromThem) {
  auto a = Connect("a", 1);
  const int64_t id = CreateSearch(kEnqueueSpec);
  ASSERT_EQ(a->Starts().size(), 1u);
  EXPECT_EQ(Arg(a->Starts()[0], "--x="), "0.25");
  EXPECT_EQ(Arg(a->Starts()[0], "--opt="), "adam");
  Report(a, a->Starts()[0], 0.9);
  ASSERT_EQ(a->Starts().size(), 2u);
  EXPECT_EQ(Arg(a->Starts()[1], "--x="), "0.75");
  EXPECT_EQ(Arg(a->Starts()[1], "--opt="), "sgd");
  Report(a, a->Starts()[1], 0.1);
  ASSERT_EQ(a->Starts().size(), 3u);
  // Trial 2 is the TPE's first model-based suggestion: its 2 startup trials are the enqueued ones, told with
  // their results. The same sampler told the same two results suggests exactly it (the determinism contract);
  // one that was not told them would still be in its Sobol startup.
  auto spec = search::ParseSpec(kEnqueueSpec, "s.yaml").spec;
  auto told = search::MakeSampler(*spec);
  told->Tell(0, spec->enqueue[0], 0.9);
  told->Tell(1, spec->enqueue[1], 0.1);
  const search::Params expected = *told->Ask(2);
  const search::Params got = ParamsOf(a->Starts()[2]);
  EXPECT_NEAR(std::get<double>(got.at("x")), std::get<double>(expected.at("x")), 1e-9);
  EXPECT_EQ(std::get<std::string>(got.at("opt")), std::get<std::string>(expected.at("opt")));
  auto untold = search::MakeSampler(*spec);
  EXPECT_NE(std::get<double>(untold->Ask(2)->at("x")), std::get<double>(expected.at("x")));
  Report(a, a->Starts()[2], 0.5);
  Report(a, a->Starts()[3], 0.4);
  const v1::Search done = GetSearch(id);
  EXPECT_EQ(done.state(), v1::SEARCH_COMPLETED) << "the enqueued points count against max_trials (4)";
  EXPECT_EQ(done.completed(), 4);
  EXPECT_EQ(a->Starts().size(), 4u);
  EXPECT_EQ(done.best_trial_number(), 0) << "an enqueued point is a trial like any: it may be the best";
}

TEST_F(CoordinatorEnqueueTest, SpecPointsAreNotRunAgainAfterARestart) {
  auto a = Connect("a", 1);
  const int64_t id = CreateSearch(kEnqueueSpec);
  Report(a, a->Starts()[0], 0.9);
  Report(a, a->Starts()[1], 0.1);
  ASSERT_EQ(a->Starts().size(), 3u);
  const v1::StartTrial running = a->Starts()[2];  // the first sampled trial
  Close();
  Open();
  auto again = Connect("a", 1, {{running.trial_id(), running.assignment_epoch()}});
  Report(again, running, 0.5);
  ASSERT_EQ(again->Starts().size(), 1u);
  const v1::StartTrial next = again->Starts()[0];
  EXPECT_EQ(GetTrial(next.trial_id()).number(), 3);
  EXPECT_NE(Arg(next, "--x="), "0.25") << "no point runs twice";
  EXPECT_NE(Arg(next, "--x="), "0.75");
  Report(again, next, 0.2);
  EXPECT_EQ(GetSearch(id).state(), v1::SEARCH_COMPLETED);
  EXPECT_EQ(GetSearch(id).completed(), 4);
  // The spec's points are marked as known points (stored with the trial: after the restart too), the others not.
  EXPECT_TRUE(GetTrial(a->Starts()[0].trial_id()).enqueued());
  EXPECT_TRUE(GetTrial(a->Starts()[1].trial_id()).enqueued());
  EXPECT_FALSE(GetTrial(running.trial_id()).enqueued());
  EXPECT_FALSE(GetTrial(next.trial_id()).enqueued());
}

constexpr const char* kRandomSpec = R"(
name: later
objective: {metric: score, mode: max}
budget: {max_trials: 4, parallelism: 1}
sampler: {type: random, seed: 2}
command: [run, "--x={x}", "--opt={opt}", "--m={momentum}"]
space:
  x: {type: float, low: 0.0, high: 1.0}
  opt: {type: categorical, values: [sgd, adam]}
  momentum: {type: float, low: 0.0, high: 0.99, condition: {param: opt, in: [sgd]}}
)";

class CoordinatorEnqueueRpcTest : public CoordinatorTest {
 protected:
  grpc::Status Enqueue(int64_t search_id, std::map<std::string, std::string> params,
                       v1::EnqueueTrialResponse* resp = nullptr) {
    v1::EnqueueTrialRequest req;
    req.set_search_id(search_id);
    for (const auto& [k, v] : params) (*req.mutable_params())[k] = v;
    v1::EnqueueTrialResponse ignored;
    grpc::Status st = coord_->EnqueueTrial(req, resp ? resp : &ignored);
    Drain();
    return st;
  }
};

TEST_F(CoordinatorEnqueueRpcTest, APointRunsBeforeTheNextSampledTrialAndCountsAgainstTheBudget) {
  auto a = Connect("a", 1);
  const int64_t id = CreateSearch(kRandomSpec);
  ASSERT_EQ(a->Starts().size(), 1u);  // trial 0, sampled, runs
  v1::EnqueueTrialResponse resp;
  ASSERT_TRUE(Enqueue(id, {{"x", "0.5"}, {"opt", "sgd"}, {"momentum", "0.9"}}, &resp).ok());
  EXPECT_EQ(resp.position(), 1) << "it runs next";
  EXPECT_EQ(resp.search().enqueued(), 1);
  ASSERT_TRUE(Enqueue(id, {{"x", "0.125"}, {"opt", "adam"}}, &resp).ok());
  EXPECT_EQ(resp.position(), 2);
  EXPECT_EQ(GetSearch(id).enqueued(), 2);
  Report(a, a->Starts()[0], 0.3);
  ASSERT_EQ(a->Starts().size(), 2u);
  EXPECT_EQ(Arg(a->Starts()[1], "--x="), "0.5");
  EXPECT_EQ(Arg(a->Starts()[1], "--m="), "0.9");
  Report(a, a->Starts()[1], 0.4);
  ASSERT_EQ(a->Starts().size(), 3u);
  EXPECT_EQ(Arg(a->Starts()[2], "--x="), "0.125");
  EXPECT_EQ(GetSearch(id).enqueued(), 0);
  // 3 trials created of 4: one is left, for a sampled trial or one more point, not two.
  ASSERT_TRUE(Enqueue(id, {{"x", "0.25"}, {"opt", "adam"}}).ok());
  grpc::Status full = Enqueue(id, {{"x", "0.75"}, {"opt", "adam"}});
  EXPECT_EQ(full.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(full.error_message().find("no trial of its budget is left to run the point (max_trials 4: 3 created, "
                                      "1 enqueued before it)"),
            std::string::npos)
      << full.error_message();
  Report(a, a->Starts()[2], 0.5);
  ASSERT_EQ(a->Starts().size(), 4u);
  EXPECT_EQ(Arg(a->Starts()[3], "--x="), "0.25");
  Report(a, a->Starts()[3], 0.6);
  EXPECT_EQ(GetSearch(id).state(), v1::SEARCH_COMPLETED);
  EXPECT_EQ(Enqueue(id, {{"x", "0.5"}, {"opt", "adam"}}).error_code(), grpc::StatusCode::FAILED_PRECONDITION)
      << "an ended search runs no more trials";
}

TEST_F(CoordinatorEnqueueRpcTest, APointIsCheckedAgainstTheSpaceWithTheSpecsWords) {
  const int64_t id = CreateSearch(kRandomSpec);
  auto refused = [&](std::map<std::string, std::string> params) {
    grpc::Status st = Enqueue(id, std::move(params));
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    return st.error_message();
  };
  const std::string s = "search " + std::to_string(id) + ": ";
  EXPECT_EQ(refused({{"x", "1.5"}, {"opt", "adam"}}), s + "x: 1.5 is out of range [0, 1]");
  EXPECT_EQ(refused({{"x", "0.5"}, {"opt", "rmsprop"}}), s + "opt: 'rmsprop' is not one of its values [sgd, adam]");
  EXPECT_EQ(refused({{"x", "0.5"}, {"opt", "adam"}, {"momentum", "0.9"}}),
            s + "momentum: 0.9 is given, but 'momentum' is inactive here: its condition is opt in [sgd] and opt is "
                "adam (leave it out)");
  EXPECT_EQ(refused({{"x", "0.5"}, {"opt", "sgd"}}),
            s + "momentum: missing: 'momentum' is active (opt is sgd) and needs a value");
  EXPECT_EQ(refused({{"y", "0.5"}, {"x", "0.5"}, {"opt", "adam"}}), s + "y: unknown parameter 'y' (did you mean 'x'?)");
  v1::EnqueueTrialRequest none;
  none.set_search_id(99);
  v1::EnqueueTrialResponse resp;
  EXPECT_EQ(coord_->EnqueueTrial(none, &resp).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(GetSearch(id).enqueued(), 0) << "nothing refused was kept";
}

TEST_F(CoordinatorEnqueueRpcTest, EnqueuedPointsSurviveACoordinatorRestartAndRunOnce) {
  auto a = Connect("a", 1);
  const int64_t id = CreateSearch(kRandomSpec);
  const v1::StartTrial first = a->Starts()[0];
  ASSERT_TRUE(Enqueue(id, {{"x", "0.5"}, {"opt", "adam"}}).ok());
  ASSERT_TRUE(Enqueue(id, {{"x", "0.625"}, {"opt", "adam"}}).ok());
  Close();
  Open();
  EXPECT_EQ(GetSearch(id).enqueued(), 2) << "both points were stored";
  auto again = Connect("a", 1, {{first.trial_id(), first.assignment_epoch()}});
  Report(again, first, 0.3);
  ASSERT_EQ(again->Starts().size(), 1u);
  EXPECT_EQ(Arg(again->Starts()[0], "--x="), "0.5");
  const v1::StartTrial second = again->Starts()[0];
  Close();  // the first point's trial exists: its stored row went with it
  Open();
  EXPECT_EQ(GetSearch(id).enqueued(), 1);
  auto third = Connect("a", 1, {{second.trial_id(), second.assignment_epoch()}});
  Report(third, second, 0.4);
  ASSERT_EQ(third->Starts().size(), 1u);
  EXPECT_EQ(Arg(third->Starts()[0], "--x="), "0.625");
  Report(third, third->Starts()[0], 0.5);
  ASSERT_EQ(third->Starts().size(), 2u);
  EXPECT_NE(Arg(third->Starts()[1], "--x="), "0.5") << "no point runs twice";
  EXPECT_NE(Arg(third->Starts()[1], "--x="), "0.625");
  EXPECT_EQ(GetSearch(id).enqueued(), 0);
  Close();
  Open();
  // Marked as known points, as stored: the two enqueued ones, not the sampled ones around them.
  EXPECT_FALSE(GetTrial(first.trial_id()).enqueued());
  EXPECT_TRUE(GetTrial(second.trial_id()).enqueued());
  EXPECT_TRUE(GetTrial(third->Starts()[0].trial_id()).enqueued());
  EXPECT_FALSE(GetTrial(third->Starts()[1].trial_id()).enqueued());
}

}  // namespace
}  // namespace ladder::server
