#pragma once
// Internal to search/: reading the spec's `stage:` list (SearchSpec::stage); the spec reader calls it.
#include <yaml-cpp/yaml.h>

#include <vector>

#include "search/core/spec.h"
#include "search/core/yaml_reader.h"

namespace ladder::search::internal {

// Every entry a mapping {from: FILE, to: DIR} (absolute paths), with `extract: true` (from: an archive) or
// `shard: node` (from: a directory, or a list of files); errors name stage[i].from / stage[i].to / ....
void ReadStageSection(ErrorSink& sink, const YAML::Node& node, std::vector<StageFile>* out);

}  // namespace ladder::search::internal
