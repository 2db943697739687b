#pragma once
// Samplers for several objectives, behind their own ask/tell interface (the single-objective Sampler of
// search/samplers/sampler.h is unchanged). The spec's `sampler:` names one:
//   auto    (the default) one of the below, picked from the space, budget and parallelism alone
//           (ResolveMultiObjectiveSampler: the rule is written there)
//   tpe     multi-objective TPE, as Optuna's TPESampler with several objectives (MOTPE): the good group is the
//           first trials by non-domination rank, the front that does not fit whole is cut by greedy hypervolume
//           contribution; the good trials weigh by their hypervolume contribution; pending trials are constant
//           liars in the bad group. Otherwise ladder's TPE (parzen.h): 10 Sobol startup points, gamma 0.1 capped
//           at 25, 24 candidates, conditional parameters modelled on their own
//   nsga2   NSGA-II (Deb et al. 2002), generational like Optuna's NSGAIISampler: trial n is in generation
//           n / population (default 50); generation 0 is Sobol points; the parents of generation g are the
//           survivors (ranks, then crowding distance) of generation g-1's parents and its completed trials;
//           a child is two binary-tournament parents crossed (probability 0.9; SBX for float/int coordinates,
//           uniform for categoricals) and mutated (each coordinate with probability 1/parameters: polynomial
//           mutation for float/int, a uniform choice for categoricals)
//   gp      ParEGO (Knowles 2006) on the single-objective GP-BO (parego_sampler.cc): clamp(2 x parameters, 5, 20)
//           Sobol points, then per suggestion a weight vector drawn uniformly from the simplex from the trial
//           number's stream, the objectives normalized to [0, 1] over the completed trials and scalarized by the
//           augmented Chebyshev function max_i(w_i f_i) + 0.05 sum_i(w_i f_i), and the single-objective GP sampler
//           (refitted to those scalars) asked: its expected improvement, its kriging believer for pending trials.
//           A GP fit per suggestion: ~0.1 s at 100 trials, ~0.6 s at 200 (capped there by max_history)
//   random, sobol  as for one objective (the objectives are not read)
// Other samplers (grid, cmaes, scales) have no multi-objective form: MakeMultiObjectiveSampler returns nullptr and
// says why.
//
// Objectives are given in the spec's units and order; the sampler negates the ones to maximize, so every
// objective is minimized inside (search/multiobjective/pareto.h). A value that is NaN or infinite makes the
// trial count as failed.
//
// Determinism contract: as sampler.h's: Ask(n) is a function of (seed, n, the set of told trials, the set of
// pending trials), sets keyed by trial number; a restarted coordinator replays Tell and AddPending and goes on
// where it was; asking again for a pending trial returns its configuration. Several Ask calls without a Tell
// give distinct configurations (tpe: constant liars; gp: kriging believer; nsga2, random, sobol: the trial
// number's stream).
// Not thread-safe: one thread owns a sampler.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "search/core/space.h"
#include "search/core/spec.h"

namespace ladder::search {

class MultiObjectiveSampler {
 public:
  virtual ~MultiObjectiveSampler() = default;
  // The configuration for trial `trial_number`; nullopt when there are no more.
  virtual std::optional<Params> Ask(int64_t trial_number) = 0;
  // A finished trial: one value per objective, in the spec's order and units; nullopt: failed.
  virtual void Tell(int64_t trial_number, const Params& params, std::optional<std::vector<double>> objectives) = 0;
  // A finished trial with the values of the spec's constraints, signed as Sampler::TellConstrained's (<= 0 where
  // it holds); its violation is the sum of the positive ones. nsga2 sorts by Deb's constrained domination (a
  // feasible trial dominates an infeasible one, two infeasible ones compare by violation, two feasible ones by
  // Pareto dominance); tpe's good group is the first feasible trials by its rule, then, if it has room, the least
  // violating infeasible ones (Optuna's constrained MOTPE); gp weighs the scalarized expected improvement (against
  // the best feasible scalar) by the chance of feasibility from a GP on the largest signed constraint value, as the
  // single-objective GP does. random and sobol ignore them.
  virtual void TellConstrained(int64_t trial_number, const Params& params,
                               std::optional<std::vector<double>> objectives,
                               const std::vector<double>& /*constraints*/) {
    Tell(trial_number, params, std::move(objectives));
  }
  // A trial that runs with `params` but was not asked of this object (after a restart).
  virtual void AddPending(int64_t trial_number, const Params& params) = 0;
};

struct MultiObjectiveOptions {
  std::vector<bool> maximize;  // one per objective, at least 2
  int population = 0;          // nsga2 (default kNsga2DefaultPopulation)
};

constexpr int kNsga2DefaultPopulation = 50;
constexpr int kMoTpeStartupTrials = 10;

// The auto rule for several objectives, first match wins:
//   1. no parameters                            -> random (nothing to model)
//   2. max_trials <= TPE's 10 startup points    -> sobol (no model would be used)
//   3. parallelism >= NSGA-II's population      -> nsga2 (a whole generation runs at once; TPE's good group
//                                                  would be learnt from a history mostly made of liars)
//   4. max_trials <= kAutoMoGpMaxTrials, at most
//      half the parameters categorical and at
//      most 32 parameters (one objective's GP
//      limits, auto_sampler.h)                  -> gp (ParEGO: on ZDT1-3, DTLZ2 and two tables, one of them a
//                                                  third categorical, its median hypervolume after 50, 100 and
//                                                  200 evaluations is above MOTPE's and NSGA-II's,
//                                                  docs/BENCHMARKS.md; a GP fit per suggestion costs ~0.6 s at
//                                                  200 trials and its model holds at most 200, so it stops at
//                                                  the budgets it was measured at)
//   5. max_trials > kAutoMoTpeMaxTrials         -> nsga2 (MOTPE reads every trial to build its bad mixture, so
//                                                  its cost per suggestion grows with the history; NSGA-II's
//                                                  does not)
//   6. otherwise                                -> tpe (a model learns faster than a population at the budgets
//                                                  of a hyperparameter search: docs/BENCHMARKS.md)
constexpr int kAutoMoGpMaxTrials = 200;
constexpr int kAutoMoTpeMaxTrials = 10000;

struct MultiObjectiveChoice {
  std::string sampler;  // random, sobol, gp, tpe or nsga2 for auto; the spec's sampler otherwise
  std::string reason;   // one line for auto; empty when the spec named its sampler
};
MultiObjectiveChoice ResolveMultiObjectiveSampler(const SearchSpec& spec, const MultiObjectiveOptions& options);

// The sampler spec.sampler names (auto resolved), for spec.space and spec.seed (spec.sampler_options'
// n_startup_trials, n_ei_candidates and gamma apply to tpe; n_startup_trials and max_history to gp). nullptr with *error set when the sampler has no
// multi-objective form or options.maximize has fewer than 2 objectives.
std::unique_ptr<MultiObjectiveSampler> MakeMultiObjectiveSampler(const SearchSpec& spec,
                                                                 const MultiObjectiveOptions& options,
                                                                 std::string* error);

}  // namespace ladder::search
