#pragma once
// Internal to search/: the factories of the model-based samplers, one file each.
#include <memory>

#include "search/samplers/sampler.h"

namespace ladder::search::internal {

std::unique_ptr<Sampler> MakeTpeSampler(const SearchSpec& spec);    // tpe_sampler.cc
std::unique_ptr<Sampler> MakeGpSampler(const SearchSpec& spec);     // gp_sampler.cc
std::unique_ptr<Sampler> MakeCmaEsSampler(const SearchSpec& spec);  // cmaes_sampler.cc
std::unique_ptr<Sampler> MakeScalesSampler(const SearchSpec& spec);  // scales_sampler.cc (`scales:`)

}  // namespace ladder::search::internal
