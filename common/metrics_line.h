#pragma once
// The metrics-line protocol (docs/METRICS.md): a trial reports metrics by printing one JSON object per line
// on stdout, e.g. {"step": 120, "epoch": 2, "val_loss": 0.19, "val_accuracy": 0.953}.
//
// ParseMetricsLine is pure and thread-agnostic. A line is a metrics line when it is a JSON object with at
// least one finite numeric value besides "step". Non-numeric fields (strings, booleans, nested values) and
// null/non-finite numbers are skipped (the bare tokens NaN, Infinity and -Infinity that Python's json module
// writes are read as non-finite numbers, not as malformed JSON). "step", when present, must be a non-negative integer; when absent
// the caller assigns the previous step + 1.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ladder {

struct MetricsLine {
  std::optional<int64_t> step;
  std::map<std::string, double> values;
  // Fields whose value was NaN or infinite (Python's json.dumps writes NaN, Infinity, -Infinity): skipped,
  // named here so that the worker can warn.
  std::vector<std::string> non_finite;
};

struct MetricsLineResult {
  std::optional<MetricsLine> metrics;  // set when the line is a metrics line
  std::string error;                   // why it is not (empty for a blank line)
};

MetricsLineResult ParseMetricsLine(std::string_view line);

// Longest line the worker keeps; longer lines are counted as ignored.
inline constexpr size_t kMaxMetricsLineBytes = 64 * 1024;
// Longest field name; a longer one, or one with a control or format character, makes the line ignored.
inline constexpr size_t kMaxMetricNameBytes = 256;

}  // namespace ladder
