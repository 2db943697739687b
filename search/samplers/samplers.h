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
// gp_sampler.cc. With `kernel`, GP-BO uses it as it is and fits none (ParEGO shares one among its scalarisations).
std::unique_ptr<Sampler> MakeGpSampler(const SearchSpec& spec, std::optional<GpHyper> kernel = std::nullopt);
// The kernel GP-BO fits to these trials (params, loss), numbered 0.. in this order.
GpHyper FitGpKernel(const SearchSpec& spec, const std::vector<std::pair<Params, double>>& trials);
// How many of `completed` trials GP-BO fits its kernel on: every trial up to 10, then steps of 20% (at least 2).
size_t GpFitPoint(size_t completed);
std::unique_ptr<Sampler> MakeCmaEsSampler(const SearchSpec& spec);  // cmaes_sampler.cc
std::unique_ptr<Sampler> MakeScalesSampler(const SearchSpec& spec);  // scales_sampler.cc (`scales:`)

}  // namespace ladder::search::internal
