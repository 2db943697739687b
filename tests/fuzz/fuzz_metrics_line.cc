// libFuzzer: the metrics-line parser (common/metrics_line.h), as the worker runs it on a trial's stdout.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "common/metrics_line.h"
#include "common/printable.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view line(reinterpret_cast<const char*>(data), size);
  auto r = ladder::ParseMetricsLine(line);
  if (r.metrics) {
    if (r.metrics->values.empty()) std::abort();
    for (const auto& [k, v] : r.metrics->values) {
      if (!std::isfinite(v)) std::abort();  // NaN and infinities are skipped, never stored
      if (k.size() > ladder::kMaxMetricNameBytes || ladder::Printable(k, 1024) != k) std::abort();
    }
    if (r.metrics->step && *r.metrics->step < 0) std::abort();
  }
  return 0;
}
