// Slurm-style hostlists (common/hostlist.h).
#include "common/hostlist.h"

#include <charconv>
#include <cstdint>
#include <optional>

#include "common/printable.h"

namespace ladder {

namespace {

// A whole number >= 0, all of `s`.
std::optional<int64_t> ParseWhole(std::string_view s) {
  int64_t v = 0;
  if (s.empty()) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

}  // namespace

std::vector<std::string> ExpandHostlist(std::string_view list, std::string* error, size_t limit) {
  std::vector<std::string> out;
  size_t open = list.find('['), close = list.find(']');
  if (open == std::string_view::npos && close == std::string_view::npos) {
    out.emplace_back(list);
    return out;
  }
  if (open == std::string_view::npos || close == std::string_view::npos || close < open ||
      list.find_first_of("[]", close + 1) != std::string_view::npos ||
      list.find('[', open + 1) < close) {
    *error = "'" + Printable(list, 80) + "' is not a hostlist: one [list] of numbers and ranges expected";
    return {};
  }
  std::string_view prefix = list.substr(0, open), suffix = list.substr(close + 1);
  std::string_view body = list.substr(open + 1, close - open - 1);
  size_t start = 0;
  while (start <= body.size()) {
    size_t comma = body.find(',', start);
    std::string_view part = body.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    size_t dash = part.find('-');
    std::string_view lo_s = part.substr(0, dash);
    std::string_view hi_s = dash == std::string_view::npos ? lo_s : part.substr(dash + 1);
    auto lo = ParseWhole(lo_s), hi = ParseWhole(hi_s);
    if (!lo || !hi || lo_s.empty() || *hi < *lo) {
      *error = "'" + Printable(list, 80) + "': '" + Printable(part, 40) + "' is not a number or a range lo-hi with lo <= hi";
      return {};
    }
    if (static_cast<size_t>(*hi - *lo) + out.size() >= limit) {
      *error = "'" + Printable(list, 80) + "' names more than " + std::to_string(limit) + " nodes";
      return {};
    }
    for (int64_t v = *lo; v <= *hi; ++v) {
      std::string num = std::to_string(v);
      if (num.size() < lo_s.size()) num.insert(0, lo_s.size() - num.size(), '0');  // keep the zero padding
      out.push_back(std::string(prefix) + num + std::string(suffix));
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace ladder
