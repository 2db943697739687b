// Known points first: the spec's `enqueue:` points run as the search's first trials, in order, before any
// sampled one, count against max_trials, and the model-based sampler learns from their results without being
// asked for them.
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
}

}  // namespace
}  // namespace ladder::server
