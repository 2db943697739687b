#include "search/core/space.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace ladder::search {

std::string FormatValue(const Value& v) {
  if (const auto* d = std::get_if<double>(&v)) {
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, *d);  // shortest form that round-trips
    return std::string(buf, res.ptr);
  }
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  return std::get<std::string>(v);
}

const char* ParamKindName(ParamKind kind) {
  switch (kind) {
    case ParamKind::kFloat: return "float";
    case ParamKind::kInt: return "int";
    case ParamKind::kCategorical: return "categorical";
  }
  return "?";
}

std::vector<Value> GridValues(const ParamSpec& p) {
  std::vector<Value> out;
  if (p.kind == ParamKind::kCategorical) {
    for (const auto& c : p.choices) out.emplace_back(c);
    return out;
  }
  const int k = p.grid_points;
  if (k < 2) return out;
  const bool log = p.log && p.low > 0;
  const double a = log ? std::log(p.low) : p.low, b = log ? std::log(p.high) : p.high;
  for (int i = 0; i < k; ++i) {
    double v;
    if (i == 0) {
      v = p.low;
    } else if (i == k - 1) {
      v = p.high;
    } else {
      double t = a + (b - a) * i / (k - 1);
      v = std::clamp(log ? std::exp(t) : t, p.low, p.high);
    }
    if (p.kind == ParamKind::kFloat) {
      out.emplace_back(v);
    } else {
      auto n = static_cast<int64_t>(std::llround(v));
      if (out.empty() || std::get<int64_t>(out.back()) != n) out.emplace_back(n);
    }
  }
  return out;
}

bool IsActive(const ParamSpec& p, const Params& params) {
  if (!p.conditional()) return true;
  auto it = params.find(p.condition_param);
  if (it == params.end()) return false;
  const std::string v = FormatValue(it->second);
  return std::find(p.condition_values.begin(), p.condition_values.end(), v) != p.condition_values.end();
}

Params DropInactive(const SearchSpace& space, Params params) {
  for (const ParamSpec& p : space.params) {
    if (!IsActive(p, params)) params.erase(p.name);
  }
  return params;
}

}  // namespace ladder::search
