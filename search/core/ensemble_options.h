#pragma once
// The options of a search's ensemble (the spec's `ensemble:` mapping). Pure data; ParseSpec fills and checks them
// (search/spec/spec_reader.h), SelectEnsemble (search/ensemble/ensemble.h) uses them.
#include <string>
#include <vector>

namespace ladder::search {

enum class EnsembleMetric { kAccuracy, kLogLoss, kMse };
const char* EnsembleMetricName(EnsembleMetric metric);  // "accuracy", "log_loss", "mse"

inline constexpr int kDefaultEnsembleSize = 10;
inline constexpr int kDefaultEnsembleTopK = 20;

struct EnsembleOptions {
  bool enabled = false;                // the spec has an `ensemble:` mapping
  int size = kDefaultEnsembleSize;     // selection rounds (members, counted with repetition)
  int top_k = kDefaultEnsembleTopK;    // candidates: the best top_k completed trials by the objective
  EnsembleMetric metric = EnsembleMetric::kLogLoss;  // what the selection minimizes (accuracy: maximizes)
  // Where a trial saved its validation predictions (the CSV format is in search/ensemble/ensemble.h); placeholders
  // as in `command` ({checkpoint_dir}, {trial_number}, parameters).
  std::string predictions_file;
  // `retrain`: the command of one workflow step run after the selection, with the members: {ensemble_file}
  // (and LADDER_ENSEMBLE_FILE) name a JSON file listing them (trial ids, weights, parameters, checkpoint
  // directories); {checkpoint_dir}, {search_id}, {trial_id}, {trial_number} are the step's own. Empty: none.
  std::vector<std::string> retrain;
};

}  // namespace ladder::search
