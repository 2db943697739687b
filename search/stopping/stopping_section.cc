#include "search/stopping/stopping_section.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "search/core/command_template.h"
#include "search/stopping/stopping_rule.h"

namespace ladder::search::internal {
namespace {

const std::vector<std::string> kTypes = {"none", "asha", "hyperband", "median", "pbt"};

StoppingRuleType TypeOf(const std::string& s) {
  if (s == "asha") return StoppingRuleType::kAsha;
  if (s == "hyperband") return StoppingRuleType::kHyperband;
  if (s == "median") return StoppingRuleType::kMedian;
  if (s == "pbt") return StoppingRuleType::kPbt;
  return StoppingRuleType::kNone;
}

// The mark of field `key` of mapping `node` (the value's; its key's for an empty value), or the mapping's.
YAML::Node FieldNode(const YAML::Node& node, std::string_view key) {
  if (node.IsMap()) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (it->first.IsScalar() && it->first.Scalar() == key) return it->second.IsNull() ? it->first : it->second;
    }
  }
  return node;
}

}  // namespace

void ReadStoppingSection(ErrorSink& sink, const YAML::Node& n, StoppingOptions* o, bool* seed_given) {
  if (n.IsScalar()) {
    if (auto s = ReadEnum(sink, n, "scheduler", kTypes)) o->type = TypeOf(*s);
    if (o->type == StoppingRuleType::kAsha || o->type == StoppingRuleType::kHyperband) {
      sink.At(n, "scheduler", n.Scalar() + " needs max_resource: write a mapping, e.g. {type: " + n.Scalar() +
                                  ", max_resource: 27}");
    } else if (o->type == StoppingRuleType::kPbt) {
      sink.At(n, "scheduler", "pbt needs perturbation_interval: write a mapping, e.g. {type: pbt, "
                              "perturbation_interval: 4}");
    }
    return;
  }
  if (!n.IsMap() && !n.IsNull()) {
    sink.At(n, "scheduler", "expected a scheduler type (none, asha, hyperband, median, pbt) or a mapping, got " +
                                Describe(n));
    return;
  }
  auto m = ReadMapping(sink, n, "scheduler",
                       {"type", "resource", "min_resource", "max_resource", "reduction_factor", "brackets",
                        "grace_period", "min_trials", "perturbation_interval", "quantile", "resample_probability",
                        "seed"});
  if (!m) return;
  bool type_ok = true;
  if (const MapEntry* e = Find(*m, "type")) {
    if (auto s = ReadEnum(sink, e->value, "scheduler.type", kTypes)) {
      o->type = TypeOf(*s);
    } else {
      type_ok = false;
    }
  } else {
    sink.At(n, "scheduler.type", "missing required field 'type' (none, asha, hyperband, median or pbt)");
    type_ok = false;
  }
  if (!type_ok) return;  // which fields apply is unknown; the type's error is enough
  const std::string type = StoppingRuleName(o->type);
  auto applies = [&](const MapEntry* e, std::string_view key, std::vector<std::string> ok) {
    if (std::find(ok.begin(), ok.end(), type) != ok.end()) return true;
    std::string list;
    for (size_t i = 0; i < ok.size(); ++i) list += (i == 0 ? "" : i + 1 == ok.size() ? " and " : ", ") + ok[i];
    sink.At(e->key_node, JoinField("scheduler", key),
            "applies only to the " + list + " scheduler" + (ok.size() > 1 ? "s" : "") + ", not " + type);
    return false;
  };
  const std::vector<std::string> all = {"asha", "hyperband", "median", "pbt"};
  const std::vector<std::string> rungs = {"asha", "hyperband"};
  // A number with an open or closed lower bound and an optional upper bound (inclusive).
  auto number = [&](std::string_view key, std::vector<std::string> ok, double low, bool low_open,
                    std::optional<double> high, double* out) {
    const MapEntry* e = Find(*m, key);
    if (e == nullptr || !applies(e, key, std::move(ok))) return;
    const std::string field = JoinField("scheduler", key);
    auto v = ReadNumber(sink, e->value, field);
    if (!v) return;
    const bool above = low_open ? *v > low : *v >= low;
    if (!above || (high && *v > *high)) {
      std::string want = high ? std::string("must be in ") + (low_open ? "(" : "[") + FormatNumber(low) + ", " +
                                    FormatNumber(*high) + "]"
                              : std::string("must be ") + (low_open ? "> " : ">= ") + FormatNumber(low);
      sink.At(e->value, field, want + ", got " + FormatNumber(*v));
      return;
    }
    *out = *v;
  };
  if (const MapEntry* e = Find(*m, "resource"); e != nullptr && applies(e, "resource", all)) {
    if (auto s = ReadString(sink, e->value, "scheduler.resource")) {
      if (s->empty()) {
        sink.At(e->value, "scheduler.resource", "must not be empty (a metric name such as epoch or step)");
      } else {
        o->resource = *s;
      }
    }
  }
  number("min_resource", rungs, 0, true, std::nullopt, &o->min_resource);
  number("max_resource", rungs, 0, true, std::nullopt, &o->max_resource);
  number("reduction_factor", rungs, 1, true, std::nullopt, &o->reduction_factor);
  if (const MapEntry* e = Find(*m, "brackets"); e != nullptr && applies(e, "brackets", {"hyperband"})) {
    if (auto v = ReadInt(sink, e->value, "scheduler.brackets", 1, 64)) o->brackets = static_cast<int>(*v);
  }
  number("grace_period", {"median"}, 0, false, std::nullopt, &o->grace_period);
  if (const MapEntry* e = Find(*m, "min_trials"); e != nullptr && applies(e, "min_trials", {"median"})) {
    if (auto v = ReadInt(sink, e->value, "scheduler.min_trials", 1, 1000000)) o->min_trials = static_cast<int>(*v);
  }
  number("perturbation_interval", {"pbt"}, 0, true, std::nullopt, &o->perturbation_interval);
  number("quantile", {"pbt"}, 0, true, 0.5, &o->quantile);
  number("resample_probability", {"pbt"}, 0, false, 1.0, &o->resample_probability);
  if (const MapEntry* e = Find(*m, "seed"); e != nullptr && applies(e, "seed", {"pbt"})) {
    if (auto v = ReadUint64(sink, e->value, "scheduler.seed")) {
      o->seed = *v;
      *seed_given = true;
    }
  }
  if (Find(*m, "max_resource") == nullptr &&
      (o->type == StoppingRuleType::kAsha || o->type == StoppingRuleType::kHyperband)) {
    sink.At(n, "scheduler.max_resource",
            "missing required field 'max_resource' (the resource a trial runs to, e.g. its epochs)");
  }
  if (Find(*m, "perturbation_interval") == nullptr && o->type == StoppingRuleType::kPbt) {
    sink.At(n, "scheduler.perturbation_interval",
            "missing required field 'perturbation_interval' (resource between exploit/explore steps)");
  }
}

namespace {

// `resource: nodes`: the rungs are node counts (stopping_rule.h, NodeLevels).
void CheckNodeLevels(ErrorSink& sink, const YAML::Node& n, const SearchSpec& spec) {
  const StoppingOptions& o = spec.scheduler;
  if (o.type != StoppingRuleType::kAsha && o.type != StoppingRuleType::kHyperband) {
    sink.At(FieldNode(n, "resource"), "scheduler.resource",
            "nodes (node count as the fidelity) needs type asha or hyperband, got " +
                std::string(StoppingRuleName(o.type)));
    return;
  }
  if (o.max_resource <= 0 || !(o.min_resource < o.max_resource)) return;  // reported above
  auto whole = [](double v) { return v >= 1 && std::fabs(v - std::round(v)) < 1e-9 && v <= 1e6; };
  if (!whole(o.min_resource) || !whole(o.max_resource)) {
    sink.At(FieldNode(n, whole(o.min_resource) ? "max_resource" : "min_resource"), "scheduler.resource",
            "with resource nodes, min_resource and max_resource are node counts (whole numbers >= 1), got " +
                FormatNumber(o.min_resource) + " and " + FormatNumber(o.max_resource));
    return;
  }
  for (int bracket = 0; bracket < MaxBrackets(o); ++bracket) {
    for (double r : AshaRungs(o, bracket)) {
      if (!whole(r)) {
        sink.At(FieldNode(n, "reduction_factor"), "scheduler.reduction_factor",
                "with resource nodes every rung is a node count, but min_resource " + FormatNumber(o.min_resource) +
                    " x reduction_factor^k gives " + FormatNumber(r) + ": use a whole reduction_factor");
        return;
      }
    }
  }
  if (spec.group.nodes != 1 && spec.group.nodes != static_cast<int>(std::llround(o.max_resource))) {
    sink.At(FieldNode(n, "resource"), "resources.nodes",
            "with scheduler.resource nodes a trial's node count is its rung's (" + FormatNumber(o.min_resource) +
                " up to max_resource " + FormatNumber(o.max_resource) + "): leave resources.nodes out, got " +
                std::to_string(spec.group.nodes));
  }
}

}  // namespace

void CheckStoppingSection(ErrorSink& sink, const YAML::Node& n, const SearchSpec& spec) {
  const StoppingOptions& o = spec.scheduler;
  if (o.type == StoppingRuleType::kNone) return;
  if (!spec.objective.metric.empty() && o.resource == spec.objective.metric) {
    sink.At(FieldNode(n, "resource"), "scheduler.resource",
            "must differ from objective.metric ('" + o.resource + "'): the resource is what grows along a trial");
  }
  if (o.type == StoppingRuleType::kAsha || o.type == StoppingRuleType::kHyperband) {
    if (o.max_resource > 0 && !(o.min_resource < o.max_resource)) {
      sink.At(FieldNode(n, "min_resource"), "scheduler.min_resource",
              "must be < max_resource (" + FormatNumber(o.max_resource) + "), got " + FormatNumber(o.min_resource));
    } else if (o.type == StoppingRuleType::kHyperband && o.max_resource > 0 && o.brackets > MaxBrackets(o)) {
      sink.At(FieldNode(n, "brackets"), "scheduler.brackets",
              "at most " + std::to_string(MaxBrackets(o)) + " for min_resource " + FormatNumber(o.min_resource) +
                  ", max_resource " + FormatNumber(o.max_resource) + " and reduction_factor " +
                  FormatNumber(o.reduction_factor) + " (floor(log_eta(R / r)) + 1), got " +
                  std::to_string(o.brackets));
    }
  }
  if (o.resource == kNodesResource) CheckNodeLevels(sink, n, spec);
  if (o.type == StoppingRuleType::kPbt && spec.parallelism < 2) {
    sink.At(FieldNode(n, "type"), "scheduler.type",
            "pbt needs a population of trials running at once: set budget.parallelism >= 2 (got " +
                std::to_string(spec.parallelism) + ")");
  }
}

}  // namespace ladder::search::internal
