#pragma once
// Internal to search/: reading the spec's `enqueue:` list (SearchSpec::enqueue), each point against the space
// already read (search/core/point.h); the spec reader calls it.
#include <yaml-cpp/yaml.h>

#include <vector>

#include "search/core/spec.h"
#include "search/core/yaml_reader.h"

namespace ladder::search::internal {

// Every entry a mapping {name: value, ...} of scalars; an error names enqueue[i].name and the value.
void ReadEnqueueSection(ErrorSink& sink, const YAML::Node& node, const SearchSpace& space, std::vector<Params>* out);

}  // namespace ladder::search::internal
