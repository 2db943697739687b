#include "common/duration_text.h"

#include <ctime>

namespace ladder {

namespace {
constexpr int64_t kMaxSeconds = int64_t{100} * 365 * 86400;

int64_t UnitSeconds(char unit) {
  switch (unit) {
    case 's': return 1;
    case 'm': return 60;
    case 'h': return 3600;
    case 'd': return 86400;
    default: return 0;
  }
}
}  // namespace

std::string DurationTextError(std::string_view text) {
  const std::string quoted = "'" + std::string(text) + "'";
  if (text.size() < 2) return quoted + ": expected a number and a unit (s, m, h or d), e.g. 30d";
  const int64_t unit = UnitSeconds(text.back());
  if (unit == 0) return quoted + ": the unit must be s, m, h or d (e.g. 30d)";
  int64_t n = 0;
  for (char c : text.substr(0, text.size() - 1)) {
    if (c < '0' || c > '9') return quoted + ": expected a whole number before the unit (e.g. 30d)";
    n = n * 10 + (c - '0');
    if (n > kMaxSeconds) return quoted + ": longer than 100 years";
  }
  if (n == 0) return quoted + ": must be more than zero";
  if (n * unit > kMaxSeconds) return quoted + ": longer than 100 years";
  return "";
}

std::optional<int64_t> ParseDurationSeconds(std::string_view text) {
  if (!DurationTextError(text).empty()) return std::nullopt;
  return std::stoll(std::string(text.substr(0, text.size() - 1))) * UnitSeconds(text.back());
}

std::string FormatDurationSeconds(int64_t seconds) {
  for (char unit : {'d', 'h', 'm'}) {
    if (seconds > 0 && seconds % UnitSeconds(unit) == 0) return std::to_string(seconds / UnitSeconds(unit)) + unit;
  }
  return std::to_string(seconds) + "s";
}

std::string FormatUtc(double unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

}  // namespace ladder
