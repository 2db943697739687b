#include "search/core/space_section.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "search/core/spec.h"

namespace ladder::search::internal {
namespace {

constexpr int64_t kMaxExactInt = int64_t{1} << 53;  // int parameters stay exact as doubles
constexpr size_t kMaxParamNameLength = 128;
constexpr int kMaxGridPoints = 1000000;

bool HasKey(const YAML::Node& map, std::string_view key) {
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (it->first.IsScalar() && it->first.Scalar() == key) return true;
  }
  return false;
}

// Reads one `space:` mapping into *out; the parameters are read in order, so a condition names one above it.
class SpaceSectionReader {
 public:
  SpaceSectionReader(ErrorSink& sink, SpaceSection* out) : sink_(sink), out_(out) {}

  void Read(const YAML::Node& n) {
    if (!n.IsMap()) {
      sink_.At(n, "space", "expected a mapping of parameter name to parameter, got " + Describe(n));
      out_->ok = false;
      return;
    }
    if (n.size() == 0) {
      sink_.At(n, "space", "must have at least one parameter");
      out_->ok = false;
      return;
    }
    for (auto it = n.begin(); it != n.end(); ++it) {
      const YAML::Node key = it->first;
      const YAML::Node value = it->second;
      sink_.NoteKey(value, key);
      if (!key.IsScalar()) {
        sink_.At(key, "space", "expected a parameter name, got " + Describe(key));
        out_->ok = false;
        continue;
      }
      const std::string& name = key.Scalar();
      std::string field = "space." + name;
      if (!IsIdentifier(name) || name.size() > kMaxParamNameLength) {
        sink_.At(key, field,
                 "a parameter name is [A-Za-z_][A-Za-z0-9_]*, at most " + std::to_string(kMaxParamNameLength) +
                     " characters, got '" + name + "'");
        out_->ok = false;
        continue;
      }
      const auto& builtins = BuiltinPlaceholders();
      if (std::find(builtins.begin(), builtins.end(), name) != builtins.end()) {
        sink_.At(key, field, "'" + name + "' is a built-in placeholder; pick another parameter name");
        out_->ok = false;
        continue;
      }
      if (!param_set_.insert(name).second) {
        sink_.At(key, field, "duplicate parameter '" + name + "'");
        out_->ok = false;
        continue;
      }
      out_->names.push_back(name);
      if (auto p = ReadParam(name, value, field)) {
        param_index_.emplace(name, out_->space.params.size());
        out_->space.params.push_back(std::move(*p));
        out_->marks.push_back(value.Mark());
      } else {
        out_->ok = false;
      }
    }
  }

  std::optional<ParamSpec> ReadParam(const std::string& name, const YAML::Node& n, const std::string& field) {
    if (!n.IsMap()) {
      sink_.At(n, field, "expected a mapping like {type: float, low: 0.001, high: 0.1}, got " + Describe(n));
      return std::nullopt;
    }
    ParamSpec p;
    p.name = name;
    // The type decides which fields are allowed; find it first.
    std::optional<ParamKind> kind;
    YAML::Node type_node;
    bool has_type = false;
    for (auto it = n.begin(); it != n.end(); ++it) {
      if (it->first.IsScalar() && it->first.Scalar() == "type") {
        has_type = true;
        auto s = ReadEnum(sink_, it->second, field + ".type", {"float", "int", "categorical"});
        if (s) kind = *s == "float" ? ParamKind::kFloat : *s == "int" ? ParamKind::kInt : ParamKind::kCategorical;
        break;
      }
    }
    if (!has_type) sink_.At(n, field + ".type", "missing required field 'type' (float, int or categorical)");
    std::vector<std::string> allowed;
    if (!kind) {
      allowed = {"type", "low", "high", "log", "grid_points", "values", "condition"};
    } else if (*kind == ParamKind::kCategorical) {
      allowed = {"type", "values", "condition"};
    } else {
      allowed = {"type", "low", "high", "log", "grid_points", "condition"};
    }
    auto m = ReadMapping(sink_, n, field, allowed);
    if (!m || !kind) return std::nullopt;
    p.kind = *kind;
    bool ok = true;
    if (p.kind == ParamKind::kCategorical) {
      ok = ReadValues(*m, n, field, &p);
    } else {
      ok = ReadRange(*m, n, field, &p);
    }
    if (const MapEntry* e = Find(*m, "condition")) ok = ReadCondition(e->value, field + ".condition", &p) && ok;
    if (!ok) return std::nullopt;
    return p;
  }

  // `condition: {param: NAME, in: [v1, v2]}`: NAME must be a categorical parameter defined above this one.
  bool ReadCondition(const YAML::Node& n, const std::string& field, ParamSpec* p) {
    auto m = ReadMapping(sink_, n, field, {"param", "in"});
    if (!m) return false;
    const MapEntry* param = Find(*m, "param");
    const MapEntry* in = Find(*m, "in");
    if (param == nullptr) sink_.At(n, field + ".param", "missing required field 'param' (a categorical parameter)");
    if (in == nullptr) sink_.At(n, field + ".in", "missing required field 'in' (a list of that parameter's values)");
    if (param == nullptr || in == nullptr) return false;
    auto name = ReadString(sink_, param->value, field + ".param");
    if (!name) return false;
    const ParamSpec* parent = nullptr;
    if (auto it = param_index_.find(*name); it != param_index_.end()) parent = &out_->space.params[it->second];
    if (parent == nullptr) {
      std::string msg = "'" + *name + "' is not a parameter defined above '" + p->name + "'";
      std::string hint = ClosestMatch(*name, out_->names);
      if (!hint.empty() && hint != p->name) msg += " (did you mean '" + hint + "'?)";
      sink_.At(param->value, field + ".param", msg);
      return false;
    }
    if (parent->kind != ParamKind::kCategorical) {
      sink_.At(
          param->value, field + ".param",
          "'" + *name + "' is a " + ParamKindName(parent->kind) + " parameter; a condition needs a categorical one");
      return false;
    }
    const YAML::Node& values = in->value;
    if (!values.IsSequence() || values.size() == 0) {
      sink_.At(values, field + ".in",
               "expected a non-empty list of values of '" + *name + "', got " + Describe(values));
      return false;
    }
    bool ok = true;
    auto [choices, fresh] = choice_sets_.try_emplace(*name);
    if (fresh) choices->second.insert(parent->choices.begin(), parent->choices.end());
    for (size_t i = 0; i < values.size(); ++i) {
      const YAML::Node v = values[i];
      std::string ifield = field + ".in[" + std::to_string(i) + "]";
      if (!v.IsScalar()) {
        sink_.At(v, ifield, "expected a scalar value, got " + Describe(v));
        ok = false;
      } else if (choices->second.count(v.Scalar()) == 0) {
        sink_.At(v, ifield, "'" + v.Scalar() + "' is not a value of '" + *name + "'");
        ok = false;
      } else {
        p->condition_values.push_back(v.Scalar());
      }
    }
    p->condition_param = *name;
    return ok;
  }

  bool ReadValues(const MapEntries& m, const YAML::Node& n, const std::string& field, ParamSpec* p) {
    const MapEntry* e = Find(m, "values");
    if (e == nullptr) {
      sink_.At(n, field + ".values", "missing required field 'values' (a list of choices)");
      return false;
    }
    const YAML::Node& values = e->value;
    const std::string vfield = field + ".values";
    if (!values.IsSequence()) {
      sink_.At(values, vfield, "expected a sequence of values, got " + Describe(values));
      return false;
    }
    if (values.size() == 0) {
      sink_.At(values, vfield, "must have at least one value");
      return false;
    }
    bool ok = true;
    std::unordered_set<std::string> seen;  // linear: a 10,000-value categorical is checked in milliseconds
    for (size_t i = 0; i < values.size(); ++i) {
      const YAML::Node v = values[i];
      std::string ifield = vfield + "[" + std::to_string(i) + "]";
      if (!v.IsScalar()) {
        sink_.At(v, ifield, "expected a scalar value, got " + Describe(v));
        ok = false;
        continue;
      }
      if (!seen.insert(v.Scalar()).second) {
        sink_.At(v, ifield, "duplicate value '" + v.Scalar() + "'");
        ok = false;
        continue;
      }
      p->choices.push_back(v.Scalar());
    }
    return ok;
  }

  bool ReadRange(const MapEntries& m, const YAML::Node& n, const std::string& field, ParamSpec* p) {
    const bool is_int = p->kind == ParamKind::kInt;
    bool ok = true;
    auto bound = [&](std::string_view key, double* out) -> const MapEntry* {
      const MapEntry* e = Find(m, key);
      std::string f = JoinField(field, key);
      if (e == nullptr) {
        // `min:`/`max:` (W&B spelling) was already reported as an unknown field that means this one.
        if (!HasKey(n, key == "low" ? "min" : "max")) {
          sink_.At(n, f, "missing required field '" + std::string(key) + "'");
        }
        ok = false;
        return nullptr;
      }
      if (is_int) {
        auto v = ReadInt(sink_, e->value, f, -kMaxExactInt, kMaxExactInt);
        if (v)
          *out = static_cast<double>(*v);
        else
          ok = false;
      } else {
        auto v = ReadNumber(sink_, e->value, f);
        if (v)
          *out = *v;
        else
          ok = false;
      }
      return e;
    };
    const MapEntry* low = bound("low", &p->low);
    const MapEntry* high = bound("high", &p->high);
    if (const MapEntry* e = Find(m, "log")) {
      if (auto b = ReadBool(sink_, e->value, field + ".log"))
        p->log = *b;
      else
        ok = false;
    }
    if (const MapEntry* e = Find(m, "grid_points")) {
      if (auto v = ReadInt(sink_, e->value, field + ".grid_points", 2, kMaxGridPoints)) {
        p->grid_points = static_cast<int>(*v);
      } else {
        ok = false;
      }
    }
    if (!ok || low == nullptr || high == nullptr) return false;
    const std::string lows = FormatNumber(p->low), highs = FormatNumber(p->high);
    if (is_int ? p->low > p->high : p->low >= p->high) {
      sink_.At(
          low->value, field + ".low",
          std::string("empty range: low (") + lows + ") must be " + (is_int ? "<=" : "<") + " high (" + highs + ")");
      return false;
    }
    if (p->log && p->low <= 0) {
      sink_.At(low->value, field + ".low",
               std::string("must be ") + (is_int ? ">= 1" : "> 0") + " when log: true, got " + lows);
      return false;
    }
    return true;
  }

 private:
  ErrorSink& sink_;
  SpaceSection* out_;
  std::unordered_set<std::string> param_set_;                                     // the names of space: (duplicates)
  std::unordered_map<std::string, size_t> param_index_;                           // name -> index in out_->space.params
  std::unordered_map<std::string, std::unordered_set<std::string>> choice_sets_;  // a condition's parent's values
};

}  // namespace

void ReadSpaceSection(ErrorSink& sink, const YAML::Node& node, SpaceSection* out) {
  SpaceSectionReader(sink, out).Read(node);
}

}  // namespace ladder::search::internal
