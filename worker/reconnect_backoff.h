#pragma once
// ReconnectBackoff: how long a worker waits before it connects to the coordinator again.
//
// Exponential with jitter: the k-th wait in a row is drawn uniformly from [cap/2, cap], cap = min(max, initial x 2^k),
// so a fleet that lost the coordinator together comes back spread out rather than in one wave, and each failed try
// waits longer. The count starts again only after a session that stayed up `stable_after` (a stream that carried a
// message and then ended at once does not reset it: a coordinator that accepts and drops connections under load
// is not hammered at `initial`).
// Not thread-safe: one owner (ladder-worker's session thread; bench/fleet's loop).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>

namespace ladder::worker {

inline constexpr std::chrono::milliseconds kDefaultReconnectInitial{100};
inline constexpr std::chrono::milliseconds kDefaultReconnectStableAfter{30000};

class ReconnectBackoff {
 public:
  ReconnectBackoff(std::chrono::milliseconds initial, std::chrono::milliseconds max,
                   std::chrono::milliseconds stable_after, uint64_t seed)
      : initial_(std::max<std::chrono::milliseconds>(initial, std::chrono::milliseconds(1))),
        max_(std::max(max, initial_)),
        stable_after_(stable_after),
        rng_(seed) {}

  // A session ended after `lasted` (zero: the connection never came up). Returns how long to wait before the next.
  std::chrono::milliseconds Next(std::chrono::steady_clock::duration lasted) {
    if (lasted >= stable_after_) tries_ = 0;
    const int64_t cap = Cap();
    if (tries_ < 62) ++tries_;
    std::uniform_int_distribution<int64_t> d(cap / 2, cap);
    return std::chrono::milliseconds(d(rng_));
  }
  int tries() const { return tries_; }
  // The coordinator refused a registration and named when to come back (v1::RetryRegistration): that, plus a jitter
  // of up to a quarter, so that the workers given nearby slots do not arrive in step. At least `backoff`.
  std::chrono::milliseconds RetryAfter(std::chrono::milliseconds told, std::chrono::milliseconds backoff) {
    const int64_t t = std::max<int64_t>(0, told.count());
    std::uniform_int_distribution<int64_t> d(t, t + t / 4);
    return std::max(backoff, std::chrono::milliseconds(d(rng_)));
  }

 private:
  int64_t Cap() const {
    int64_t cap = initial_.count();
    for (int i = 0; i < tries_ && cap < max_.count(); ++i) cap *= 2;
    return std::min<int64_t>(cap, max_.count());
  }

  std::chrono::milliseconds initial_, max_, stable_after_;
  std::mt19937_64 rng_;
  int tries_ = 0;
};

}  // namespace ladder::worker
