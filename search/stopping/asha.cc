// ASHA and Hyperband (brackets of ASHA); the contract is in stopping_rule.h.
#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "search/stopping/stopping_rules.h"

namespace ladder::search::internal {
namespace {

class AshaRule : public StoppingRule {
 public:
  AshaRule(const StoppingOptions& o, bool maximize, int brackets)
      : o_(o), maximize_(maximize), hyperband_(brackets > 1 || o.type == StoppingRuleType::kHyperband) {
    brackets_.resize(static_cast<size_t>(brackets));
    for (int s = 0; s < brackets; ++s) {
      Bracket& b = brackets_[static_cast<size_t>(s)];
      b.rungs = AshaRungs(o, s);
      b.recorded.resize(b.rungs.size());
    }
    cycle_ = brackets > 1 ? HyperbandCycle(o, brackets) : std::vector<int>{0};
  }

  TrialDecision Report(int64_t n, double resource, double value) override {
    Trial& t = trials_[n];
    TrialDecision d;
    if (t.stopped) {
      d.kind = TrialDecision::Kind::kStop;
      d.reason = t.stop_reason;
      return d;
    }
    const double loss = AsLoss(value, maximize_);
    if (Reached(resource, o_.max_resource)) {
      return Stop(t, o_.resource + " " + Fmt(resource) + " reached scheduler.max_resource (" +
                         Fmt(o_.max_resource) + ")");
    }
    Bracket& b = brackets_[static_cast<size_t>(BracketOf(n))];
    // The highest rung the trial has reached decides; a rung already judged (or a higher one) ends the scan:
    // a trial is judged once per rung, at the first report at or past it.
    for (size_t k = b.rungs.size(); k-- > 0;) {
      if (!Reached(resource, b.rungs[k])) continue;
      std::map<int64_t, double>& rung = b.recorded[k];
      if (rung.count(n) != 0) break;
      int better = 0;
      for (const auto& [other, other_loss] : rung) {
        if (other_loss < loss) ++better;
      }
      const int count = static_cast<int>(rung.size()) + 1;
      const int keep = static_cast<int>(std::ceil(count / o_.reduction_factor - 1e-9));
      rung[n] = loss;
      if (better >= keep) {
        // The cutoff: the worst value still kept at this rung.
        std::vector<double> losses;
        for (const auto& [other, other_loss] : rung) losses.push_back(other_loss);
        std::sort(losses.begin(), losses.end());
        const double cutoff = losses[static_cast<size_t>(keep - 1)];
        std::string where = hyperband_ ? "bracket " + std::to_string(BracketOf(n)) + " rung " : "rung ";
        return Stop(t, where + std::to_string(k) + " (" + o_.resource + " " + Fmt(b.rungs[k]) + "): " +
                           Fmt(value) + " is not in the top " + std::to_string(keep) + " of " +
                           std::to_string(count) + " values (the cutoff is " + Fmt(maximize_ ? -cutoff : cutoff) +
                           ")");
      }
      break;
    }
    return d;
  }

  void Complete(int64_t, std::optional<double>) override {}

  void Forget(int64_t n) override {
    trials_.erase(n);
    for (Bracket& b : brackets_) {
      for (auto& rung : b.recorded) rung.erase(n);
    }
  }

 private:
  struct Bracket {
    std::vector<double> rungs;                       // ascending
    std::vector<std::map<int64_t, double>> recorded;  // per rung: trial -> loss at its first report there
  };
  struct Trial {
    bool stopped = false;
    std::string stop_reason;
  };

  int BracketOf(int64_t n) const {
    const auto w = static_cast<int64_t>(cycle_.size());
    return cycle_[static_cast<size_t>(((n % w) + w) % w)];
  }

  TrialDecision Stop(Trial& t, std::string why) {
    t.stopped = true;
    t.stop_reason = std::string(hyperband_ ? "hyperband: " : "asha: ") + why;
    TrialDecision d;
    d.kind = TrialDecision::Kind::kStop;
    d.reason = t.stop_reason;
    return d;
  }

  StoppingOptions o_;
  bool maximize_;
  bool hyperband_;
  std::vector<Bracket> brackets_;
  std::vector<int> cycle_;
  std::map<int64_t, Trial> trials_;
};

}  // namespace

std::unique_ptr<StoppingRule> MakeAshaRule(const StoppingOptions& options, bool maximize,
                                                  int brackets) {
  return std::make_unique<AshaRule>(options, maximize, std::max(1, brackets));
}

}  // namespace ladder::search::internal
