#pragma once
// Problems for bench/search_vs_optuna (the Python peer, bench/search_vs_optuna_peer.py, defines the same ones
// the same way): four synthetic functions and tabular benchmarks (precomputed results, one random seed's
// value per evaluation). Test-and-benchmark code; reads files, so it lives in bench/, not search/.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "search/core/space.h"
#include "search/core/spec.h"

namespace ladder::bench {

class Problem {
 public:
  virtual ~Problem() = default;
  virtual const search::SearchSpace& space() const = 0;
  virtual bool maximize() const = 0;
  // The (noisy for tables) objective of evaluation `trial` of run `run_seed`.
  virtual double Evaluate(const search::Params& p, uint64_t run_seed, int64_t trial) const = 0;
  // Regret of choosing `p`: distance of its true (mean) value from the optimum, >= 0.
  virtual double Regret(const search::Params& p) const = 0;
  // The true value of `p`: the function's, or a table's mean over its seeds (the worst value when absent).
  virtual double TrueValue(const search::Params& p) const = 0;
  // Tables: the worst single-seed value of the table, and the number in column `name` of p's row (a numeric
  // column's value, not its ordinal index); NaN for a synthetic function or a categorical column.
  virtual double WorstValue() const;
  virtual double ColumnNumber(const search::Params& p, const std::string& name) const;
};

// "branin", "hartmann6", "rosenbrock20", "levy10"; nullptr for another name.
std::unique_ptr<Problem> MakeSyntheticProblem(const std::string& name);
std::vector<std::string> SyntheticProblemNames();

// A table in the bench-data format (README.md there): numeric parameter columns become ordinal int
// parameters over their sorted distinct values (index 0..k-1), other columns categoricals (sorted values).
// Sets *error and returns nullptr when the file cannot be read.
// `slice` keeps some of the seed columns only (bench/search_vs_optuna's warm-start part: an earlier search on the
// odd columns, seed1, seed3, ..., warms one on the even ones, seed0, seed2, ...): evaluations draw from them, means
// and the best mean are over them; a row without a value among them evaluates as the table's worst.
enum class SeedSlice { kAll, kEven, kOdd };
std::unique_ptr<Problem> LoadTableProblem(const std::string& path, std::string* error,
                                          SeedSlice slice = SeedSlice::kAll);

// The spec one bench run uses: the problem's space and direction, `sampler` with `seed`, the budget as max_trials,
// one trial at a time (auto decides from the budget and that parallelism).
search::SearchSpec RunSpec(const Problem& problem, const std::string& sampler, uint64_t seed, int budget);

// The timing space of ladder-search-bench and ladder-search-mo-bench (the peer's is the same): 5 floats (one
// log), 2 ints (one log), 2 categoricals; and its objective.
search::SearchSpec TimingSpec(const std::string& sampler);
double TimingObjective(const search::Params& p);

// The seed column an evaluation reads: SplitMix64((run_seed << 20) ^ trial) % seeds (same in the peer).
uint64_t NoiseIndex(uint64_t run_seed, int64_t trial, uint64_t seeds);

}  // namespace ladder::bench
