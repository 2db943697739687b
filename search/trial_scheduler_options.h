#pragma once
// The options of a search's trial scheduler (the spec's `scheduler:` mapping) and of its ensemble (the spec's
// `ensemble:` mapping). Pure data; ParseSpec fills and checks them (search/spec.h), MakeTrialScheduler
// (search/trial_scheduler.h) and SelectEnsemble (search/ensemble.h) use them.
#include <cstdint>
#include <string>
#include <vector>

namespace ladder::search {

enum class TrialSchedulerType { kNone, kAsha, kHyperband, kMedian, kPbt };

// "none", "asha", "hyperband", "median" or "pbt": the spelling of `scheduler.type`.
const char* TrialSchedulerTypeName(TrialSchedulerType type);

inline constexpr double kDefaultMinResource = 1;
inline constexpr double kDefaultReductionFactor = 3;
inline constexpr double kDefaultGracePeriod = 1;
inline constexpr int kDefaultMedianMinTrials = 3;
inline constexpr double kDefaultPbtQuantile = 0.25;
inline constexpr double kDefaultResampleProbability = 0.25;

// Each field applies only to the types its comment names (the parser rejects it for the others).
struct TrialSchedulerOptions {
  TrialSchedulerType type = TrialSchedulerType::kNone;
  // The metric that measures how far a trial got: it grows along a trial (epoch, step, samples, or the
  // trial's scale such as its global batch or node count). Reports are (resource, objective) pairs read from
  // one metrics line that carries both.
  std::string resource = "epoch";
  double min_resource = kDefaultMinResource;          // asha, hyperband: r, the first rung
  double max_resource = 0;                            // asha, hyperband (required): R; a trial stops there
  double reduction_factor = kDefaultReductionFactor;  // asha, hyperband: eta > 1; rungs at r * eta^k < R
  int brackets = 0;                                   // hyperband: brackets used (0: all, floor(log_eta(R/r)) + 1)
  double grace_period = kDefaultGracePeriod;          // median: no trial is stopped below this resource
  int min_trials = kDefaultMedianMinTrials;           // median: other trials needed at a resource to compare
  double perturbation_interval = 0;                   // pbt (required): resource between exploit/explore steps
  double quantile = kDefaultPbtQuantile;              // pbt: the bottom/top fraction of the population
  double resample_probability = kDefaultResampleProbability;  // pbt: a perturbed parameter is redrawn instead
  uint64_t seed = 0;                                  // pbt: its random choices (default: the sampler's seed)
};

// `ensemble:`: after the search, greedy ensemble selection (search/ensemble.h) over the best trials' saved
// validation predictions.
enum class EnsembleMetric { kAccuracy, kLogLoss, kMse };
const char* EnsembleMetricName(EnsembleMetric metric);  // "accuracy", "log_loss", "mse"

inline constexpr int kDefaultEnsembleSize = 10;
inline constexpr int kDefaultEnsembleTopK = 20;

struct EnsembleOptions {
  bool enabled = false;                // the spec has an `ensemble:` mapping
  int size = kDefaultEnsembleSize;     // selection rounds (members, counted with repetition)
  int top_k = kDefaultEnsembleTopK;    // candidates: the best top_k completed trials by the objective
  EnsembleMetric metric = EnsembleMetric::kLogLoss;  // what the selection minimizes (accuracy: maximizes)
  // Where a trial saved its validation predictions (the CSV format is in search/ensemble.h); placeholders
  // as in `command` ({checkpoint_dir}, {trial_number}, parameters).
  std::string predictions_file;
  // `retrain`: the command of one workflow step run after the selection, with the members: {ensemble_file}
  // (and LADDER_ENSEMBLE_FILE) name a JSON file listing them (trial ids, weights, parameters, checkpoint
  // directories); {checkpoint_dir}, {search_id}, {trial_id}, {trial_number} are the step's own. Empty: none.
  std::vector<std::string> retrain;
};

}  // namespace ladder::search
