#pragma once
// Wall-clock time in Unix seconds: what the coordinator stores and shows (created_unix, events, metric points) and
// what the CLI and the benchmarks stamp. Deadlines (leases, the watchdog) use std::chrono::steady_clock instead.
#include <chrono>

namespace ladder {

inline double WallNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace ladder
