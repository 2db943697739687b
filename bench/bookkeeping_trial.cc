// The trial of bench/bookkeeping: prints a metrics line every 0.1 s and ends 1 s after it started
// (deadline-based, so its own run time is 1 s however long the writes take). Ray Tune's bookkeeping release
// test uses the same shape of trial.
#include <chrono>
#include <cstdio>
#include <thread>

int main() {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 1; i <= 10; ++i) {
    std::this_thread::sleep_until(start + std::chrono::milliseconds(100 * i));
    std::printf("{\"step\": %d, \"score\": %g}\n", i, i * 0.1);
    std::fflush(stdout);
  }
  return 0;
}
