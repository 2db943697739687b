#pragma once
// Internal to search/: reading the spec's `scheduler:` and `ensemble:` mappings (spec.cc calls these).
#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>

#include "search/spec.h"
#include "search/yaml_reader.h"

namespace ladder::search::internal {

// `scheduler:` (a type name, or a mapping). Sets *seed_given when the mapping has `seed:` (otherwise the
// spec's Finish gives it the sampler's seed). Fields that do not apply to the type are errors.
void ReadSchedulerSection(ErrorSink& sink, const YAML::Node& node, TrialSchedulerOptions* out, bool* seed_given);

// Checks of `scheduler:` against the rest of the spec (objective, budget), reported at `node`'s fields.
// Call after everything was read.
void CheckSchedulerSection(ErrorSink& sink, const YAML::Node& node, const SearchSpec& spec);

// `ensemble:`. Returns the predictions_file template (with its mark) for the placeholder check.
struct TemplateText {
  YAML::Mark mark;
  std::string text;
};
std::optional<TemplateText> ReadEnsembleSection(ErrorSink& sink, const YAML::Node& node, EnsembleOptions* out);

}  // namespace ladder::search::internal
