#include "common/metrics_line.h"

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "common/printable.h"

namespace ladder {
namespace {

// What a bare NaN / Infinity / -Infinity token becomes before the JSON parser sees it: a string no real line
// holds (a string that starts with U+0001), read back as a non-finite value.
const std::string kNonFiniteMark = "\x01non-finite";
const std::string kNonFiniteJson = R"("\u0001non-finite")";  // the mark as a JSON string literal

// Copies `line` into `out` with every NaN, Infinity and -Infinity outside a string replaced by the quoted mark;
// false (and `out` untouched) when there is none. Linear: one pass, strings and their escapes skipped.
bool RewriteNonFiniteTokens(std::string_view line, std::string* out) {
  if (line.find("NaN") == std::string_view::npos && line.find("Infinity") == std::string_view::npos) return false;
  std::string s;
  s.reserve(line.size() + 32);
  bool in_string = false, found = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (in_string) {
      s += c;
      if (c == '\\' && i + 1 < line.size()) {
        s += line[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      s += c;
      continue;
    }
    size_t len = 0;
    for (std::string_view token : {"NaN", "Infinity", "-Infinity"}) {
      if (line.compare(i, token.size(), token) == 0) len = token.size();
    }
    if (len > 0) {
      s += kNonFiniteJson;
      i += len - 1;
      found = true;
      continue;
    }
    s += c;
  }
  if (found) *out = std::move(s);
  return found;
}

}  // namespace

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
  std::string rewritten;
  const bool had_non_finite = RewriteNonFiniteTokens(line, &rewritten);
  if (had_non_finite) line = rewritten;
  nlohmann::json j = nlohmann::json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    out.error = "malformed JSON";
    return out;
  }
  MetricsLine m;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const auto& v = it.value();
    // A name goes to SQLite, the dashboards and terminals: printable text ("\u001b[2J" is valid JSON), bounded.
    if (it.key().size() > kMaxMetricNameBytes || Printable(it.key(), kMaxMetricNameBytes) != it.key()) {
      out.error = "a field name must be printable text of at most " + std::to_string(kMaxMetricNameBytes) +
                  " bytes, got '" + Printable(it.key(), 64) + "'";
      return out;
    }
    if (it.key() == "step") {
      // An unsigned step above INT64_MAX (18446744073709551615) would wrap to a negative one: refused.
      if (v.is_number_unsigned() && v.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX)) {
        m.step = static_cast<int64_t>(v.get<uint64_t>());
      } else if (!v.is_number_unsigned() && v.is_number_integer() && v.get<int64_t>() >= 0) {
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
    if (had_non_finite && v.is_string() && v.get_ref<const std::string&>() == kNonFiniteMark) {
      m.non_finite.push_back(it.key());
      continue;
    }
    if (!v.is_number()) continue;
    double d = v.get<double>();
    if (!std::isfinite(d)) {
      m.non_finite.push_back(it.key());
      continue;
    }
    m.values[it.key()] = d;
  }
  if (m.values.empty() && !m.non_finite.empty()) {
    out.error = "no finite numeric values ('" + Printable(m.non_finite.front(), 64) + "' is NaN or infinite)";
    return out;
  }
  if (m.values.empty()) {
    out.error = "no numeric values";
    return out;
  }
  out.metrics = std::move(m);
  return out;
}

}  // namespace ladder
