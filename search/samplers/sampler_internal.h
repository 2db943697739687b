#pragma once
// Internal to search/: random numbers that are the same with every standard library, and the bookkeeping
// shared by the model-based samplers (HistorySampler).
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <vector>

#include "search/samplers/sampler.h"
#include "search/core/unit_space.h"

namespace ladder::search::internal {

inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The generator of one trial: a function of (seed, trial_number, salt) only.
inline std::mt19937_64 TrialRng(uint64_t seed, int64_t trial_number, uint64_t salt = 0) {
  return std::mt19937_64(SplitMix64(SplitMix64(seed) ^ SplitMix64(static_cast<uint64_t>(trial_number) + 1)) ^
                         SplitMix64(salt));
}

// The conversions below are written out (not std::*_distribution) so samples are the same with every
// standard library.
inline double Uniform01(std::mt19937_64& rng) {  // [0, 1)
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

inline uint64_t UniformBelow(std::mt19937_64& rng, uint64_t n) {  // [0, n), n >= 1, unbiased
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do {
    x = rng();
  } while (x >= limit);
  return x % n;
}

inline double StandardNormal(std::mt19937_64& rng) {  // Box–Muller, one of the pair
  double u1 = 1.0 - Uniform01(rng), u2 = Uniform01(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

// How far a trial broke its constraints, as Optuna's constrained samplers rank infeasible trials: the sum of the
// positive signed values (0: feasible; a value that is not a number counts as broken without bound, as
// search::Infeasible counts it broken). The single- and multi-objective samplers share it.
inline double Violation(const std::vector<double>& signed_values) {
  double sum = 0;
  for (double v : signed_values) sum += v <= 0 ? 0 : (v > 0 ? v : HUGE_VAL);
  return sum;
}

// One trial the sampler knows of, in unit-cube coordinates.
struct Observation {
  int64_t number = 0;
  std::vector<double> u;       // UnitSpace coordinates (inactive parameters: 0.5)
  std::vector<bool> active;    // which parameters the trial has
  std::optional<double> loss;  // objective turned into a loss (negated when maximizing); nullopt: failed
  double violation = 0;        // how far it broke the spec's constraints (sum over them); 0: feasible
  double constraint = 0;       // the largest of its constraints' signed values (<= 0: feasible; 0 without any)
};

// Base of the model-based samplers. Keeps the told trials and the pending ones (asked, not told) by trial
// number, so what a suggestion depends on is a set, not the order of calls:
//   Ask(n) = Suggest(seed, n, told trials sorted by number, pending trials other than n sorted by number).
// A restarted coordinator that replays Tell for the finished trials (and AddPending for the running ones)
// gets the same suggestions as one that never stopped. Ask(n) for an n that is pending returns the
// configuration it gave before; for an n already told, the told configuration.
// The told trials are kept in trial-number order as they are told (an append in a search that tells them in
// order), so an Ask costs nothing that grows with the history here; what a Suggest reads of it is its own.
// Single-threaded, like every Sampler.
class HistorySampler : public Sampler {
 public:
  explicit HistorySampler(const SearchSpec& spec);

  std::optional<Params> Ask(int64_t trial_number) final;
  void Tell(int64_t trial_number, const Params& params, std::optional<double> objective) final;
  void TellConstrained(int64_t trial_number, const Params& params, std::optional<double> objective,
                       const std::vector<double>& constraints) final;
  void AddPending(int64_t trial_number, const Params& params) final;

 protected:
  // Completed (loss set) and failed trials, by trial number; and the pending ones other than the one asked.
  virtual std::vector<double> Suggest(int64_t trial_number, const std::vector<const Observation*>& told,
                                      const std::vector<const Observation*>& pending) = 0;
  // Called when the told set changed (a sampler with a cached model drops it), with the stored observation
  // (its address stays valid while the sampler lives).
  virtual void OnTold(const Observation&) {}
  // Called before a told trial is told again (its stored observation is then overwritten in place).
  virtual void OnForget(const Observation&) {}
  // The number of told trials with a loss (completed, not failed).
  size_t completed() const { return completed_; }

  const UnitSpace& unit() const { return unit_; }
  uint64_t seed() const { return seed_; }
  // The Sobol point (Owen-scrambled by the seed) for `index`.
  std::vector<double> SobolPoint(uint64_t index) const;
  // Snap coordinates to representable values.
  void SnapAll(std::vector<double>* u) const;

 private:
  Observation Make(int64_t number, const Params& params, std::optional<double> loss,
                   const std::vector<double>& constraints = {}) const;

  UnitSpace unit_;
  uint64_t seed_;
  bool maximize_;
  std::map<int64_t, Observation> told_;
  std::vector<const Observation*> told_order_;  // told_'s observations by trial number, kept as trials are told
  size_t completed_ = 0;
  std::map<int64_t, Observation> pending_;
  std::map<int64_t, Params> pending_params_;
};

}  // namespace ladder::search::internal
