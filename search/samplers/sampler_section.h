#pragma once
// Internal to search/: reading the spec's `sampler:` (a type name, or a mapping with its options; the spec
// reader calls it). An option that does not apply to the chosen type is an error naming the types it applies to.

#include <cstdint>
#include <string>

#include "search/core/spec.h"
#include "search/core/yaml_reader.h"

namespace ladder::search::internal {

void ReadSamplerSection(ErrorSink& sink, const YAML::Node& node, std::string* type, uint64_t* seed,
                        SamplerOptions* options);

}  // namespace ladder::search::internal
