#pragma once
// Internal to search/: reading the spec's `constraints:` list (SearchSpec::constraints) and what it rules out; the
// spec reader calls both.
#include <yaml-cpp/yaml.h>

#include <vector>

#include "search/core/spec.h"
#include "search/core/yaml_reader.h"

namespace ladder::search::internal {

// [{metric: peak_mem_gb, max: 70}, {metric: throughput, min: 1000}]: each a mapping with a non-empty metric (one a
// trial prints, a built-in one, or the objective's own) and exactly one finite bound, max or min (a range is two
// entries). An error names constraints[i].FIELD and the value. Nothing is set unless every entry reads.
void ReadConstraintsSection(ErrorSink& sink, const YAML::Node& node, std::vector<Constraint>* out);

// Once the whole spec is read: the parts that rank trials without regard to feasibility refuse constraints —
// pbt (its exploit copies the best running trial's checkpoint), ensemble: (it picks the best trials'
// predictions), scales: (its sweep is planned, not sampled) and warm_start: (the earlier trials have no
// constraint values). Several objectives take them (their samplers and Pareto front know feasibility:
// search/multiobjective/mo_sampler.h). `key` is the `constraints` key, where the errors point.
void CheckConstraintsSection(ErrorSink& sink, const YAML::Node& key, const SearchSpec& spec, bool scales);

}  // namespace ladder::search::internal
