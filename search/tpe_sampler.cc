// TPE: Tree-structured Parzen Estimator (Bergstra et al. 2011), multivariate (Falkner et al. 2018), with
// Optuna 3.x's defaults: 10 startup trials (here Sobol points rather than random ones), gamma = 0.1 capped at
// 25 good trials, 24 candidates drawn from l(x), chosen by the largest log l(x) - log g(x), prior weight 1,
// Optuna's weights (older trials ramp down) and bandwidth rule (parzen.h). Pending trials are constant liars:
// they join the bad group, so g(x) is high around them and the next suggestion goes elsewhere.
//
// Conditional parameters: the always-active parameters are modelled jointly; each conditional parameter gets
// its own one-dimensional estimator over the trials in which it was active (split into good and bad among
// those trials), added to a candidate's score only when the candidate activates it.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "search/parzen.h"
#include "search/sampler_internal.h"
#include "search/samplers.h"

namespace ladder::search::internal {
namespace {

constexpr int kDefaultStartup = 10;
constexpr int kDefaultCandidates = 24;
constexpr double kDefaultGamma = 0.1;
constexpr size_t kMaxGood = 25;

class TpeSampler : public HistorySampler {
 public:
  explicit TpeSampler(const SearchSpec& spec) : HistorySampler(spec) {
    const SamplerOptions& o = spec.sampler_options;
    startup_ = o.n_startup_trials > 0 ? o.n_startup_trials : kDefaultStartup;
    candidates_ = o.n_ei_candidates > 0 ? o.n_ei_candidates : kDefaultCandidates;
    gamma_ = o.gamma > 0 ? o.gamma : kDefaultGamma;
    for (size_t i = 0; i < unit().dims(); ++i) (unit().parent(i) < 0 ? joint_ : conditional_).push_back(i);
  }

 protected:
  std::vector<double> Suggest(int64_t trial_number, const std::vector<const Observation*>& told,
                              const std::vector<const Observation*>& pending) override {
    size_t completed = 0;
    for (const Observation* o : told) completed += o->loss ? 1 : 0;
    if (completed < static_cast<size_t>(startup_)) {
      std::vector<double> u = SobolPoint(static_cast<uint64_t>(trial_number));
      SnapAll(&u);
      return u;
    }
    std::mt19937_64 rng = TrialRng(seed(), trial_number, 0x7e5);

    // Trials considered for one set of coordinates: the completed ones that have all of them, plus the
    // pending ones (constant liar: worse than any completed trial).
    struct Split {
      std::vector<const std::vector<double>*> good, bad;
      std::vector<double> good_w, bad_w;
    };
    auto split = [&](const std::vector<size_t>& dims) {
      auto has = [&](const Observation* o) {
        return std::all_of(dims.begin(), dims.end(), [&](size_t d) { return bool(o->active[d]); });
      };
      std::vector<const Observation*> done, liars;
      for (const Observation* o : told) {
        if (o->loss && has(o)) done.push_back(o);
      }
      for (const Observation* o : pending) {
        if (has(o)) liars.push_back(o);
      }
      const size_t n = done.size() + liars.size();
      size_t n_good = std::min({static_cast<size_t>(std::ceil(gamma_ * static_cast<double>(n))), kMaxGood, done.size()});
      // The good trials are the first n_good by (loss, number); found with nth_element, then both groups are
      // read off `done`, which is in trial-number order, so no sort of the (large) bad group is needed.
      std::vector<std::pair<double, int64_t>> keys;
      keys.reserve(done.size());
      for (const Observation* o : done) keys.emplace_back(*o->loss, o->number);
      std::pair<double, int64_t> cut{-std::numeric_limits<double>::infinity(), std::numeric_limits<int64_t>::min()};
      if (n_good > 0) {
        std::nth_element(keys.begin(), keys.begin() + static_cast<long>(n_good - 1), keys.end());
        cut = keys[n_good - 1];
      }
      std::vector<const Observation*> good, bad;
      good.reserve(n_good);
      bad.reserve(n - n_good);
      for (const Observation* o : done) {
        (n_good > 0 && std::make_pair(*o->loss, o->number) <= cut ? good : bad).push_back(o);
      }
      const auto mid = static_cast<long>(bad.size());
      bad.insert(bad.end(), liars.begin(), liars.end());  // pending trials, in trial-number order too
      auto by_number = [](const Observation* a, const Observation* b) { return a->number < b->number; };
      std::inplace_merge(bad.begin(), bad.begin() + mid, bad.end(), by_number);
      Split s;
      for (const Observation* o : good) s.good.push_back(&o->u);
      for (const Observation* o : bad) s.bad.push_back(&o->u);
      s.good_w = DefaultTpeWeights(good.size());
      s.bad_w = DefaultTpeWeights(bad.size());
      return s;
    };

    Split js = split(joint_);
    ParzenEstimator l(unit(), joint_, js.good, js.good_w), g(unit(), joint_, js.bad, js.bad_w);
    std::vector<std::vector<double>> cand(static_cast<size_t>(candidates_), std::vector<double>(unit().dims(), 0.5));
    std::vector<double> score(cand.size());
    for (size_t c = 0; c < cand.size(); ++c) {
      l.Sample(rng, &cand[c]);
      score[c] = l.LogPdf(cand[c]) - g.LogPdf(cand[c]);
    }
    for (size_t d : conditional_) {
      Split cs = split({d});
      bool any = !cs.good.empty() || !cs.bad.empty();
      ParzenEstimator lc(unit(), {d}, cs.good, cs.good_w), gc(unit(), {d}, cs.bad, cs.bad_w);
      for (size_t c = 0; c < cand.size(); ++c) {
        if (!unit().ActiveUnder(d, cand[c])) continue;
        if (!any) {  // never seen active: its prior
          cand[c][d] = unit().Snap(d, Uniform01(rng));
          continue;
        }
        lc.Sample(rng, &cand[c]);
        score[c] += lc.LogPdf(cand[c]) - gc.LogPdf(cand[c]);
      }
    }
    size_t best = static_cast<size_t>(std::max_element(score.begin(), score.end()) - score.begin());
    return cand[best];
  }

 private:
  int startup_;
  int candidates_;
  double gamma_;
  std::vector<size_t> joint_, conditional_;
};

}  // namespace

std::unique_ptr<Sampler> MakeTpeSampler(const SearchSpec& spec) { return std::make_unique<TpeSampler>(spec); }

}  // namespace ladder::search::internal
