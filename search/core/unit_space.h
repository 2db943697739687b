#pragma once
// UnitSpace: a SearchSpace seen as the unit cube, the common coordinates of the model-based samplers.
//
// Each parameter has one coordinate u in [0, 1):
//   float: u = (t(v) - t(low)) / (t(high) - t(low)), t = log when `log`, else the identity;
//   int:   the same over [low - 0.5, high + 0.5] (so every integer owns an equal share), rounded on decoding;
//   categorical: choice k of K owns [k/K, (k+1)/K); encoding gives its centre (k + 0.5) / K.
// Decode() drops the parameters that are inactive under the decoded values (conditions), so every sampler
// that goes through it respects types, bounds, log scales and conditions. Pure value type, no state.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "search/core/space.h"

namespace ladder::search {

class UnitSpace {
 public:
  explicit UnitSpace(SearchSpace space);

  size_t dims() const { return space_.params.size(); }
  const ParamSpec& param(size_t i) const { return space_.params[i]; }
  const SearchSpace& space() const { return space_; }
  // The index of parameter i's condition parent, or -1 when it is always active.
  int parent(size_t i) const { return parents_[i]; }
  // Number of choices of a categorical parameter, 0 for float/int.
  size_t choices(size_t i) const { return space_.params[i].choices.size(); }

  Value FromUnit(size_t i, double u) const;
  // nullopt when `v` has the wrong type or is not a choice of a categorical.
  std::optional<double> ToUnit(size_t i, const Value& v) const;
  // u snapped to what a value decodes back to (an int's or a choice's centre); floats unchanged, clamped.
  double Snap(size_t i, double u) const;
  // An int parameter's values low..high are its levels 0..levels-1 (0 for float/categorical); level k owns the
  // unit coordinates [LevelEdge(i, k), LevelEdge(i, k + 1)) (equal shares unless `log`).
  uint64_t levels(size_t i) const;
  double LevelEdge(size_t i, uint64_t k) const;

  // u has dims() coordinates; inactive parameters are left out of the result.
  Params Decode(const std::vector<double>& u) const;
  // Coordinates of `params` and which parameters are present; an absent or ill-typed one gets `fill`.
  std::vector<double> Encode(const Params& params, std::vector<bool>* present = nullptr, double fill = 0.5) const;

  // Whether parameter i is active given the coordinates of the parameters before it.
  bool ActiveUnder(size_t i, const std::vector<double>& u) const;

 private:
  SearchSpace space_;
  std::vector<int> parents_;
  std::vector<std::vector<bool>> enabling_;  // conditional i: which choices of its parent enable it
};

}  // namespace ladder::search
