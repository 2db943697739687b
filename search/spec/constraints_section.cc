#include "search/spec/constraints_section.h"

#include <string>

namespace ladder::search::internal {

namespace {

constexpr size_t kMaxConstraints = 16;

std::optional<Constraint> ReadEntry(ErrorSink& sink, const YAML::Node& n, const std::string& field) {
  auto m = ReadMapping(sink, n, field, {"metric", "max", "min"});
  if (!m) return std::nullopt;
  Constraint c;
  bool ok = true;
  if (const MapEntry* e = Find(*m, "metric")) {
    auto s = ReadString(sink, e->value, field + ".metric");
    if (s && s->empty()) sink.At(e->value, field + ".metric", "must not be empty");
    if (!s || s->empty()) ok = false;
    if (s) c.metric = *s;
  } else {
    sink.At(n, field + ".metric", "missing required field 'metric'");
    ok = false;
  }
  const MapEntry* max = Find(*m, "max");
  const MapEntry* min = Find(*m, "min");
  if (max != nullptr && min != nullptr) {
    sink.At(min->key_node, field,
            "give max or min, not both (a range is two constraints on the same metric), got max: " +
                max->value.Scalar() + " and min: " + min->value.Scalar());
    return std::nullopt;
  }
  if (max == nullptr && min == nullptr) {
    sink.At(n, field, "needs a bound: max: X (the metric at most X) or min: X (at least X)");
    return std::nullopt;
  }
  const MapEntry* bound = max != nullptr ? max : min;
  c.max = max != nullptr;
  auto v = ReadNumber(sink, bound->value, field + (c.max ? ".max" : ".min"));  // names a non-finite bound
  if (!v) return std::nullopt;
  c.bound = *v;
  return ok ? std::optional<Constraint>(c) : std::nullopt;
}

}  // namespace

void ReadConstraintsSection(ErrorSink& sink, const YAML::Node& node, std::vector<Constraint>* out) {
  if (!node.IsSequence() || node.size() == 0) {
    sink.At(node, "constraints",
            "expected a list of {metric: NAME, max: X} or {metric: NAME, min: X}, got " +
                (node.IsSequence() ? std::string("an empty list (leave constraints out for none)") : Describe(node)));
    return;
  }
  if (node.size() > kMaxConstraints) {
    sink.At(node, "constraints",
            "at most " + std::to_string(kMaxConstraints) + " constraints, got " + std::to_string(node.size()));
    return;
  }
  std::vector<Constraint> read;
  bool ok = true;
  for (size_t i = 0; i < node.size(); ++i) {
    auto c = ReadEntry(sink, node[i], "constraints[" + std::to_string(i) + "]");
    if (c) {
      read.push_back(std::move(*c));
    } else {
      ok = false;
    }
  }
  if (ok) *out = std::move(read);
}

void CheckConstraintsSection(ErrorSink& sink, const YAML::Node& key, const SearchSpec& spec, bool scales) {
  if (spec.constraints.empty()) return;
  auto refuse = [&](const std::string& what) { sink.At(key, "constraints", what); };
  if (spec.scheduler.type == StoppingRuleType::kPbt) {
    refuse("pbt copies the best running trial whether or not it will be feasible: not with constraints");
  }
  if (spec.ensemble.enabled) refuse("the ensemble selection ranks trials by the objective alone: not with constraints");
  if (scales) refuse("scales: plans its sweep instead of sampling it: not with constraints");
  if (spec.warm_start.search_id != 0) {
    refuse("a warm start's earlier trials carry no constraint values: not with constraints");
  }
}

}  // namespace ladder::search::internal
