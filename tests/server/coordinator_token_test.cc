// A worker whose token ended (revoked, expired) loses its node without anyone's fault: its stream is closed with
// the token's refusal, the node is down and counts no failure (no quarantine), and its running trial goes back to
// the queue with its attempt — while a stream that merely drops still uses one up.
#include "tests/server/coordinator_fixture.h"

namespace ladder::server {
namespace {

constexpr const char* kNoRetries = R"(
name: once
objective: {metric: score, mode: max}
budget: {max_trials: 1, parallelism: 1, max_retries: 0}
command: [run]
space:
  x: {type: float, low: 0.0, high: 1.0}
)";

v1::WorkerInfo InfoOf(Coordinator& coord, const std::string& node) {
  v1::ServerInfoResponse info;
  coord.ServerInfo({}, &info);
  for (const auto& w : info.workers()) {
    if (w.node_id() == node) return w;
  }
  return {};
}

TEST_F(CoordinatorTest, AWorkerWhoseTokenEndedIsDownAndItsTrialWaitsWithItsAttempt) {
  CreateSearch(kNoRetries);
  auto a = Connect("a", 1);
  ASSERT_EQ(a->Starts().size(), 1u);
  const v1::StartTrial start = a->Starts()[0];
  const grpc::Status refusal(grpc::StatusCode::UNAUTHENTICATED, "the token was revoked (test)");
  coord_->OnWorkerTokenEnded(a, refusal);
  Drain();
  EXPECT_TRUE(a->closed);
  EXPECT_EQ(a->close_status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(a->close_status.error_message(), "the token was revoked (test)");
  const v1::WorkerInfo info = InfoOf(*coord_, "a");
  EXPECT_EQ(info.state(), v1::WORKER_DOWN);
  EXPECT_NE(info.state_reason().find("the token was revoked"), std::string::npos) << info.state_reason();
  EXPECT_EQ(info.recent_failures(), 0) << "a refused token is not the node's failure";
  const v1::Trial t = GetTrial(start.trial_id());
  EXPECT_EQ(t.state(), v1::TRIAL_PENDING) << t.error();
  EXPECT_EQ(t.attempt(), 0) << "max_retries is 0: a counted attempt would have failed it";
  // The stream's own end, reported after, changes nothing; another worker runs the trial in the same attempt.
  coord_->OnWorkerGone(a, "stream ended");
  Drain();
  auto b = Connect("b", 1);
  ASSERT_EQ(b->Starts().size(), 1u);
  EXPECT_EQ(b->Starts()[0].trial_id(), start.trial_id());
  EXPECT_EQ(GetTrial(start.trial_id()).attempt(), 0);
}

TEST_F(CoordinatorTest, AStreamThatDropsStillUsesUpAnAttempt) {
  CreateSearch(kNoRetries);
  auto a = Connect("a", 1);
  ASSERT_EQ(a->Starts().size(), 1u);
  coord_->OnWorkerGone(a, "connection reset");
  Drain();
  const v1::Trial t = GetTrial(a->Starts()[0].trial_id());
  EXPECT_EQ(t.state(), v1::TRIAL_FAILED) << "no retries left: the lost node costs the attempt";
  EXPECT_EQ(InfoOf(*coord_, "a").recent_failures(), 1);
}

TEST_F(CoordinatorTest, ATokenEndedBeforeRegistrationOnlyClosesTheStream) {
  auto link = std::make_shared<FakeLink>();
  coord_->OnWorkerTokenEnded(link, grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "the token expired at X"));
  Drain();
  EXPECT_TRUE(link->closed);
  EXPECT_EQ(InfoOf(*coord_, "a").node_id(), "") << "no node was made";
}

}  // namespace
}  // namespace ladder::server
