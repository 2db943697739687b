#pragma once
// Internal to search/: reading the spec's `scheduler:` mapping (the spec reader calls these).
#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>

#include "search/core/spec.h"
#include "search/core/yaml_reader.h"

namespace ladder::search::internal {

// `scheduler:` (a type name, or a mapping). Sets *seed_given when the mapping has `seed:` (otherwise the
// spec's Finish gives it the sampler's seed). Fields that do not apply to the type are errors.
void ReadStoppingSection(ErrorSink& sink, const YAML::Node& node, StoppingOptions* out, bool* seed_given);

// Checks of `scheduler:` against the rest of the spec (objective, budget), reported at `node`'s fields.
// Call after everything was read.
void CheckStoppingSection(ErrorSink& sink, const YAML::Node& node, const SearchSpec& spec);

}  // namespace ladder::search::internal
