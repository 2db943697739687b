// ReconnectBackoff: jittered, exponential, reset only by a session that stayed up.
#include "worker/reconnect_backoff.h"

#include <gtest/gtest.h>

#include <set>

namespace ladder::worker {
namespace {

using std::chrono::milliseconds;
constexpr auto kNever = std::chrono::steady_clock::duration::zero();

TEST(ReconnectBackoff, GrowsExponentiallyWithinJitterBoundsUpToTheMax) {
  ReconnectBackoff b(milliseconds(100), milliseconds(2000), milliseconds(30000), 1);
  const int64_t caps[] = {100, 200, 400, 800, 1600, 2000, 2000, 2000};
  for (int64_t cap : caps) {
    const auto w = b.Next(kNever).count();
    EXPECT_GE(w, cap / 2) << "cap " << cap;
    EXPECT_LE(w, cap) << "cap " << cap;
  }
}

TEST(ReconnectBackoff, AShortSessionThatCarriedMessagesDoesNotResetIt) {
  ReconnectBackoff b(milliseconds(100), milliseconds(2000), milliseconds(30000), 2);
  for (int i = 0; i < 5; ++i) b.Next(kNever);
  // Connected, registered, dropped a second later (an overloaded coordinator): the wait keeps growing.
  EXPECT_GE(b.Next(std::chrono::seconds(1)).count(), 1000);
  // A session that stayed up 30 s: back to the initial range.
  EXPECT_LE(b.Next(std::chrono::seconds(30)).count(), 100);
}

TEST(ReconnectBackoff, AFleetThatLostTheCoordinatorTogetherSpreadsOut) {
  std::set<int64_t> first, third;
  for (uint64_t seed = 0; seed < 1000; ++seed) {
    ReconnectBackoff b(milliseconds(100), milliseconds(2000), milliseconds(30000), seed);
    first.insert(b.Next(std::chrono::minutes(5)).count());
    b.Next(kNever);
    third.insert(b.Next(kNever).count());
  }
  EXPECT_GE(first.size(), 40u) << "1,000 workers' first waits take most of the 51 values in [50, 100] ms";
  EXPECT_GE(third.size(), 150u) << "and their third waits most of the 201 in [200, 400] ms";
}

TEST(ReconnectBackoff, ARefusedRegistrationWaitsForItsSlotWithJitterAndAtLeastTheBackoff) {
  std::set<int64_t> waits;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    ReconnectBackoff b(milliseconds(100), milliseconds(2000), milliseconds(30000), seed);
    const auto w = b.RetryAfter(milliseconds(800), milliseconds(60)).count();
    EXPECT_GE(w, 800) << "never before the slot the coordinator named";
    EXPECT_LE(w, 1000) << "jitter of at most a quarter";
    waits.insert(w);
    EXPECT_EQ(b.RetryAfter(milliseconds(10), milliseconds(1500)).count(), 1500) << "the backoff when it is longer";
  }
  EXPECT_GE(waits.size(), 50u) << "workers told the same slot spread over it";
}

}  // namespace
}  // namespace ladder::worker
