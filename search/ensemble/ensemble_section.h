#pragma once
// Internal to search/: reading the spec's `ensemble:` mapping (the spec reader calls it).

#include <optional>

#include "search/core/ensemble_options.h"
#include "search/core/yaml_reader.h"

namespace ladder::search::internal {

// Fills *out (enabled) from the mapping; every error names its field (ensemble.size, ...). Returns the
// predictions_file template (with its mark) for the placeholder check.
std::optional<TemplateText> ReadEnsembleSection(ErrorSink& sink, const YAML::Node& node, EnsembleOptions* out);

}  // namespace ladder::search::internal
