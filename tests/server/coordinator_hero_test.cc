// A hero run's plan (ladder promote): stored with the search, and the live val_loss watched against the
// predicted band: a warning when the run leaves it, a stop with --stop-outside-band when it is worse.
#include <sqlite3.h>

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

// The stored events of `kind`: their details, oldest first (read from the database file after Close()).
std::vector<std::string> StoredEvents(const std::filesystem::path& db, const std::string& kind) {
  std::vector<std::string> out;
  sqlite3* h = nullptr;
  if (sqlite3_open_v2(db.string().c_str(), &h, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(h);
    return out;
  }
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(h, "SELECT detail FROM events WHERE kind = ? ORDER BY rowid", -1, &st, nullptr) == SQLITE_OK) {
    sqlite3_bind_text(st, 1, kind.c_str(), -1, SQLITE_TRANSIENT);
    while (sqlite3_step(st) == SQLITE_ROW) out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
  }
  sqlite3_finalize(st);
  sqlite3_close(h);
  return out;
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
  Point(a, st, 20, {{"val_loss", 6.0}}, 1);  // still outside: warned once
  Drain();
  EXPECT_EQ(CancelCount(*a), 0u) << "warn only";
  Point(a, st, 30, {{"val_loss", 0.15}}, 2);  // back inside
  Drain();
  Exit(a, st, 0);
  EXPECT_EQ(GetTrial(st.trial_id()).state(), v1::TRIAL_COMPLETED);
  Close();  // the events are in the database
  auto out = StoredEvents(dir_ / "ladder.db", "hero_outside_band");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], "val_loss 5 at step 10 is above the predicted band [0.1, 0.2]");
  auto back = StoredEvents(dir_ / "ladder.db", "hero_inside_band");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0], "val_loss 0.15 at step 30 is back inside the predicted band [0.1, 0.2]");
  Open();
}

TEST_F(CoordinatorHeroTest, AfterACoordinatorCrashTheReattachedRunIsStillWatched) {
  auto a = Connect("a", 1);
  auto id = CreateHero(*coord_, kBand);
  Drain();
  auto st = a->Starts().at(0);
  Point(a, st, 100, {{"val_loss", 1.5}}, 0);  // inside
  Drain();
  // Coordinator "crash": dropped without Stop(); the plan comes back from the database with the search.
  store_->Flush();
  coord_.reset();
  store_.reset();
  Open();
  auto a2 = Connect("a", 1, {{st.trial_id(), st.assignment_epoch()}});
  EXPECT_TRUE(a2->Starts().empty()) << "re-attached, not restarted";
  Point(a2, st, 300, {{"val_loss", 1.3}}, 1);  // above [0.5, 1.0]: stopped, as before the crash
  Drain();
  ASSERT_EQ(CancelCount(*a2), 1u) << "the band was loaded again on restart";
  Exit(a2, st, 143, /*cancelled=*/true);
  auto t = GetTrial(st.trial_id());
  EXPECT_EQ(t.state(), v1::TRIAL_FAILED);
  EXPECT_NE(t.error().find("above the predicted band [0.5, 1]"), std::string::npos) << t.error();
  EXPECT_EQ(GetSearch(id).plan_json(), kBand);
}

TEST_F(CoordinatorHeroTest, MalformedPlanIsRefusedNamingTheField) {
  grpc::Status st;
  CreateHero(*coord_, R"({"loss_band": [[1, 2]]})", &st);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(st.error_message().find("plan_json: loss_band"), std::string::npos) << st.error_message();
  // A plan without the band (a writer whose key drifted) is refused too, rather than never watched.
  CreateHero(*coord_, R"({"band": [[1, 2, 3]]})", &st);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(st.error_message().find("plan_json: no \"loss_band\""), std::string::npos) << st.error_message();
  CreateHero(*coord_, R"({"loss_band": []})", &st);
  EXPECT_TRUE(st.ok()) << "an empty band is a plan that predicted none: " << st.error_message();
}

}  // namespace
}  // namespace ladder::server
