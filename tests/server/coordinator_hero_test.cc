// A hero run's plan (ladder promote): stored with the search, and the live val_loss watched against the
// predicted band: a warning when the run leaves it, a stop with --stop-outside-band when it is worse.
#include "tests/server/coordinator_fixture.h"

namespace ladder::server {
namespace {

using CoordinatorHeroTest = CoordinatorTest;

constexpr const char* kHeroSpec = R"(
name: hero
objective: {metric: val_loss, mode: min}
budget: {max_trials: 1, max_failed_trials: 1}
command: [train]
space:
  plan: {type: categorical, values: [hero]}
)";

int64_t CreateHero(Coordinator& c, const std::string& plan, grpc::Status* status = nullptr) {
  v1::CreateSearchRequest req;
  req.set_spec_yaml(kHeroSpec);
  req.set_priority(v1::PRIORITY_HERO);
  req.set_plan_json(plan);
  v1::CreateSearchResponse resp;
  auto st = c.CreateSearch(req, &resp);
  if (status) *status = st;
  return resp.search().id();
}

size_t CancelCount(const FakeLink& l) {
  size_t n = 0;
  for (const auto& m : l.sent) n += m.has_cancel();
  return n;
}

constexpr const char* kBand = R"({"loss_band": [[100, 1.0, 2.0], [300, 0.5, 1.0]], "stop_outside_band": true})";

TEST_F(CoordinatorHeroTest, RunWorseThanTheBandIsStoppedWithAnErrorNamingTheBand) {
  auto a = Connect("a", 1);
  auto id = CreateHero(*coord_, kBand);
  Drain();
  EXPECT_EQ(GetSearch(id).plan_json(), kBand);
  auto st = a->Starts().at(0);
  Point(a, st, 50, {{"val_loss", 9.0}}, 0);   // before the band starts: not judged
  Point(a, st, 100, {{"val_loss", 1.5}}, 1);  // inside [1, 2]
  Point(a, st, 200, {{"val_loss", 1.2}}, 2);  // inside the interpolated [0.75, 1.5]
  Drain();
  EXPECT_EQ(CancelCount(*a), 0u);
  Point(a, st, 300, {{"val_loss", 1.3}}, 3);  // above [0.5, 1.0]
  Drain();
  ASSERT_EQ(CancelCount(*a), 1u);
  Exit(a, st, 143, /*cancelled=*/true);
  auto t = GetTrial(st.trial_id());
  EXPECT_EQ(t.state(), v1::TRIAL_FAILED);
  EXPECT_NE(t.error().find("above the predicted band [0.5, 1]"), std::string::npos) << t.error();
  // Restart: the plan is stored with the search.
  Close();
  Open();
  EXPECT_EQ(GetSearch(id).plan_json(), kBand);
}

TEST_F(CoordinatorHeroTest, WithoutStopTheRunOnlyWarnsAndFinishes) {
  auto a = Connect("a", 1);
  CreateHero(*coord_, R"({"loss_band": [[0, 0.1, 0.2]]})");
  Drain();
  auto st = a->Starts().at(0);
  Point(a, st, 10, {{"val_loss", 5.0}}, 0);
  Drain();
  EXPECT_EQ(CancelCount(*a), 0u) << "warn only";
  Exit(a, st, 0);
  EXPECT_EQ(GetTrial(st.trial_id()).state(), v1::TRIAL_COMPLETED);
}

TEST_F(CoordinatorHeroTest, MalformedPlanIsRefusedNamingTheField) {
  grpc::Status st;
  CreateHero(*coord_, R"({"loss_band": [[1, 2]]})", &st);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(st.error_message().find("plan_json: loss_band"), std::string::npos) << st.error_message();
}

}  // namespace
}  // namespace ladder::server
