#pragma once
// Internal to search/: reading the spec's `scales:` mapping (search/scales.h); spec.cc calls it.
#include <yaml-cpp/yaml.h>

#include "search/scales.h"
#include "search/yaml_reader.h"

namespace ladder::search::internal {

// Fills *out (enabled) when the mapping is valid; every error names its field (scales.global_batch, ...).
void ReadScalesSection(ErrorSink& sink, const YAML::Node& node, ScalesOptions* out);

}  // namespace ladder::search::internal
