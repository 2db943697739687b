#pragma once
// Internal to search/multiobjective/: the bookkeeping of the model-based multi-objective samplers, as
// HistorySampler (search/samplers/sampler_internal.h) keeps it for one objective: the told trials and the
// pending ones by trial number, so what a suggestion depends on is a set, not the order of calls:
//   Ask(n) = Suggest(n, told trials by number, pending trials other than n by number).
// Ask(n) for a pending n returns its configuration; for a told n, the told one. Single-threaded.
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "search/core/unit_space.h"
#include "search/multiobjective/mo_sampler.h"
#include "search/multiobjective/pareto.h"

namespace ladder::search::internal {

struct MoObservation {
  int64_t number = 0;
  std::vector<double> u;                // UnitSpace coordinates (inactive parameters: 0.5)
  std::vector<bool> active;             // which parameters the trial has
  std::optional<ObjectiveVector> loss;  // every objective minimized (maximized ones negated); nullopt: failed
  double violation = 0;                 // the sum of its positive constraint values (search::Violation); 0: feasible
  double constraint = 0;                // the largest of its constraints' signed values (0 without any)
};

class MoHistorySampler : public MultiObjectiveSampler {
 public:
  MoHistorySampler(const SearchSpec& spec, const MultiObjectiveOptions& options);

  std::optional<Params> Ask(int64_t trial_number) final;
  void Tell(int64_t trial_number, const Params& params, std::optional<std::vector<double>> objectives) final;
  void TellConstrained(int64_t trial_number, const Params& params, std::optional<std::vector<double>> objectives,
                       const std::vector<double>& constraints) final;
  void AddPending(int64_t trial_number, const Params& params) final;

 protected:
  virtual std::vector<double> Suggest(int64_t trial_number, const std::vector<const MoObservation*>& told,
                                      const std::vector<const MoObservation*>& pending) = 0;
  // The told set changed: o was added (its address stays valid while the sampler lives) ...
  virtual void OnTold(const MoObservation& /*o*/) {}
  // ... or is about to be overwritten in place (told again).
  virtual void OnForget(const MoObservation& /*o*/) {}

  size_t completed() const { return completed_; }
  size_t objectives() const { return maximize_.size(); }
  const UnitSpace& unit() const { return unit_; }
  uint64_t seed() const { return seed_; }
  // The Sobol point (Owen-scrambled by the seed) for `index`, snapped to representable values.
  std::vector<double> SobolPoint(uint64_t index) const;
  void SnapAll(std::vector<double>* u) const;

 private:
  MoObservation Make(int64_t number, const Params& params, const std::optional<std::vector<double>>& values,
                     const std::vector<double>& constraints = {}) const;

  UnitSpace unit_;
  uint64_t seed_;
  std::vector<bool> maximize_;
  std::map<int64_t, MoObservation> told_;
  std::vector<const MoObservation*> told_order_;  // told_ by trial number
  size_t completed_ = 0;
  std::map<int64_t, MoObservation> pending_;
  std::map<int64_t, Params> pending_params_;
};

// The samplers behind MakeMultiObjectiveSampler.
std::unique_ptr<MultiObjectiveSampler> MakeNsga2Sampler(const SearchSpec& spec, const MultiObjectiveOptions& options);
std::unique_ptr<MultiObjectiveSampler> MakeMoTpeSampler(const SearchSpec& spec, const MultiObjectiveOptions& options);
std::unique_ptr<MultiObjectiveSampler> MakeParEgoSampler(const SearchSpec& spec, const MultiObjectiveOptions& options);

}  // namespace ladder::search::internal
