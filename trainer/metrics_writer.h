#pragma once
// Writes the metrics-line protocol (docs/METRICS.md): one JSON object per line, flushed at once. Non-finite
// numbers are written as null (JSON has no NaN).
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace ladder::trainer {

class MetricsWriter {
 public:
  explicit MetricsWriter(std::FILE* out) : out_(out) {}
  void Write(int64_t step, const std::vector<std::pair<std::string, double>>& values);

 private:
  std::FILE* out_;
};

// One metrics line as text (without the newline).
std::string FormatMetricsLine(int64_t step, const std::vector<std::pair<std::string, double>>& values);

}  // namespace ladder::trainer
