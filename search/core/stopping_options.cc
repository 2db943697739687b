#include "search/core/stopping_options.h"

namespace ladder::search {

const char* StoppingRuleName(StoppingRuleType type) {
  switch (type) {
    case StoppingRuleType::kNone: return "none";
    case StoppingRuleType::kAsha: return "asha";
    case StoppingRuleType::kHyperband: return "hyperband";
    case StoppingRuleType::kMedian: return "median";
    case StoppingRuleType::kPbt: return "pbt";
  }
  return "?";
}

}  // namespace ladder::search
