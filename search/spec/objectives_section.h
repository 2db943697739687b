#pragma once
// Internal to search/: reading the spec's `objectives:` list (SearchSpec::objectives); the spec reader calls it.
#include <yaml-cpp/yaml.h>

#include <vector>

#include "search/core/spec.h"
#include "search/core/yaml_reader.h"

namespace ladder::search::internal {

// [{metric: val_loss, mode: min}, {metric: node_hours, mode: min}]: at least 2 entries (one objective is
// `objective:`), each a mapping with a non-empty metric and a mode (max | min, or maximize | minimize), metrics
// distinct. An error names objectives[i].FIELD and the value. Nothing is set unless every entry reads.
void ReadObjectivesSection(ErrorSink& sink, const YAML::Node& node, std::vector<Objective>* out);

}  // namespace ladder::search::internal
