// The `scales:` sampler (search/core/scales.h): the grid, then bracketing extensions per batch.
#include <algorithm>
#include <cmath>
#include <map>

#include "search/samplers/samplers.h"
#include "search/core/scales.h"

namespace ladder::search::internal {
namespace {

class ScalesSampler : public Sampler {
 public:
  explicit ScalesSampler(const SearchSpec& spec)
      : o_(spec.scales), maximize_(spec.objective.maximize), grid_(ScalesGrid(spec.scales)) {}

  std::optional<Params> Ask(int64_t n) override {
    waiting_ = false;
    if (auto it = trials_.find(n); it != trials_.end()) return it->second.params;
    if (n < static_cast<int64_t>(grid_.size())) return Record(n, grid_[static_cast<size_t>(n)]);
    bool pending = false;
    for (int64_t b : o_.batches) {
      std::vector<const Trial*> mine;
      int extensions = 0;
      bool batch_pending = false;
      for (const auto& [num, t] : trials_) {
        if (std::get<int64_t>(t.params.at(kScalesBatchParam)) != b) continue;
        mine.push_back(&t);
        if (num >= static_cast<int64_t>(grid_.size())) ++extensions;
        batch_pending |= !t.told;
      }
      pending |= batch_pending;
      if (batch_pending || extensions >= o_.extend || mine.empty()) continue;
      // The best completed learning rate, and the range tried (failed runs included: a diverged rate brackets).
      const Trial* best = nullptr;
      double lo = INFINITY, hi = 0;
      for (const Trial* t : mine) {
        const double lr = std::get<double>(t->params.at(kScalesLrParam));
        lo = std::min(lo, lr);
        hi = std::max(hi, lr);
        if (!t->value || !std::isfinite(*t->value)) continue;
        if (!best || (maximize_ ? *t->value > *best->value : *t->value < *best->value)) best = t;
      }
      if (!best) continue;
      const double lr = std::get<double>(best->params.at(kScalesLrParam));
      const double step = std::exp2(1.0 / o_.per_octave);
      if (lr == lo) return Record(n, {{kScalesBatchParam, b}, {kScalesLrParam, lo / step}});
      if (lr == hi) return Record(n, {{kScalesBatchParam, b}, {kScalesLrParam, hi * step}});
    }
    waiting_ = pending;
    return std::nullopt;
  }

  void Tell(int64_t n, const Params& params, std::optional<double> objective) override {
    Trial& t = trials_[n];
    t.params = params;
    t.told = true;
    t.value = objective;
  }
  void AddPending(int64_t n, const Params& params) override {
    Trial& t = trials_[n];
    t.params = params;
  }
  bool Waiting() const override { return waiting_; }

 private:
  struct Trial {
    Params params;
    bool told = false;
    std::optional<double> value;
  };
  Params Record(int64_t n, Params p) {
    trials_[n].params = p;
    return p;
  }

  ScalesOptions o_;
  bool maximize_;
  std::vector<Params> grid_;
  std::map<int64_t, Trial> trials_;  // asked, pending or told, by trial number
  bool waiting_ = false;
};

}  // namespace

std::unique_ptr<Sampler> MakeScalesSampler(const SearchSpec& spec) { return std::make_unique<ScalesSampler>(spec); }

}  // namespace ladder::search::internal
