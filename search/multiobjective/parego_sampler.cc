// ParEGO (Knowles 2006): GP-BO for several objectives through a random scalarisation per suggestion, on ladder's
// single-objective GP-BO (search/samplers/gp_sampler.cc) unchanged:
//   - the first n_startup_trials (default clamp(2 x parameters, 5, 20), as the single-objective GP's) are Sobol
//     points;
//   - then each suggestion for trial n draws a weight vector uniformly from the simplex from n's own stream
//     (scalarization.h), normalizes every objective to [0, 1] over the completed trials, scalarizes each by the
//     augmented Chebyshev function max_i(w_i f_i) + 0.05 sum_i(w_i f_i), and asks a fresh single-objective GP
//     sampler told those scalars, with the shared kernel (below): its expected improvement maximized by its
//     candidates and local refinement;
//   - pending trials join that GP as they join a single-objective one (kriging believer: the posterior mean at
//     each pending point as its value), so parallel asks spread out; failed trials are told as failed;
//   - constraints (TellConstrained): every trial stays in the scalarized model and the single-objective GP's
//     classifier-weighted acquisition applies: EI against the best feasible scalar times the chance of
//     feasibility from a GP on the trial's largest signed constraint value (the chance alone while no trial is
//     feasible).
// The inner sampler is built anew for each suggestion from the told and pending sets, so a suggestion is a function
// of (seed, n, told set, pending set) by construction (the determinism contract of mo_sampler.h). The kernel is
// not refitted per scalarisation: one kernel, fitted where GP-BO refits its own (the first GpFitPoint(completed)
// trials by number; every trial up to 10, then steps of 20%) to the equal-weight scalarisation, serves every
// weight vector until the next refit; so does the constraint's kernel, where a constraint is broken. Fitting it
// per suggestion (as Knowles does) cost 0.6-1.3 s a suggestion at 200 trials, on the coordinator's loop; shared,
// 12 ms (docs/BENCHMARKS.md, with the hypervolumes of both).
#include <algorithm>

#include "search/multiobjective/mo_history.h"
#include "search/multiobjective/scalarization.h"
#include "search/samplers/sampler.h"
#include "search/samplers/sampler_internal.h"
#include "search/samplers/samplers.h"

namespace ladder::search::internal {
namespace {

constexpr uint64_t kWeightSalt = 0x9a7e90;

class ParEgoSampler : public MoHistorySampler {
 public:
  ParEgoSampler(const SearchSpec& spec, const MultiObjectiveOptions& options) : MoHistorySampler(spec, options) {
    const int dims = static_cast<int>(unit().dims());
    startup_ = spec.sampler_options.n_startup_trials > 0 ? spec.sampler_options.n_startup_trials
                                                         : std::clamp(2 * dims, 5, 20);
    single_.name = spec.name;
    single_.sampler = "gp";
    single_.seed = spec.seed;
    single_.space = spec.space;
    single_.max_trials = spec.max_trials;
    single_.parallelism = spec.parallelism;
    single_.sampler_options = spec.sampler_options;
    single_.sampler_options.n_startup_trials = 1;  // the startup is this sampler's (Suggest)
  }

 protected:
  std::vector<double> Suggest(int64_t trial_number, const std::vector<const MoObservation*>& told,
                              const std::vector<const MoObservation*>& pending) override {
    if (completed() < static_cast<size_t>(startup_)) return SobolPoint(static_cast<uint64_t>(trial_number));
    std::mt19937_64 rng = TrialRng(seed(), trial_number, kWeightSalt);
    const std::vector<double> w = SimplexWeights(objectives(), rng);
    std::vector<const ObjectiveVector*> losses;
    for (const MoObservation* o : told) {
      if (o->loss) losses.push_back(&*o->loss);
    }
    const std::vector<ObjectiveVector> normalized = NormalizedObjectives(losses);
    std::unique_ptr<Sampler> gp = MakeGpSampler(single_, Kernel(told));
    size_t k = 0;
    for (const MoObservation* o : told) {
      std::optional<double> scalar;
      if (o->loss) scalar = AugmentedChebyshev(normalized[k++], w);
      gp->TellConstrained(o->number, unit().Decode(o->u), scalar, {o->constraint});
    }
    for (const MoObservation* o : pending) gp->AddPending(o->number, unit().Decode(o->u));
    std::vector<bool> active;
    return unit().Encode(*gp->Ask(trial_number), &active);
  }

 private:
  // The kernel every scalarisation shares until the next refit: fitted as GP-BO refits (GpFitPoint), on the first
  // completed trials by number, scalarised with equal weights over their own normalisation. A function of the told
  // set, as a suggestion must be (a restarted sampler fits the same one).
  const GpKernels& Kernel(const std::vector<const MoObservation*>& told) {
    std::vector<const MoObservation*> done;
    for (const MoObservation* o : told) {
      if (o->loss) done.push_back(o);
    }
    done.resize(GpFitPoint(done.size()));
    std::vector<int64_t> key;
    std::vector<const ObjectiveVector*> losses;
    for (const MoObservation* o : done) key.push_back(o->number), losses.push_back(&*o->loss);
    if (key != kernel_key_) {
      const std::vector<ObjectiveVector> normalized = NormalizedObjectives(losses);
      const std::vector<double> equal(objectives(), 1.0 / static_cast<double>(objectives()));
      std::vector<KernelTrial> trials;
      for (size_t i = 0; i < done.size(); ++i) {
        trials.push_back({unit().Decode(done[i]->u), AugmentedChebyshev(normalized[i], equal), done[i]->constraint});
      }
      kernel_ = FitGpKernels(single_, trials);
      kernel_key_ = std::move(key);
    }
    return kernel_;
  }

  int startup_;
  GpKernels kernel_;
  std::vector<int64_t> kernel_key_;  // the trials kernel_ was fitted on
  SearchSpec single_;  // the single-objective GP's spec: the space, seed and options, one objective minimized
};

}  // namespace

std::unique_ptr<MultiObjectiveSampler> MakeParEgoSampler(const SearchSpec& spec, const MultiObjectiveOptions& options) {
  return std::make_unique<ParEgoSampler>(spec, options);
}

}  // namespace ladder::search::internal
