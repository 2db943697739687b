#pragma once
// Internal to search/: TPE's view of the history for one group of coordinates (the always-active ones, or one
// conditional parameter), kept up to date as trials are told so that a suggestion costs nothing that grows
// with the history.
//
// It holds the completed trials that have every coordinate of the group, in the two orders of
// CompletedTrials (completed_trials.h): the good group is the first n_good by (loss, number), never a sort of
// the history.
//
// Split() gives the two Parzen mixtures' components, as TPE defines them: n = completed + pending trials of the
// group, the good group is the first n_good = min(ceil(gamma n), max_good, completed) by (loss, number), the
// bad group is every other completed trial plus the pending ones (constant liars), in trial-number order, with
// Optuna's weights by position (DefaultTpeWeights). Both come out in trial-number order.
//
// Bounded bad mixture. When the bad group has more than `max_components` trials, its mixture is built over at
// most max_components components plus the pending trials, with the group's weight preserved:
//   - every pending trial, and the most recent max_components / 2 positions, as themselves (their own weight);
//   - the older positions [0, P) cut into m = max_components - max_components / 2 strata of consecutive
//     positions (equal counts, +-1); each stratum is one component: one of its trials, drawn with `rng`,
//     carrying the stratum's whole weight (the sum of its trials' weights).
// So each older trial stands in the mixture with probability 1 / (its stratum's size) and then the stratum's
// weight: the mixture's expected weight at every trial is its own (an unbiased, stratified estimate of the
// full bad density), the total weight is exact, and recency (Optuna's ramp) is kept. Below the bound the
// components are exactly the full bad group (nothing is drawn from `rng`).
//
// Not thread-safe; the Observations must outlive it (HistorySampler's stored ones do).
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "search/samplers/completed_trials.h"
#include "search/samplers/sampler_internal.h"

namespace ladder::search::internal {

class TpeHistory : public CompletedTrials {
 public:
  struct Mixture {
    std::vector<const Observation*> trials;  // in trial-number order
    std::vector<double> weights;             // one per trial
  };
  struct Split {
    Mixture good, bad;
    size_t bad_trials = 0;  // the bad group's size (more than bad.trials.size() when bounded)
  };

  // Add and Remove (CompletedTrials) take the completed trials that have all of the group's coordinates.

  // liars: the pending trials that have the group's coordinates, in trial-number order.
  Split Make(const std::vector<const Observation*>& liars, double gamma, size_t max_good, size_t max_components,
             std::mt19937_64& rng) const;
};

}  // namespace ladder::search::internal
