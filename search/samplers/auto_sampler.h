#pragma once
// The `auto` sampler: a rule that picks one of ladder's samplers from the spec alone (its space, budget and
// parallelism), before any trial runs, so the choice is the same on every restart. It is the default when a
// spec has no `sampler:`. Pure function, no state.
//
// The rule, first match wins (the constants below; measured in bench/search_vs_optuna, docs/BENCHMARKS.md):
//   1. no parameters                                   -> random (nothing to model)
//   2. max_trials <= GP-BO's startup points            -> sobol (a model would never be used)
//   3. categorical share > kAutoMaxCategoricalShare    -> tpe (GP-BO one-hot encodes them; TPE models choices)
//   4. more than kAutoGpMaxParams parameters           -> tpe (an ARD kernel with that many lengths fits poorly)
//   5. max_trials > kAutoGpMaxTrials                   -> tpe (GP-BO keeps 200 trials in its model; TPE learns
//                                                         from all of them, cheaper per suggestion at that scale)
//   6. parallelism > kAutoGpMaxParallelism             -> tpe (each of that many pending points is a kriging
//                                                         believer in the GP; TPE's constant liar is cheaper)
//   7. otherwise (a small budget, a mostly numeric space) -> gp (Sobol start, then GP-BO with EI)
#include <string>

#include "search/core/spec.h"

namespace ladder::search {

constexpr double kAutoMaxCategoricalShare = 0.5;
constexpr size_t kAutoGpMaxParams = 32;
constexpr int kAutoGpMaxTrials = 1000;
constexpr int kAutoGpMaxParallelism = 64;

struct SamplerChoice {
  std::string sampler;  // random, sobol, tpe or gp for auto; the spec's sampler otherwise
  std::string reason;   // one line, e.g. "0 of 5 parameters categorical, 200 trials, 1 at a time: GP-BO after 10
                        // Sobol points"; empty when the spec named its sampler
};

// The sampler `spec` runs with: auto resolved by the rule above; any other sampler is itself (reason empty).
SamplerChoice ResolveSampler(const SearchSpec& spec);

}  // namespace ladder::search
