#pragma once
// Internal to search/: reading the spec's `stage:` list (SearchSpec::stage); spec.cc calls it.
#include <yaml-cpp/yaml.h>

#include <vector>

#include "search/spec.h"
#include "search/yaml_reader.h"

namespace ladder::search::internal {

// Every entry a mapping {from: FILE, to: DIR}, both absolute paths; errors name stage[i].from / stage[i].to.
void ReadStageSection(ErrorSink& sink, const YAML::Node& node, std::vector<StageFile>* out);

}  // namespace ladder::search::internal
