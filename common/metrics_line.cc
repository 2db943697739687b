#include "common/metrics_line.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace ladder {

MetricsLineResult ParseMetricsLine(std::string_view line) {
  MetricsLineResult out;
  while (!line.empty() && (line.back() == '\r' || line.back() == '\n' || line.back() == ' ')) line.remove_suffix(1);
  while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
  if (line.empty()) return out;
  if (line.size() > kMaxMetricsLineBytes) {
    out.error = "line longer than 64 KiB";
    return out;
  }
  if (line.front() != '{') {
    out.error = "not a JSON object";
    return out;
  }
  nlohmann::json j = nlohmann::json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    out.error = "malformed JSON";
    return out;
  }
  MetricsLine m;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const auto& v = it.value();
    if (it.key() == "step") {
      if (v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0)) {
        m.step = v.get<int64_t>();
      } else if (v.is_number_float() && v.get<double>() >= 0 && std::floor(v.get<double>()) == v.get<double>() &&
                 v.get<double>() < 9e18) {
        m.step = static_cast<int64_t>(v.get<double>());
      } else {
        out.error = "\"step\" must be a non-negative integer";
        return out;
      }
      continue;
    }
    if (!v.is_number()) continue;
    double d = v.get<double>();
    if (!std::isfinite(d)) continue;
    m.values[it.key()] = d;
  }
  if (m.values.empty()) {
    out.error = "no numeric values";
    return out;
  }
  out.metrics = std::move(m);
  return out;
}

}  // namespace ladder
