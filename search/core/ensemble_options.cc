#include "search/core/ensemble_options.h"

namespace ladder::search {

const char* EnsembleMetricName(EnsembleMetric metric) {
  switch (metric) {
    case EnsembleMetric::kAccuracy: return "accuracy";
    case EnsembleMetric::kLogLoss: return "log_loss";
    case EnsembleMetric::kMse: return "mse";
  }
  return "?";
}

}  // namespace ladder::search
