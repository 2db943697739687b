#pragma once
// Internal to search/: reading the spec's `scales:` mapping (search/core/scales.h); the spec reader calls it.
#include <yaml-cpp/yaml.h>

#include "search/core/scales.h"
#include "search/core/yaml_reader.h"

namespace ladder::search::internal {

// Fills *out (enabled) when the mapping is valid; every error names its field (scales.global_batch, ...).
void ReadScalesSection(ErrorSink& sink, const YAML::Node& node, ScalesOptions* out);

}  // namespace ladder::search::internal
