// Access control without sockets: a token's verdicts (valid, wrong role, revoked, expired by a clock the test
// moves), the subscribers told once of each end, the open-stream registry that a token's end closes, and the
// dashboard's decision for a request (bearer or session) with the words it answers.
#include <gtest/gtest.h>

#include <vector>

#include "common/token.h"
#include "server/access.h"
#include "server/http/dashboard_auth.h"
#include "server/open_streams.h"

namespace ladder::server {
namespace {

class AccessControlTest : public ::testing::Test {
 protected:
  AccessControlTest() : access_("admin-secret", [this] { return now_; }) {
    access_.Add(Sha256Hex("viewer-secret"), v1::TOKEN_ROLE_VIEWER);
    access_.Add(Sha256Hex("brief-secret"), v1::TOKEN_ROLE_ADMIN, 1000);
    access_.Add(Sha256Hex("later-secret"), v1::TOKEN_ROLE_WORKER, 2000);
    access_.Subscribe([this](const std::string& sha256, const std::string& why) { told_.push_back({sha256, why}); });
  }
  double now_ = 500;
  AccessControl access_;
  std::vector<std::pair<std::string, std::string>> told_;
};

TEST_F(AccessControlTest, AValidTokenIsJudgedByItsRoleAndFiledByItsHash) {
  Access a = access_.Check("viewer-secret", Need::kRead);
  EXPECT_TRUE(a.allowed());
  EXPECT_EQ(a.sha256, Sha256Hex("viewer-secret"));
  EXPECT_EQ(access_.Check("viewer-secret", Need::kWrite).verdict, Access::kWrongRole);
  EXPECT_EQ(access_.Check("", Need::kRead).verdict, Access::kNoToken);
  EXPECT_EQ(access_.Check("made-up", Need::kRead).verdict, Access::kUnknownToken);
  // The admin token: every call, under its hash too (a session made from it).
  a = access_.Check("admin-secret", Need::kWorker);
  EXPECT_TRUE(a.allowed());
  EXPECT_EQ(a.sha256, Sha256Hex("admin-secret"));
  EXPECT_TRUE(access_.CheckHash(Sha256Hex("admin-secret"), Need::kWrite).allowed());
  EXPECT_TRUE(access_.CheckHash(Sha256Hex("viewer-secret"), Need::kRead).allowed());
  EXPECT_EQ(access_.CheckHash("", Need::kRead).verdict, Access::kNoToken);
}

TEST_F(AccessControlTest, ARevokedTokenIsRefusedAsRevokedAndItsSubscribersAreTold) {
  access_.Revoke(Sha256Hex("viewer-secret"));
  EXPECT_EQ(access_.Check("viewer-secret", Need::kRead).verdict, Access::kRevoked);
  EXPECT_EQ(access_.CheckHash(Sha256Hex("viewer-secret"), Need::kRead).verdict, Access::kRevoked);
  EXPECT_EQ(access_.RoleOf("viewer-secret"), v1::TOKEN_ROLE_UNSPECIFIED);
  ASSERT_EQ(told_.size(), 1u);
  EXPECT_EQ(told_[0].first, Sha256Hex("viewer-secret"));
  EXPECT_NE(told_[0].second.find("the token was revoked"), std::string::npos) << told_[0].second;
}

TEST_F(AccessControlTest, ATokenPastItsExpiryIsRefusedSayingWhenAndSubscribersHearOnce) {
  EXPECT_TRUE(access_.Check("brief-secret", Need::kWrite).allowed());
  EXPECT_EQ(access_.ExpireDue(), 1000) << "the next expiry ahead";
  EXPECT_TRUE(told_.empty());
  now_ = 1000;
  const Access a = access_.Check("brief-secret", Need::kRead);
  EXPECT_EQ(a.verdict, Access::kExpired);
  EXPECT_EQ(a.expires_unix, 1000);
  EXPECT_EQ(ExpiredMessage(1000), "the token expired at 1970-01-01 00:16:40 UTC (`ladder tokens list` shows it); ask "
                                  "the coordinator's admin for a new one");
  EXPECT_EQ(access_.ExpireDue(), 2000);
  ASSERT_EQ(told_.size(), 1u);
  EXPECT_EQ(told_[0].first, Sha256Hex("brief-secret"));
  EXPECT_NE(told_[0].second.find("expired at 1970-01-01 00:16:40 UTC"), std::string::npos);
  EXPECT_EQ(access_.ExpireDue(), 2000) << "told once";
  EXPECT_EQ(told_.size(), 1u);
  now_ = 5000;
  EXPECT_EQ(access_.ExpireDue(), 0) << "none ahead";
  EXPECT_EQ(told_.size(), 2u);
  EXPECT_TRUE(access_.Check("viewer-secret", Need::kRead).allowed()) << "a token without expiry never expires";
}

TEST(OpenStreams, ATokensEndClosesOnlyItsStreamsUnauthenticatedWithTheReason) {
  OpenStreams streams;
  std::vector<std::pair<int, grpc::Status>> closed;
  int keys[4];
  streams.Add(&keys[0], "aaa", [&](const grpc::Status& st) { closed.push_back({0, st}); });
  streams.Add(&keys[1], "bbb", [&](const grpc::Status& st) { closed.push_back({1, st}); });
  streams.Add(&keys[2], "aaa", [&](const grpc::Status& st) { closed.push_back({2, st}); });
  streams.Add(&keys[3], "", [&](const grpc::Status&) { closed.push_back({9, grpc::Status::OK}); });
  EXPECT_EQ(streams.size(), 3u) << "a stream without a token is not filed";
  streams.Remove(&keys[2]);
  EXPECT_EQ(streams.CloseAll("aaa", "the token was revoked"), 1);
  ASSERT_EQ(closed.size(), 1u);
  EXPECT_EQ(closed[0].first, 0);
  EXPECT_EQ(closed[0].second.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(closed[0].second.error_message(), "the token was revoked");
  EXPECT_EQ(streams.CloseAll("aaa", "again"), 0) << "closed once";
  EXPECT_EQ(streams.size(), 1u);
}

class DashboardAuthTest : public AccessControlTest {
 protected:
  using Clock = DashboardSessions::Clock;
  RequestAuth Bearer(const std::string& token, bool post = false) {
    return Authorize(access_, sessions_, token, std::nullopt, post, t0_);
  }
  RequestAuth Cookie(const std::string& id, bool post = false, Clock::duration later = {}) {
    return Authorize(access_, sessions_, std::nullopt, id, post, t0_ + later);
  }
  DashboardSessions sessions_;
  Clock::time_point t0_ = Clock::time_point(std::chrono::hours(100));
};

TEST_F(DashboardAuthTest, ABearerIsToldWhyItsTokenIsRefused) {
  EXPECT_TRUE(Bearer("viewer-secret").allowed());
  EXPECT_EQ(Bearer("viewer-secret", /*post=*/true).http_status, 403);
  access_.Revoke(Sha256Hex("viewer-secret"));
  RequestAuth r = Bearer("viewer-secret");
  EXPECT_EQ(r.http_status, 401);
  EXPECT_NE(r.error.find("the token was revoked"), std::string::npos) << r.error;
  now_ = 1500;
  r = Bearer("brief-secret");
  EXPECT_EQ(r.http_status, 401);
  EXPECT_NE(r.error.find("the token expired at "), std::string::npos) << r.error;
  r = Authorize(access_, sessions_, std::nullopt, std::nullopt, false, t0_);
  EXPECT_EQ(r.http_status, 401);
  EXPECT_EQ(r.error, NeedsTokenMessage());
}

TEST_F(DashboardAuthTest, ASessionIsJudgedByTheTokenItWasMadeFrom) {
  const std::string admin = sessions_.Create(v1::TOKEN_ROLE_ADMIN, Sha256Hex("brief-secret"), t0_);
  const std::string viewer = sessions_.Create(v1::TOKEN_ROLE_VIEWER, Sha256Hex("viewer-secret"), t0_);
  RequestAuth r = Cookie(admin, /*post=*/true);
  ASSERT_TRUE(r.allowed());
  ASSERT_NE(r.session, nullptr);
  EXPECT_EQ(r.session->csrf.size(), 48u);
  EXPECT_EQ(r.token_sha256, Sha256Hex("brief-secret"));
  EXPECT_EQ(Cookie(viewer, /*post=*/true).http_status, 403);
  access_.Revoke(Sha256Hex("viewer-secret"));
  r = Cookie(viewer);
  EXPECT_EQ(r.http_status, 401);
  EXPECT_NE(r.error.find("this dashboard session ended: the token was revoked"), std::string::npos) << r.error;
  EXPECT_EQ(r.session, nullptr);
  now_ = 1000;
  r = Cookie(admin, /*post=*/true);
  EXPECT_EQ(r.http_status, 401);
  EXPECT_NE(r.error.find("expired at"), std::string::npos) << r.error;
  EXPECT_EQ(Cookie("no-such-session").error, NeedsTokenMessage());
}

TEST_F(DashboardAuthTest, ASessionEndsAfterItsIdleLifetimeAndItsAbsoluteLifetime) {
  SessionLimits limits;
  limits.idle = std::chrono::minutes(10);
  limits.lifetime = std::chrono::minutes(25);
  sessions_ = DashboardSessions(limits);
  const std::string idle = sessions_.Create(v1::TOKEN_ROLE_VIEWER, Sha256Hex("viewer-secret"), t0_);
  EXPECT_TRUE(Cookie(idle, false, std::chrono::minutes(5)).allowed());
  EXPECT_TRUE(Cookie(idle, false, std::chrono::minutes(14)).allowed()) << "each request renews the idle lifetime";
  RequestAuth r = Cookie(idle, false, std::chrono::seconds(24 * 60 + 30));
  EXPECT_EQ(r.http_status, 401);
  EXPECT_NE(r.error.find("idle for longer than 10m (ladder-server --session-idle)"), std::string::npos) << r.error;
  EXPECT_EQ(Cookie(idle, false, std::chrono::minutes(24)).error, NeedsTokenMessage()) << "it is forgotten";

  const std::string old = sessions_.Create(v1::TOKEN_ROLE_VIEWER, Sha256Hex("viewer-secret"), t0_);
  for (int m : {8, 16, 24}) EXPECT_TRUE(Cookie(old, false, std::chrono::minutes(m)).allowed()) << m;
  r = Cookie(old, false, std::chrono::minutes(25));
  EXPECT_EQ(r.http_status, 401);
  EXPECT_NE(r.error.find("older than its lifetime of 25m"), std::string::npos) << r.error;
  EXPECT_EQ(sessions_.size(), 0u);
}

TEST(DashboardSessions, PastTheLimitALoginDropsTheSessionUsedLongestAgo) {
  SessionLimits limits;
  limits.max_sessions = 2;
  DashboardSessions sessions(limits);
  const auto t0 = DashboardSessions::Clock::time_point(std::chrono::hours(1));
  const std::string a = sessions.Create(v1::TOKEN_ROLE_VIEWER, "h", t0);
  const std::string b = sessions.Create(v1::TOKEN_ROLE_VIEWER, "h", t0 + std::chrono::seconds(1));
  ASSERT_NE(sessions.Use(a, t0 + std::chrono::seconds(2), nullptr), nullptr);  // b is now the least recently used
  const std::string c = sessions.Create(v1::TOKEN_ROLE_VIEWER, "h", t0 + std::chrono::seconds(3));
  EXPECT_EQ(sessions.size(), 2u);
  EXPECT_NE(sessions.Use(a, t0 + std::chrono::seconds(4), nullptr), nullptr);
  EXPECT_EQ(sessions.Use(b, t0 + std::chrono::seconds(4), nullptr), nullptr);
  EXPECT_NE(sessions.Use(c, t0 + std::chrono::seconds(4), nullptr), nullptr);
}

}  // namespace
}  // namespace ladder::server
