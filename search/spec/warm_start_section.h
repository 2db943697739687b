#pragma once
// Internal to search/: reading the spec's `warm_start:` mapping (SearchSpec::warm_start); the spec reader calls it.
#include <yaml-cpp/yaml.h>

#include "search/core/spec.h"
#include "search/core/yaml_reader.h"

namespace ladder::search::internal {

// {search: ID} or {db: PATH, search: ID}: ID a positive integer, PATH a non-empty path (the coordinator opens it
// read-only when the search is created).
void ReadWarmStartSection(ErrorSink& sink, const YAML::Node& node, WarmStartOptions* out);

}  // namespace ladder::search::internal
