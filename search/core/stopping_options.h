#pragma once
// The options of a search's stopping rule (the spec's `scheduler:` mapping). Pure data; ParseSpec fills and
// checks them (search/spec/spec_reader.h), MakeStoppingRule (search/stopping/stopping_rule.h) uses them.
#include <cstdint>
#include <string>
#include <vector>

namespace ladder::search {

enum class StoppingRuleType { kNone, kAsha, kHyperband, kMedian, kPbt };

// "none", "asha", "hyperband", "median" or "pbt": the spelling of `scheduler.type`.
const char* StoppingRuleName(StoppingRuleType type);

inline constexpr double kDefaultMinResource = 1;
inline constexpr double kDefaultReductionFactor = 3;
inline constexpr double kDefaultGracePeriod = 1;
inline constexpr int kDefaultMedianMinTrials = 3;
inline constexpr double kDefaultPbtQuantile = 0.25;
inline constexpr double kDefaultResampleProbability = 0.25;

// Each field applies only to the types its comment names (the parser rejects it for the others).
struct StoppingOptions {
  StoppingRuleType type = StoppingRuleType::kNone;
  // The metric that measures how far a trial got: it grows along a trial (epoch, step, samples, or the
  // trial's scale such as its global batch or node count). Reports are (resource, objective) pairs read from
  // one metrics line that carries both.
  std::string resource = "epoch";
  double min_resource = kDefaultMinResource;          // asha, hyperband: r, the first rung
  double max_resource = 0;                            // asha, hyperband (required): R; a trial stops there
  double reduction_factor = kDefaultReductionFactor;  // asha, hyperband: eta > 1; rungs at r * eta^k < R
  int brackets = 0;                                   // hyperband: brackets used (0: all, floor(log_eta(R/r)) + 1)
  double grace_period = kDefaultGracePeriod;          // median: no trial is stopped below this resource
  int min_trials = kDefaultMedianMinTrials;           // median: other trials needed at a resource to compare
  double perturbation_interval = 0;                   // pbt (required): resource between exploit/explore steps
  double quantile = kDefaultPbtQuantile;              // pbt: the bottom/top fraction of the population
  double resample_probability = kDefaultResampleProbability;  // pbt: a perturbed parameter is redrawn instead
  uint64_t seed = 0;                                  // pbt: its random choices (default: the sampler's seed)
};

// `ensemble:`: after the search, greedy ensemble selection (search/ensemble/ensemble.h) over the best trials' saved
// validation predictions.

}  // namespace ladder::search
