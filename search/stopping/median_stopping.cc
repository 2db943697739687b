// The median stopping rule; the contract is in stopping_rule.h.
#include <algorithm>
#include <map>
#include <vector>

#include "search/stopping/stopping_rules.h"

namespace ladder::search::internal {
namespace {

class MedianStopping : public StoppingRule {
 public:
  MedianStopping(const StoppingOptions& o, bool maximize) : o_(o), maximize_(maximize) {}

  TrialDecision Report(int64_t n, double resource, double value) override {
    Trial& t = trials_[n];
    TrialDecision d;
    if (t.stopped) {
      d.kind = TrialDecision::Kind::kStop;
      d.reason = t.stop_reason;
      return d;
    }
    // A report at or below the last one: the trial went back; its curve is cut there.
    while (!t.resources.empty() && t.resources.back() >= resource) {
      t.resources.pop_back();
      t.sums.pop_back();
      t.bests.pop_back();
    }
    const double loss = AsLoss(value, maximize_);
    t.resources.push_back(resource);
    t.sums.push_back((t.sums.empty() ? 0.0 : t.sums.back()) + loss);
    t.bests.push_back(t.bests.empty() ? loss : std::min(t.bests.back(), loss));
    if (!Reached(resource, o_.grace_period)) return d;

    std::vector<double> averages;
    for (const auto& [m, other] : trials_) {
      if (m == n || other.resources.empty() || !Reached(other.resources.back(), resource)) continue;
      // Its reports at resources <= this one (with the same tolerance as rungs).
      auto end = std::upper_bound(other.resources.begin(), other.resources.end(),
                                  resource + kResourceTolerance * std::abs(resource));
      const auto count = end - other.resources.begin();
      if (count == 0) continue;
      averages.push_back(other.sums[static_cast<size_t>(count - 1)] / static_cast<double>(count));
    }
    if (static_cast<int>(averages.size()) < o_.min_trials) return d;
    std::sort(averages.begin(), averages.end());
    const size_t h = averages.size() / 2;
    const double median = averages.size() % 2 == 1 ? averages[h] : 0.5 * (averages[h - 1] + averages[h]);
    const double best = t.bests.back();
    if (best > median) {
      t.stopped = true;
      auto shown = [&](double l) { return Fmt(maximize_ ? -l : l); };
      t.stop_reason = "median: at " + o_.resource + " " + Fmt(resource) + " the best value so far (" + shown(best) +
                      ") is worse than the median running average of " + std::to_string(averages.size()) +
                      " other trials (" + shown(median) + ")";
      d.kind = TrialDecision::Kind::kStop;
      d.reason = t.stop_reason;
    }
    return d;
  }

  void Complete(int64_t, std::optional<double>) override {}
  void Forget(int64_t n) override { trials_.erase(n); }

 private:
  struct Trial {
    std::vector<double> resources;  // ascending
    std::vector<double> sums;       // prefix sums of the losses
    std::vector<double> bests;      // prefix minima of the losses
    bool stopped = false;
    std::string stop_reason;
  };

  StoppingOptions o_;
  bool maximize_;
  std::map<int64_t, Trial> trials_;
};

}  // namespace

std::unique_ptr<StoppingRule> MakeMedianStopping(const StoppingOptions& options, bool maximize) {
  return std::make_unique<MedianStopping>(options, maximize);
}

}  // namespace ladder::search::internal
