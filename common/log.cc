#include "common/log.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <string>

namespace ladder {
namespace {
std::atomic<int> g_min_level{static_cast<int>(LogLevel::kInfo)};
}

void SetLogLevelFromEnv() {
  const char* v = std::getenv("LADDER_LOG");
  if (!v) return;
  std::string s(v);
  if (s == "debug") g_min_level = 0;
  if (s == "info") g_min_level = 1;
  if (s == "warning") g_min_level = 2;
  if (s == "error") g_min_level = 3;
}

void SetDefaultLogLevel(LogLevel level) {
  if (std::getenv("LADDER_LOG") == nullptr) g_min_level = static_cast<int>(level);
}

void Log(LogLevel level, std::string_view component, std::string_view message) {
  if (static_cast<int>(level) < g_min_level.load()) return;
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  int ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char ts[32];
  std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
  static constexpr char kLetters[] = {'D', 'I', 'W', 'E'};
  std::string line = std::string(ts) + "." + (ms < 10 ? "00" : ms < 100 ? "0" : "") + std::to_string(ms) + "Z " +
                     kLetters[static_cast<int>(level)] + " " + std::string(component) + ": " +
                     std::string(message) + "\n";
  (void)!::write(2, line.data(), line.size());
}
}  // namespace ladder
