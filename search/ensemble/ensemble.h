#pragma once
// Ensemble selection: greedy forward selection with replacement (Caruana et al. 2004, "Ensemble selection from
// libraries of models") over the validation predictions of the best trials of a search.
//
// Each candidate is one trial's predictions on the SAME validation examples, in the same order: a matrix with
// one row per example and one column per class (probabilities) for classification, or one column (the
// prediction) for regression. The ensemble's prediction is the plain average of its members' matrices, a
// member counted as often as it was picked. Each round adds the candidate (any of them, again or not) whose
// addition gives the best metric; ties go to the earlier candidate (pass them best-first). After `size`
// rounds the best of the nested ensembles is returned (round 1 is the best single trial, so the ensemble is
// never worse than it on the selection data).
//
// Metrics: accuracy (argmax of the averaged probabilities, the lowest class on ties; maximized), log_loss
// (-mean log p[label], p clipped to [1e-15, 1]; minimized), mse (mean (prediction - label)^2 over the single
// column; minimized). Classification labels are integers 0..cols-1.
//
// The predictions file (server/predictions_file.h reads it): CSV, one line per validation example, the label first and then
// the prediction columns, e.g. for 3 classes:
//     label,p0,p1,p2          <- optional header: a first line whose first field is not a number
//     2,0.1,0.2,0.7
//     0,0.8,0.15,0.05
// Numbers are decimal (1e-3 is fine); every line has the same number of fields; blank lines are skipped.
// Pure functions: the coordinator reads the predictions files (server/predictions_file.h).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "search/core/ensemble_options.h"

namespace ladder::search {

struct PredictionMatrix {
  size_t rows = 0, cols = 0;
  std::vector<double> values;  // row-major, rows * cols
  double at(size_t r, size_t c) const { return values[r * cols + c]; }
};

// One predictions file: the labels and the predictions, row by row.
struct ValidationPredictions {
  std::vector<double> labels;
  PredictionMatrix predictions;
};

struct PredictionsReadResult {
  std::optional<ValidationPredictions> value;  // set when error is empty
  std::string error;                           // "path:line: message" (or "path: message")
};

// Parses the CSV text above; `path` names it in errors.
PredictionsReadResult ParsePredictionsCsv(std::string_view text, std::string_view path);

struct EnsembleCandidate {
  int64_t trial_number = 0;
  PredictionMatrix predictions;
};

struct EnsembleMember {
  int64_t trial_number = 0;
  int count = 0;       // times picked
  double weight = 0;   // count / rounds of the returned ensemble
};

struct EnsembleResult {
  std::string error;                      // inconsistent inputs (names the trial); the rest is unset then
  std::vector<EnsembleMember> members;    // by weight, descending (then by candidate order)
  std::vector<int64_t> picks;             // the trial picked in each round of the returned ensemble
  double ensemble_metric = 0;             // of the returned ensemble
  int64_t best_single_trial = -1;         // the best candidate alone, by the metric
  double best_single_metric = 0;
  std::vector<double> metric_by_round;    // after rounds 1..size (all of them, also past the returned one)
  bool ok() const { return error.empty(); }
};

// `labels` are the validation labels every candidate was scored on; `size` >= 1 rounds.
EnsembleResult SelectEnsemble(const std::vector<EnsembleCandidate>& candidates, const std::vector<double>& labels,
                              EnsembleMetric metric, int size);

// The same from whole predictions files (trial number, what ParsePredictionsCsv gave), best trial first: every
// file must hold the same labels in the same order (the same validation examples); an error names the trial.
struct TrialPredictions {
  int64_t trial_number = 0;
  ValidationPredictions predictions;
};
EnsembleResult SelectEnsemble(const std::vector<TrialPredictions>& trials, EnsembleMetric metric, int size);

// The metric of one prediction matrix (or an average) against `labels`; shapes must match (not checked).
double EnsembleScore(const PredictionMatrix& predictions, const std::vector<double>& labels, EnsembleMetric metric);

// Whether a larger value of `metric` is better (accuracy).
inline bool HigherIsBetter(EnsembleMetric metric) { return metric == EnsembleMetric::kAccuracy; }

}  // namespace ladder::search
