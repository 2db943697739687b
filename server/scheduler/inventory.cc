#include "server/scheduler/inventory.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <functional>
#include <map>
#include <optional>

#include "common/printable.h"

namespace ladder::scheduler {

std::string InventoryError::ToString() const {
  std::string out = file;
  if (line > 0) out += ":" + std::to_string(line);
  out += ": ";
  if (!field.empty()) out += field + ": ";
  return out + message;  // each part already Printable (ParseInventory)
}

namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::optional<int64_t> ParseWhole(std::string_view s) {
  int64_t v = 0;
  if (s.empty()) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

std::optional<int64_t> ParseBytes(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  auto num = ParseWhole(s.substr(0, i));
  if (!num) return std::nullopt;
  std::string unit = Lower(s.substr(i));
  static const std::map<std::string, int> kShift = {{"", 0},    {"b", 0},    {"k", 10},  {"kb", 10}, {"kib", 10},
                                                    {"m", 20},  {"mb", 20},  {"mib", 20}, {"g", 30}, {"gb", 30},
                                                    {"gib", 30}, {"t", 40},  {"tb", 40},  {"tib", 40}};
  auto it = kShift.find(unit);
  if (it == kShift.end()) return std::nullopt;
  if (*num > (INT64_MAX >> it->second)) return std::nullopt;
  return *num << it->second;
}

std::vector<std::string_view> Words(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    size_t j = i;
    while (j < line.size() && !std::isspace(static_cast<unsigned char>(line[j]))) ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

// The settings of one line (or of `defaults`), each optional so that defaults can fill what a line leaves out.
struct Settings {
  std::optional<int64_t> cores, slots, gpus, memory;
  std::optional<std::string> rack, sw;
  std::optional<NodeState> state;
  std::map<std::string, std::string> labels;
  void Over(const Settings& d) {  // fills unset fields from `d`
    if (!cores) cores = d.cores;
    if (!slots) slots = d.slots;
    if (!gpus) gpus = d.gpus;
    if (!memory) memory = d.memory;
    if (!rack) rack = d.rack;
    if (!sw) sw = d.sw;
    if (!state) state = d.state;
    for (const auto& [k, v] : d.labels) labels.emplace(k, v);
  }
};

constexpr int64_t kMaxCount = 1 << 20;

}  // namespace

namespace {

using ErrorFn = std::function<void(std::string field, std::string message)>;

// One `key=value` word of a line into `s`; a bad one is reported through `error`.
void ParseSetting(std::string_view word, Settings* s, const ErrorFn& error) {
  size_t eq = word.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    error("", "expected key=value, got '" + Printable(word, 80) + "'");
    return;
  }
  std::string key = Lower(word.substr(0, eq));
  std::string_view value = word.substr(eq + 1);
  auto whole = [&](std::optional<int64_t>* dst) {
    auto v = ParseWhole(value);
    if (!v || *v > kMaxCount) {
      error(key, "expected a whole number between 0 and " + std::to_string(kMaxCount) + ", got '" +
                     Printable(value, 40) + "'");
    } else {
      *dst = v;
    }
  };
  if (key == "cores") {
    whole(&s->cores);
  } else if (key == "slots") {
    whole(&s->slots);
    if (s->slots && *s->slots < 1) error(key, "must be >= 1, got '" + Printable(value, 40) + "'"), s->slots.reset();
  } else if (key == "gpus") {
    whole(&s->gpus);
  } else if (key == "memory") {
    auto v = ParseBytes(value);
    if (!v) {
      error(key, "expected bytes, or a number with K/M/G/T (e.g. 512G), got '" + Printable(value, 40) + "'");
    } else {
      s->memory = v;
    }
  } else if (key == "rack" || key == "switch") {
    if (value.empty()) error(key, "must not be empty");
    (key == "rack" ? s->rack : s->sw) = std::string(value);
  } else if (key == "state") {
    auto st = ParseNodeState(Lower(value));
    if (!st) {
      error(key, "expected up, draining, down or quarantined, got '" + Printable(value, 40) + "'");
    } else {
      s->state = st;
    }
  } else if (key.rfind("label.", 0) == 0 && key.size() > 6) {
    s->labels[std::string(word.substr(6, eq - 6))] = std::string(value);
  } else {
    error(Printable(word.substr(0, eq), 64),
          "unknown key; expected cores, slots, gpus, memory, rack, switch, state or label.NAME");
  }
}

// A node named `name` with the line's settings (the defaults already under them).
NodeSpec NodeFrom(std::string name, const Settings& s) {
  NodeSpec spec;
  spec.id = std::move(name);
  spec.resources.cores = static_cast<int>(s.cores.value_or(1));
  spec.resources.gpus = static_cast<int>(s.gpus.value_or(0));
  spec.resources.slots = static_cast<int>(
      s.slots.value_or(spec.resources.gpus > 0 ? spec.resources.gpus : std::max(1, spec.resources.cores)));
  spec.resources.memory_bytes = s.memory.value_or(0);
  spec.labels = s.labels;
  if (s.rack) spec.labels[kRackLabel] = *s.rack;
  if (s.sw) spec.labels[kSwitchLabel] = *s.sw;
  spec.state = s.state.value_or(NodeState::kUp);
  return spec;
}

}  // namespace

std::vector<InventoryError> ParseInventory(std::string_view text, std::string_view file,
                                           std::vector<NodeSpec>* nodes) {
  std::vector<InventoryError> errors;
  if (text.size() > kMaxInventoryBytes) {
    errors.push_back({Printable(file, 4096), 1, "",
                      "the inventory is " + std::to_string(text.size()) + " bytes; the limit is " +
                          std::to_string(kMaxInventoryBytes)});
    return errors;
  }
  std::vector<NodeSpec> out;
  std::map<std::string, int> first_line;  // node id -> line that named it
  Settings defaults;
  int line_no = 0;
  size_t more_errors = 0;  // past kMaxInventoryErrors: counted, not kept
  auto error = [&](std::string field, std::string message) {
    if (errors.size() >= kMaxInventoryErrors) {
      ++more_errors;
      return;
    }
    errors.push_back({Printable(file, 4096), line_no, Printable(field, 64), Printable(message, 1024)});
  };
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t eol = text.find('\n', pos);
    std::string_view line = text.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos);
    pos = eol == std::string_view::npos ? text.size() + 1 : eol + 1;
    ++line_no;
    if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    auto words = Words(line);
    if (words.empty()) continue;
    bool is_defaults = Lower(words[0]) == "defaults";
    if (!is_defaults && words[0].find('=') != std::string_view::npos) {
      error("name", "a line starts with a node name or hostlist (or 'defaults'), got '" + std::string(words[0]) + "'");
      continue;
    }
    Settings s;
    size_t errors_before = errors.size();
    for (size_t w = 1; w < words.size(); ++w) ParseSetting(words[w], &s, error);
    if (s.labels.size() > kMaxInventoryLabels) {  // every node of the line carries a copy
      error("label", std::to_string(s.labels.size()) + " labels; the limit is " + std::to_string(kMaxInventoryLabels));
      continue;
    }
    if (is_defaults) {
      s.Over(defaults);
      defaults = std::move(s);
      continue;
    }
    std::string hl_error;
    // The file's nodes in all are bounded, not only one line's: a billion names cost nothing to write.
    auto names = ExpandHostlist(words[0], &hl_error, kMaxInventoryNodes - out.size());
    if (names.empty() && hl_error.find("' names more than ") != std::string::npos) {
      hl_error = "'" + Printable(words[0], 80) + "' takes the inventory past " + std::to_string(kMaxInventoryNodes) +
                 " nodes; the limit is " + std::to_string(kMaxInventoryNodes);
    }
    if (names.empty()) {
      error("name", hl_error);
      continue;
    }
    if (errors.size() != errors_before) continue;
    s.Over(defaults);
    for (auto& name : names) {
      auto [it, fresh] = first_line.emplace(name, line_no);
      if (!fresh) {
        error("name", "node " + name + " is already defined on line " + std::to_string(it->second));
        continue;
      }
      out.push_back(NodeFrom(std::move(name), s));
    }
  }
  if (more_errors > 0) {
    errors.push_back({Printable(file, 4096), 0, "", "and " + std::to_string(more_errors) + " more errors"});
  }
  if (errors.empty()) *nodes = std::move(out);
  return errors;
}

}  // namespace ladder::scheduler
