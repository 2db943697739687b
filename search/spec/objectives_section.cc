#include "search/spec/objectives_section.h"

#include <string>

namespace ladder::search::internal {

namespace {

constexpr size_t kMaxObjectives = 16;  // more than a Pareto front of trials can say anything about

std::optional<Objective> ReadEntry(ErrorSink& sink, const YAML::Node& n, const std::string& field) {
  auto m = ReadMapping(sink, n, field, {"metric", "mode"});
  if (!m) return std::nullopt;
  Objective o;
  bool ok = true;
  if (const MapEntry* e = Find(*m, "metric")) {
    auto s = ReadString(sink, e->value, field + ".metric");
    if (s && s->empty()) sink.At(e->value, field + ".metric", "must not be empty");
    if (!s || s->empty()) ok = false;
    if (s) o.metric = *s;
  } else {
    sink.At(n, field + ".metric", "missing required field 'metric'");
    ok = false;
  }
  if (const MapEntry* e = Find(*m, "mode")) {
    auto s = ReadEnum(sink, e->value, field + ".mode", {"max", "min"}, {"maximize", "minimize"});
    if (!s) ok = false;
    o.maximize = s && (*s == "max" || *s == "maximize");
  } else {
    sink.At(n, field + ".mode", "missing required field 'mode' (max or min)");
    ok = false;
  }
  return ok ? std::optional<Objective>(o) : std::nullopt;
}

}  // namespace

void ReadObjectivesSection(ErrorSink& sink, const YAML::Node& node, std::vector<Objective>* out) {
  if (!node.IsSequence()) {
    sink.At(node, "objectives",
            "expected a list of {metric: NAME, mode: min | max}, got " + Describe(node));
    return;
  }
  if (node.size() < 2) {
    sink.At(node, "objectives",
            "needs at least 2 objectives, got " + std::to_string(node.size()) + " (one objective is `objective:`)");
    return;
  }
  if (node.size() > kMaxObjectives) {
    sink.At(node, "objectives",
            "at most " + std::to_string(kMaxObjectives) + " objectives, got " + std::to_string(node.size()));
    return;
  }
  std::vector<Objective> read;
  std::vector<size_t> index;  // each read entry's place in the list
  bool ok = true;
  for (size_t i = 0; i < node.size(); ++i) {
    const YAML::Node entry = node[i];
    const std::string field = "objectives[" + std::to_string(i) + "]";
    auto o = ReadEntry(sink, entry, field);
    if (!o) {
      ok = false;
      continue;
    }
    for (size_t j = 0; j < read.size(); ++j) {
      if (read[j].metric == o->metric) {
        sink.At(entry, field + ".metric",
                "'" + o->metric + "' is already objectives[" + std::to_string(index[j]) + "]: each metric once");
        ok = false;
      }
    }
    read.push_back(std::move(*o));
    index.push_back(i);
  }
  if (ok) *out = std::move(read);
}

}  // namespace ladder::search::internal
