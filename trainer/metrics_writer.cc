#include "trainer/metrics_writer.h"

#include <cmath>

namespace ladder::trainer {

std::string FormatMetricsLine(int64_t step, const std::vector<std::pair<std::string, double>>& values) {
  std::string out = "{\"step\": " + std::to_string(step);
  char buf[64];
  for (const auto& [k, v] : values) {
    if (std::isfinite(v)) {
      std::snprintf(buf, sizeof buf, "%.9g", v);
    } else {
      std::snprintf(buf, sizeof buf, "null");
    }
    out += ", \"" + k + "\": " + buf;
  }
  return out + "}";
}

void MetricsWriter::Write(int64_t step, const std::vector<std::pair<std::string, double>>& values) {
  std::string line = FormatMetricsLine(step, values) + "\n";
  std::fwrite(line.data(), 1, line.size(), out_);
  std::fflush(out_);
}

}  // namespace ladder::trainer
