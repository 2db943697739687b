#include "search/core/stopping_options.h"

namespace ladder::search {

const char* TrialSchedulerTypeName(TrialSchedulerType type) {
  switch (type) {
    case TrialSchedulerType::kNone: return "none";
    case TrialSchedulerType::kAsha: return "asha";
    case TrialSchedulerType::kHyperband: return "hyperband";
    case TrialSchedulerType::kMedian: return "median";
    case TrialSchedulerType::kPbt: return "pbt";
  }
  return "?";
}

}  // namespace ladder::search
