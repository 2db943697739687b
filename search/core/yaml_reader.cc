#include "search/core/yaml_reader.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>

#include "common/printable.h"

namespace ladder::search::internal {
namespace {

std::string JoinList(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? (items.size() > 2 ? ", or " : " or ") : ", ";
    out += items[i];
  }
  return out;
}

// Spellings from other sweep formats (W&B, Katib) that mean a field of ours.
const std::map<std::string, std::string, std::less<>>& ForeignSpellings() {
  static const auto* m = new std::map<std::string, std::string, std::less<>>{
      {"min", "low"}, {"max", "high"}, {"choices", "values"}, {"list", "values"}, {"goal", "mode"},
      {"method", "sampler"}, {"parameters", "space"}, {"program", "command"}, {"metric", "objective"}};
  return *m;
}

}  // namespace

void ErrorSink::Add(const YAML::Mark& mark, std::string field, std::string message) {
  SpecError e;
  e.file = Printable(file_, 4096);
  if (mark.line >= 0) {
    e.line = mark.line + 1;
    e.column = mark.column + 1;
  }
  // Never raw bytes in a message, and never one that grows with the input (a 64 KiB scalar quoted back).
  e.field = Printable(field, 256);
  e.message = Printable(message, 1024);
  errors_.push_back(std::move(e));
}

void ErrorSink::At(const YAML::Node& node, std::string field, std::string message) {
  YAML::Mark mark = node.Mark();
  if (node.IsNull()) {
    auto [first, last] = null_keys_.equal_range(mark.pos);
    for (auto it = first; it != last; ++it) {
      if (it->second.first.is(node)) mark = it->second.second;
    }
  }
  Add(mark, std::move(field), std::move(message));
}

void ErrorSink::NoteKey(const YAML::Node& value, const YAML::Node& key) {
  if (value.IsNull()) null_keys_.emplace(value.Mark().pos, std::pair(value, key.Mark()));
}

std::vector<SpecError> ErrorSink::Take() {
  std::stable_sort(errors_.begin(), errors_.end(), [](const SpecError& a, const SpecError& b) {
    auto key = [](const SpecError& e) {
      return std::pair(e.line == 0 ? INT32_MAX : e.line, e.column);
    };
    return key(a) < key(b);
  });
  return std::move(errors_);
}

std::string JoinField(std::string_view parent, std::string_view key) {
  if (parent.empty()) return std::string(key);
  return std::string(parent) + "." + std::string(key);
}

std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar: return "'" + Printable(node.Scalar(), 80) + "'";
    case YAML::NodeType::Sequence: return "a sequence";
    case YAML::NodeType::Map: return "a mapping";
    default: return "nothing";
  }
}

std::optional<MapEntries> ReadMapping(ErrorSink& sink, const YAML::Node& node, const std::string& field,
                                      const std::vector<std::string>& allowed) {
  if (node.IsNull()) return MapEntries{};
  if (!node.IsMap()) {
    sink.At(node, field, "expected a mapping, got " + Describe(node));
    return std::nullopt;
  }
  MapEntries entries;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const YAML::Node key = it->first;
    const YAML::Node value = it->second;
    sink.NoteKey(value, key);
    if (!key.IsScalar()) {
      sink.At(key, field, "expected a field name, got " + Describe(key));
      continue;
    }
    const std::string& name = key.Scalar();
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      std::string msg = "unknown field '" + Printable(name, 64) + "'";
      std::string hint = ClosestMatch(name, allowed);
      if (auto f = ForeignSpellings().find(name);
          hint.empty() && f != ForeignSpellings().end() &&
          std::find(allowed.begin(), allowed.end(), f->second) != allowed.end()) {
        hint = f->second;
      }
      if (!hint.empty()) {
        msg += " (did you mean '" + hint + "'?)";
      } else {
        std::vector<std::string> quoted;
        for (const auto& a : allowed) quoted.push_back("'" + a + "'");
        msg += "; allowed: " + JoinList(quoted);
      }
      sink.At(key, JoinField(field, name), msg);
      continue;
    }
    if (Find(entries, name) != nullptr) {
      sink.At(key, JoinField(field, name), "duplicate field '" + name + "'");
      continue;
    }
    entries.push_back(MapEntry{name, key, value});
  }
  return entries;
}

const MapEntry* Find(const MapEntries& entries, std::string_view key) {
  for (const auto& e : entries) {
    if (e.key == key) return &e;
  }
  return nullptr;
}

std::optional<std::string> ReadString(ErrorSink& sink, const YAML::Node& node, const std::string& field) {
  if (!node.IsScalar()) {
    std::string msg = "expected a string, got " + Describe(node);
    if (node.IsMap() && node.size() == 1 && node.begin()->second.IsNull()) {
      msg += " (quote placeholders: \"{" + node.begin()->first.Scalar() + "}\")";
    }
    sink.At(node, field, msg);
    return std::nullopt;
  }
  return node.Scalar();
}

std::optional<int64_t> ReadInt(ErrorSink& sink, const YAML::Node& node, const std::string& field,
                               int64_t min, int64_t max) {
  int64_t v = 0;
  bool ok = false;
  if (node.IsScalar()) {
    std::string_view s = node.Scalar();
    if (!s.empty() && s[0] == '+') s.remove_prefix(1);
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    ok = !s.empty() && ec == std::errc() && ptr == s.data() + s.size();
    if (!ok && ec == std::errc::result_out_of_range) {
      sink.At(node, field, "must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " +
                               Describe(node));
      return std::nullopt;
    }
  }
  if (!ok) {
    sink.At(node, field, "expected an integer, got " + Describe(node));
    return std::nullopt;
  }
  if (v < min || v > max) {
    std::string range = max == INT64_MAX || max == INT32_MAX ? "must be >= " + std::to_string(min)
                                                             : "must be between " + std::to_string(min) +
                                                                   " and " + std::to_string(max);
    sink.At(node, field, range + ", got " + std::to_string(v));
    return std::nullopt;
  }
  return v;
}

std::optional<uint64_t> ReadUint64(ErrorSink& sink, const YAML::Node& node, const std::string& field) {
  uint64_t v = 0;
  if (node.IsScalar()) {
    std::string_view s = node.Scalar();
    if (!s.empty() && s[0] == '+') s.remove_prefix(1);
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (!s.empty() && ec == std::errc() && ptr == s.data() + s.size()) return v;
  }
  sink.At(node, field, "expected a non-negative integer, got " + Describe(node));
  return std::nullopt;
}

std::optional<double> ReadNumber(ErrorSink& sink, const YAML::Node& node, const std::string& field) {
  if (node.IsScalar()) {
    std::string_view s = node.Scalar();
    if (!s.empty() && s[0] == '+') s.remove_prefix(1);
    double v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (!s.empty() && ec == std::errc() && ptr == s.data() + s.size()) {
      if (!std::isfinite(v)) {
        sink.At(node, field, "must be a finite number, got " + Describe(node));
        return std::nullopt;
      }
      return v;
    }
    // YAML's spellings of NaN and the infinities, and a number too large for a double (1e999).
    std::string_view bare = !s.empty() && s[0] == '-' ? s.substr(1) : s;
    static const std::vector<std::string_view> kNonFinite = {".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF"};
    if (std::find(kNonFinite.begin(), kNonFinite.end(), bare) != kNonFinite.end() ||
        (ec == std::errc::result_out_of_range && ptr == s.data() + s.size())) {
      sink.At(node, field, "must be a finite number, got " + Describe(node));
      return std::nullopt;
    }
  }
  sink.At(node, field, "expected a number, got " + Describe(node));
  return std::nullopt;
}

std::optional<bool> ReadBool(ErrorSink& sink, const YAML::Node& node, const std::string& field) {
  if (node.IsScalar()) {
    const std::string& s = node.Scalar();
    if (s == "true" || s == "True" || s == "TRUE") return true;
    if (s == "false" || s == "False" || s == "FALSE") return false;
  }
  sink.At(node, field, "expected true or false, got " + Describe(node));
  return std::nullopt;
}

std::optional<std::string> ReadEnum(ErrorSink& sink, const YAML::Node& node, const std::string& field,
                                    const std::vector<std::string>& options,
                                    const std::vector<std::string>& extra) {
  if (node.IsScalar()) {
    const std::string& s = node.Scalar();
    if (std::find(options.begin(), options.end(), s) != options.end() ||
        std::find(extra.begin(), extra.end(), s) != extra.end()) {
      return s;
    }
  }
  std::vector<std::string> quoted;
  for (const auto& o : options) quoted.push_back("'" + o + "'");
  sink.At(node, field, "expected " + JoinList(quoted) + ", got " + Describe(node));
  return std::nullopt;
}

std::string FormatNumber(double v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

bool IsIdentifier(std::string_view s) {
  if (s.empty()) return false;
  auto alpha = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; };
  if (!alpha(s[0])) return false;
  return std::all_of(s.begin() + 1, s.end(),
                     [&](char c) { return alpha(c) || std::isdigit(static_cast<unsigned char>(c)); });
}

int EditDistance(std::string_view a, std::string_view b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<int>> d(n + 1, std::vector<int>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = static_cast<int>(i);
  for (size_t j = 0; j <= m; ++j) d[0][j] = static_cast<int>(j);
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

std::string ClosestMatch(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  int best_distance = 3;
  for (const auto& c : candidates) {
    // The distance is at least the difference in length: skip the quadratic table when that already says no.
    if (word.size() > c.size() + 2 || c.size() > word.size() + 2) continue;
    int dist = EditDistance(word, c);
    if (dist < best_distance) {
      best_distance = dist;
      best = c;
    }
  }
  return best;
}

}  // namespace ladder::search::internal
