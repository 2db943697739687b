#pragma once
// Problems with several objectives for bench/search_vs_optuna's multi-objective part (the Python peer,
// bench/search_vs_optuna_mo_peer.py, defines the same ones the same way). Every objective is minimized.
//   zdt1, zdt2, zdt3  Zitzler-Deb-Thiele, 10 variables in [0, 1] (the standard 30 make Optuna's MOTPE take
//                     about 2 minutes a run); reference point (1.1, 11): g <= 10, so every point is inside
//   dtlz2             Deb-Thiele-Laumanns-Zitzler DTLZ2, 3 objectives, 7 variables (k = 5); reference (2.5, 2.5,
//                     2.5) (random points have 1 + g near 1.4)
//   c2dtlz2           DTLZ2 with 2 objectives, 6 variables (k = 5), subject to Deb and Jain's C2 constraint
//                     (C2-DTLZ2): within r = 0.2 of (1, 0), of (0, 1) or of (1/sqrt 2, 1/sqrt 2) in objective
//                     space, so the feasible front is three arcs (38% of the quarter circle) and few random points
//                     are feasible; reference (1.1, 1.1)
//   czdt1             ZDT1 (10 variables) subject to x0 >= 0.3 (30% of the space, and the front's left part,
//                     infeasible); reference (1.1, 11). Only the constrained comparison runs these two (Constraints)
//   a table           (error, training cost): error = the table's value (negated when it is maximized, so
//                     accuracy becomes its negation: the hypervolume is that of 1 - accuracy), one seed's value per
//                     evaluation as in the single-objective part, the seeds' mean for the hypervolume; cost = a
//                     FLOP proxy from the row's parameters divided by the table's largest (below); reference: the
//                     median error of the table's configurations (their seeds' mean) and cost 1.01, so the
//                     hypervolume measures the better half of the table, where the searches differ.
// Cost models (multiply-adds per sample of the hidden layers, times 1 + 32 / batch for the per-step overhead that
// small batches pay; the number of samples and epochs is fixed within a table):
//   hpobench-* (alpha, batch_size, depth, learning_rate_init, width):  depth x width^2 x (1 + 32 / batch_size)
//   hpolib-*   (..., batch_size, ..., n_units_1, n_units_2):            (n_units_1 x n_units_2 + 16 (n_units_1 +
//                                                                        n_units_2)) x (1 + 32 / batch_size)
// Test-and-benchmark code; reads files, so it lives in bench/.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "search/core/space.h"

namespace ladder::bench {

class MoProblem {
 public:
  virtual ~MoProblem() = default;
  virtual const search::SearchSpace& space() const = 0;
  // The objectives seen by a sampler for evaluation `trial` of run `run_seed` (noisy for tables).
  virtual std::vector<double> Evaluate(const search::Params& p, uint64_t run_seed, int64_t trial) const = 0;
  // The objectives a hypervolume is measured on (a table's mean).
  virtual std::vector<double> TrueValues(const search::Params& p) const = 0;
  virtual std::vector<double> Reference() const = 0;
  // The signed constraint values of a configuration (<= 0 holds: Sampler::TellConstrained's convention); empty for
  // an unconstrained problem.
  virtual std::vector<double> Constraints(const search::Params& /*p*/) const { return {}; }
};

// zdt1, zdt2, zdt3, dtlz2, c2dtlz2, czdt1; nullptr for another name.
std::unique_ptr<MoProblem> MakeSyntheticMoProblem(const std::string& name);
std::vector<std::string> SyntheticMoProblemNames();
// A bench-data table with a cost model (above); nullptr and *error when it cannot be read or has none.
std::unique_ptr<MoProblem> LoadTableMoProblem(const std::string& path, std::string* error);

}  // namespace ladder::bench
