#pragma once
// Samplers behind an ask/tell interface. Ask(n) is deterministic in (spec seed, n): asking again for the same
// trial number gives the same configuration, so a restarted coordinator rebuilds a sampler by replaying Tell
// for the finished trials and continues where it was.
#include <cstdint>
#include <memory>
#include <optional>

#include "search/space.h"
#include "search/spec.h"

namespace ladder::search {

class Sampler {
 public:
  virtual ~Sampler() = default;
  // The configuration for trial `trial_number`; nullopt when there are no more.
  virtual std::optional<Params> Ask(int64_t trial_number) = 0;
  // A finished trial's outcome (nullopt: failed). Model-based samplers learn from it.
  virtual void Tell(int64_t trial_number, const Params& params, std::optional<double> objective) = 0;
  // Finite spaces (grid) know their size.
  virtual std::optional<int64_t> Size() const { return std::nullopt; }
};

// `spec` must be valid (from ParseSpec).
std::unique_ptr<Sampler> MakeSampler(const SearchSpec& spec);

// Number of points of a grid over `space` (saturates at INT64_MAX).
int64_t GridSize(const SearchSpace& space);

}  // namespace ladder::search
