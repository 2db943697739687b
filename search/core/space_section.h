#pragma once
// Internal to search/: reading the spec's `space:` mapping (the spec reader calls it). Every parameter's errors
// name its field (space.lr.low, space.momentum.condition.in[1], ...).

#include <string>
#include <vector>

#include "search/core/space.h"
#include "search/core/yaml_reader.h"

namespace ladder::search::internal {

struct SpaceSection {
  SearchSpace space;               // the well-formed parameters, in the spec's order
  std::vector<std::string> names;  // every well-formed name, even of parameters with errors (placeholder checks)
  std::vector<YAML::Mark> marks;   // parallel to space.params
  bool ok = true;                  // no parameter had an error
};

// `space:`: a mapping of parameter name to {type: float|int|categorical, ...} (search/spec/spec_reader.h).
void ReadSpaceSection(ErrorSink& sink, const YAML::Node& node, SpaceSection* out);

}  // namespace ladder::search::internal
