#pragma once
// Internal to search/: reading the spec's `container:` mapping (SearchSpec::container); the spec reader calls it.
#include <yaml-cpp/yaml.h>

#include "search/core/container_options.h"
#include "search/core/yaml_reader.h"

namespace ladder::search::internal {

// {runtime: charliecloud | apptainer | podman, image: PATH, binds: [SRC or SRC:DST, ...]}: runtime and image
// required; image an absolute path for charliecloud and apptainer; each bind's paths absolute.
void ReadContainerSection(ErrorSink& sink, const YAML::Node& node, ContainerOptions* out);

}  // namespace ladder::search::internal
