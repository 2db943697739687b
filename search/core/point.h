#pragma once
// A configuration given by hand rather than sampled: a point of the spec's `enqueue:` list, or one that
// `ladder search enqueue` adds to a running search. Each parameter's value arrives as text (a YAML scalar, or
// the CLI's `name=value`) and is read against the search space, so both paths refuse the same things in the
// same words. Pure, no I/O.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "search/core/space.h"

namespace ladder::search {

// One thing wrong with a point: `param` is the parameter it is about (an unknown one's name too).
struct PointError {
  std::string param;
  std::string message;  // names the value where there is one: "0.5 is out of range [0.0001, 0.1]"
};

struct PointResult {
  Params params;                   // set only when errors is empty; typed as a sampler's Params are
  std::vector<PointError> errors;  // every problem, the given values' in their order, then the missing ones
  bool ok() const { return errors.empty(); }
};

// Reads `values` (name, text) against `space`. Refused: a name that is not a parameter (with the closest one),
// a name given twice, a float that is not a number or is outside [low, high], an int that is not an integer or
// is outside its range, a categorical value that is not one of its values, an active parameter left out, and
// a conditional parameter given while its condition does not hold (it would be ignored: say so instead).
PointResult ParsePoint(const SearchSpace& space, const std::vector<std::pair<std::string, std::string>>& values);

// Why two spaces are not the same space for a warm start ("" when they are): every parameter of each is one of
// the other's, of the same kind (float, int, categorical). Bounds, values and conditions may differ.
std::string SpaceMismatch(const SearchSpace& earlier, const SearchSpace& now);

// A configuration of another search read against `space` as if given by hand (ParsePoint of its values' text):
// nullopt when it lies outside (a value out of the bounds or not a value, a parameter missing or inactive here).
std::optional<Params> Reread(const SearchSpace& space, const Params& params);

// "lr=0.1, batch_size=256" as the journal and the CLI write a point (spec order).
std::string FormatPoint(const SearchSpace& space, const Params& params);

}  // namespace ladder::search
