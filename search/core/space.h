#pragma once
// Search spaces: the parameters a search explores and the values they take. Pure data, no I/O.
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace ladder::search {

enum class ParamKind { kFloat, kInt, kCategorical };

struct ParamSpec {
  std::string name;
  ParamKind kind = ParamKind::kFloat;
  double low = 0, high = 0;          // float/int bounds, inclusive
  bool log = false;                   // log-uniform (float and int)
  std::vector<std::string> choices;   // categorical values, as written in the spec (YAML scalars)
  int grid_points = 0;                // grid sampler: points per float/int dimension (0 = not set)
  // Conditional parameter: active only when the categorical parameter `condition_param` (defined earlier in
  // the space, itself active) takes one of `condition_values`. Empty `condition_param`: always active.
  // An inactive parameter is absent from a trial's Params (and a {name} placeholder for it reads as "").
  std::string condition_param;
  std::vector<std::string> condition_values;
  bool conditional() const { return !condition_param.empty(); }
};

using Value = std::variant<double, int64_t, std::string>;
using Params = std::map<std::string, Value>;

struct SearchSpace {
  std::vector<ParamSpec> params;  // in spec order
};

// Text used when substituting into a command line: ints as integers, floats in the shortest form that
// round-trips ("0.001", "1e-05", "0.1"), strings as they are.
std::string FormatValue(const Value& v);

// "float", "int" or "categorical": the spelling of the spec's `type:` field.
const char* ParamKindName(ParamKind kind);

// The values a grid visits along one parameter, ascending for float/int: `grid_points` evenly spaced points
// over [low, high] (log-spaced when `log`), ints rounded and deduplicated; every value of a categorical.
// Empty when a float/int parameter has grid_points < 2.
std::vector<Value> GridValues(const ParamSpec& p);

// Whether `p` is active given the values already chosen for the parameters before it (`params`).
bool IsActive(const ParamSpec& p, const Params& params);

// `params` without the parameters that are inactive under it (in spec order, so a condition on a parameter
// that is itself dropped drops the dependent too).
Params DropInactive(const SearchSpace& space, Params params);

}  // namespace ladder::search
