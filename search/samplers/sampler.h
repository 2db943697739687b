#pragma once
// Samplers behind an ask/tell interface, chosen by the spec's `sampler:` field:
//   auto    (the default) one of random, sobol, tpe, gp, picked from the spec alone (search/samplers/auto_sampler.h)
//   random  independent uniform draws (log-uniform where `log`)
//   grid    the Cartesian product of GridValues, in order
//   sobol   a scrambled Sobol' sequence over the unit cube of the space (see unit_space.h)
//   tpe     multivariate Tree-structured Parzen Estimator (Optuna-like), constant liar for pending trials; past a
//           cost bound its bad density is a stratified subsample of the history (tpe_history.h)
//   gp      Gaussian-process BO: Matérn-5/2 ARD kernel fitted by marginal likelihood, expected improvement,
//           kriging believer for pending trials; the model holds at most `max_history` trials
//   cmaes   CMA-ES over the float/int parameters (categoricals drawn at random)
//   scales  the spec's `scales:` section (search/core/scales.h): a global batch x learning-rate grid, then
//           extensions that bracket each batch's best learning rate (Ask may wait for results: Waiting)
//
// Determinism contract. random, grid and sobol: Ask(n) is a function of (spec seed, n) only. The model-based
// samplers (tpe, gp, cmaes): Ask(n) is a function of (spec seed, n, the set of told trials, the set of pending
// trials), where a trial is pending from its Ask until its Tell; sets are keyed by trial number, so the order
// of the calls does not matter. A restarted coordinator rebuilds a sampler by replaying Tell for the finished
// trials (and AddPending for the ones still running) and then continues exactly where it was. Asking again
// for a pending trial returns the configuration it got.
//
// Parallel suggestions: several Ask calls without Tell in between (parallelism > 1) give distinct,
// spread-out configurations: tpe treats pending trials as bad ones (constant liar), gp conditions the model
// on their predicted value (kriging believer), sobol/random/cmaes draw them with the trial number's stream.
//
// Inactive conditional parameters are absent from the Params a sampler returns. Not thread-safe: one thread
// (the coordinator's loop) owns a sampler.
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "search/core/space.h"
#include "search/core/spec.h"

namespace ladder::search {

class Sampler {
 public:
  virtual ~Sampler() = default;
  // The configuration for trial `trial_number`; nullopt when there are no more.
  virtual std::optional<Params> Ask(int64_t trial_number) = 0;
  // A finished trial's outcome (nullopt: failed), as the spec's objective (the sampler knows its direction).
  // Model-based samplers learn from it.
  virtual void Tell(int64_t trial_number, const Params& params, std::optional<double> objective) = 0;
  // A finished trial with the values of the spec's constraints, each signed as Optuna's: <= 0 where it holds
  // (metric − max for a bound `max`), > 0 by how far it is broken. The model-based samplers order their history
  // feasible first (by objective), then infeasible by violation, the sum of the positive values (Optuna's
  // constrained TPE), so that TPE's good group is the best feasible trials and its bad group holds the
  // infeasible ones; GP-BO weighs expected improvement by the chance of feasibility. Samplers without a model
  // ignore them.
  virtual void TellConstrained(int64_t trial_number, const Params& params, std::optional<double> objective,
                               const std::vector<double>& /*constraints*/) {
    Tell(trial_number, params, objective);
  }
  // A trial that runs with `params` but was not asked of this sampler object (after a restart). Samplers
  // without a model ignore it.
  virtual void AddPending(int64_t /*trial_number*/, const Params& /*params*/) {}
  // After Ask returned nullopt: true when more configurations may come once a pending trial is told (the
  // caller asks again after the next Tell); false when the sampler is done.
  virtual bool Waiting() const { return false; }
  // Finite spaces (grid) know their size.
  virtual std::optional<int64_t> Size() const { return std::nullopt; }
};

// `spec` must be valid (from ParseSpec).
std::unique_ptr<Sampler> MakeSampler(const SearchSpec& spec);

// Number of points of a grid over `space` (saturates at INT64_MAX).
int64_t GridSize(const SearchSpace& space);

}  // namespace ladder::search
