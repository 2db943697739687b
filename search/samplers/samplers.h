#pragma once
// Internal to search/: the factories of the model-based samplers, one file each.
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "search/samplers/gp_model.h"
#include "search/samplers/sampler.h"

namespace ladder::search::internal {

std::unique_ptr<Sampler> MakeTpeSampler(const SearchSpec& spec);    // tpe_sampler.cc
// gp_sampler.cc. With `kernels`, GP-BO uses them as they are and fits none (ParEGO shares them among its
// scalarisations): the objective's, and the constraint's (none: the objective's serves it).
struct GpKernels {
  GpHyper objective;
  std::optional<GpHyper> constraint;
};
std::unique_ptr<Sampler> MakeGpSampler(const SearchSpec& spec, std::optional<GpKernels> kernels = std::nullopt);
// The kernels GP-BO fits to these trials, numbered 0.. in this order: each one's params, loss and largest signed
// constraint value (the constraint's kernel only where one is above 0).
struct KernelTrial {
  Params params;
  double loss = 0;
  double constraint = 0;
};
GpKernels FitGpKernels(const SearchSpec& spec, const std::vector<KernelTrial>& trials);
// How many of `completed` trials GP-BO fits its kernel on: every trial up to 10, then steps of 20% (at least 2).
size_t GpFitPoint(size_t completed);
std::unique_ptr<Sampler> MakeCmaEsSampler(const SearchSpec& spec);  // cmaes_sampler.cc
std::unique_ptr<Sampler> MakeScalesSampler(const SearchSpec& spec);  // scales_sampler.cc (`scales:`)

}  // namespace ladder::search::internal
