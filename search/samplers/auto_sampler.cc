#include "search/samplers/auto_sampler.h"

#include <algorithm>

namespace ladder::search {

SamplerChoice ResolveSampler(const SearchSpec& spec) {
  if (spec.sampler != "auto") return {spec.sampler, ""};
  const SearchSpace& space = spec.space;
  const size_t params = space.params.size();
  if (params == 0) return {"random", "no parameters to model"};
  size_t categorical = 0;
  for (const ParamSpec& p : space.params) categorical += p.kind == ParamKind::kCategorical ? 1 : 0;
  const std::string cats = std::to_string(categorical) + " of " + std::to_string(params) + " parameters categorical";
  // GP-BO's startup (gp_sampler.cc): clamp(2 * parameters, 5, 20) Sobol points.
  const int gp_startup = std::clamp(2 * static_cast<int>(std::min<size_t>(params, 1000)), 5, 20);
  if (spec.max_trials <= gp_startup) {
    return {"sobol", std::to_string(spec.max_trials) + " trials, no more than GP-BO's " + std::to_string(gp_startup) +
                         " startup points"};
  }
  if (static_cast<double>(categorical) > kAutoMaxCategoricalShare * static_cast<double>(params)) {
    return {"tpe", cats + " (more than half)"};
  }
  if (params > kAutoGpMaxParams) {
    return {"tpe", std::to_string(params) + " parameters (more than " + std::to_string(kAutoGpMaxParams) + ")"};
  }
  if (spec.max_trials > kAutoGpMaxTrials) {
    return {"tpe", std::to_string(spec.max_trials) + " trials (more than " + std::to_string(kAutoGpMaxTrials) + ")"};
  }
  if (spec.parallelism > kAutoGpMaxParallelism) {
    return {"tpe", std::to_string(spec.parallelism) + " trials at a time (more than " +
                       std::to_string(kAutoGpMaxParallelism) + ")"};
  }
  return {"gp", cats + ", " + std::to_string(spec.max_trials) + " trials, " + std::to_string(spec.parallelism) +
                    " at a time: GP-BO after " + std::to_string(gp_startup) + " Sobol points"};
}

}  // namespace ladder::search
