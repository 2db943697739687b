#include "search/core/point.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <set>

#include "search/core/yaml_reader.h"

namespace ladder::search {
namespace {

std::string Quote(const std::string& s) { return "'" + s + "'"; }

std::string Range(const ParamSpec& p) {
  return "[" + FormatValue(p.low) + ", " + FormatValue(p.high) + "]";  // shortest round-trip: 1e-04, 256
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// The value of `p` read from `text`, or why not.
std::optional<Value> ReadValue(const ParamSpec& p, const std::string& text, std::string* why) {
  if (p.kind == ParamKind::kCategorical) {
    if (std::find(p.choices.begin(), p.choices.end(), text) != p.choices.end()) return Value(text);
    *why = Quote(text) + " is not one of its values [" + Join(p.choices) + "]";
    return std::nullopt;
  }
  if (p.kind == ParamKind::kInt) {
    int64_t v = 0;
    const char* end = text.data() + text.size();
    const char* begin = text.data() + (!text.empty() && text[0] == '+' ? 1 : 0);
    auto [ptr, ec] = std::from_chars(begin, end, v);
    if (text.empty() || ec != std::errc() || ptr != end) {
      *why = Quote(text) + " is not an integer";
      return std::nullopt;
    }
    if (static_cast<double>(v) < p.low || static_cast<double>(v) > p.high) {
      *why = text + " is out of range " + Range(p);
      return std::nullopt;
    }
    return Value(v);
  }
  char* end = nullptr;
  double v = text.empty() ? 0 : std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v)) {
    *why = Quote(text) + " is not a number";
    return std::nullopt;
  }
  if (v < p.low || v > p.high) {
    *why = text + " is out of range " + Range(p);
    return std::nullopt;
  }
  return Value(v);
}

}  // namespace

PointResult ParsePoint(const SearchSpace& space, const std::vector<std::pair<std::string, std::string>>& values) {
  PointResult out;
  std::vector<std::string> names;
  for (const ParamSpec& p : space.params) names.push_back(p.name);
  std::map<std::string, std::string> given;
  for (const auto& value : values) {
    const std::string& name = value.first;  // not a structured binding: clang 14 (the fuzz build) cannot capture one
    const std::string& text = value.second;
    auto it = std::find_if(space.params.begin(), space.params.end(),
                           [&](const ParamSpec& p) { return p.name == name; });
    if (it == space.params.end()) {
      std::string msg = "unknown parameter " + Quote(name) + " (the space has " + Join(names) + ")";
      std::string hint = internal::ClosestMatch(name, names);
      if (!hint.empty()) msg = "unknown parameter " + Quote(name) + " (did you mean " + Quote(hint) + "?)";
      out.errors.push_back({name, msg});
      continue;
    }
    if (!given.emplace(name, text).second) {
      out.errors.push_back({name, "given twice"});
      continue;
    }
    std::string why;
    if (auto v = ReadValue(*it, text, &why)) {
      out.params[name] = *v;
    } else {
      out.errors.push_back({name, why});
    }
  }
  // Activity in spec order: a condition's parameter comes before the parameters it governs.
  Params seen;  // the valid values of the active parameters so far
  for (const ParamSpec& p : space.params) {
    const bool active = IsActive(p, seen);
    auto g = given.find(p.name);
    if (!active) {
      if (g != given.end() && (seen.count(p.condition_param) != 0)) {
        out.errors.push_back({p.name, g->second + " is given, but " + Quote(p.name) +
                                          " is inactive here: its condition is " + p.condition_param + " in [" +
                                          Join(p.condition_values) + "] and " + p.condition_param + " is " +
                                          FormatValue(seen.at(p.condition_param)) + " (leave it out)"});
      }
      continue;
    }
    if (g == given.end()) {
      std::string msg = "missing: " + Quote(p.name) + " is active";
      if (p.conditional()) msg += " (" + p.condition_param + " is " + FormatValue(seen.at(p.condition_param)) + ")";
      msg += " and needs a value";
      out.errors.push_back({p.name, msg});
      continue;
    }
    if (auto v = out.params.find(p.name); v != out.params.end()) seen[p.name] = v->second;
  }
  if (!out.errors.empty()) out.params.clear();
  return out;
}

std::string SpaceMismatch(const SearchSpace& earlier, const SearchSpace& now) {
  for (const ParamSpec& p : now.params) {
    auto it = std::find_if(earlier.params.begin(), earlier.params.end(),
                           [&](const ParamSpec& e) { return e.name == p.name; });
    if (it == earlier.params.end()) return "'" + p.name + "' is not a parameter of its space";
    if (it->kind != p.kind) {
      return "'" + p.name + "' is " + ParamKindName(it->kind) + " there and " + ParamKindName(p.kind) + " here";
    }
  }
  for (const ParamSpec& e : earlier.params) {
    auto it = std::find_if(now.params.begin(), now.params.end(), [&](const ParamSpec& p) { return p.name == e.name; });
    if (it == now.params.end()) return "its parameter '" + e.name + "' is not a parameter of this space";
  }
  return "";
}

std::optional<Params> Reread(const SearchSpace& space, const Params& params) {
  std::vector<std::pair<std::string, std::string>> values;
  for (const auto& [name, v] : params) values.emplace_back(name, FormatValue(v));
  PointResult r = ParsePoint(space, values);
  if (!r.ok()) return std::nullopt;
  return std::move(r.params);
}

std::string FormatPoint(const SearchSpace& space, const Params& params) {
  std::string out;
  for (const ParamSpec& p : space.params) {
    auto it = params.find(p.name);
    if (it == params.end()) continue;
    out += (out.empty() ? "" : ", ") + p.name + "=" + FormatValue(it->second);
  }
  return out;
}

}  // namespace ladder::search
