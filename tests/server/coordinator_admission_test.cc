// Admission control of registrations: past registrations_per_second a registering worker is told to come back later
// (RetryRegistration, each refused one a slot of its own) and its stream is closed; a worker that reports running
// trials is always admitted.
#include "tests/server/coordinator_fixture.h"

namespace ladder::server {
namespace {

// The retry slot the worker was told (-1: none).
int RetryAfterOf(const FakeLink& link) {
  for (const auto& m : link.sent) {
    if (m.has_retry_registration()) return m.retry_registration().retry_after_ms();
  }
  return -1;
}

bool Registered(const FakeLink& link) {
  for (const auto& m : link.sent) {
    if (m.has_registered()) return true;
  }
  return false;
}

TEST_F(CoordinatorTest, RegistrationsPastTheAdmissionBoundAreToldToRetryLaterEachAtItsOwnSlot) {
  Close();
  options_.registrations_per_second = 1;  // a bucket of one: the first is admitted, the next ones in the same second not
  Open();
  auto a = Connect("a", 1);
  EXPECT_TRUE(Registered(*a));
  EXPECT_FALSE(a->closed);

  auto b = Connect("b", 1);
  auto c = Connect("c", 1);
  for (const auto* l : {b.get(), c.get()}) {
    EXPECT_FALSE(Registered(*l));
    EXPECT_TRUE(l->closed);
    EXPECT_EQ(l->close_status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << l->close_status.error_message();
    EXPECT_NE(l->close_status.error_message().find("retry after"), std::string::npos)
        << l->close_status.error_message();
  }
  const int b_after = RetryAfterOf(*b), c_after = RetryAfterOf(*c);
  EXPECT_GT(b_after, 0);
  EXPECT_LE(b_after, 1000) << "the first refused gets the next slot: one period (1 s) ahead at most";
  EXPECT_GT(c_after, b_after) << "each refused registration gets a slot of its own, after the one before";
  EXPECT_LE(c_after, 2000);

  // A worker that reports a running trial is admitted whatever the bound: its trials wait on it.
  auto d = Connect("d", 1, {{42, 1}});
  EXPECT_TRUE(Registered(*d));
  EXPECT_FALSE(d->closed);
}

TEST_F(CoordinatorTest, WithoutAnAdmissionBoundEveryRegistrationIsAdmitted) {
  Close();
  options_.registrations_per_second = 0;
  Open();
  for (int i = 0; i < 50; ++i) {
    auto l = Connect("n" + std::to_string(i), 1);
    EXPECT_TRUE(Registered(*l)) << i;
    EXPECT_FALSE(l->closed) << i;
  }
}

}  // namespace
}  // namespace ladder::server
