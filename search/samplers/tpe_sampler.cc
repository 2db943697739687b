// TPE: Tree-structured Parzen Estimator (Bergstra et al. 2011), multivariate (Falkner et al. 2018), with
// Optuna 3.x's defaults: 10 startup trials (here Sobol points rather than random ones), gamma = 0.1 capped at
// 25 good trials, 24 candidates drawn from l(x), chosen by the largest log l(x) - log g(x), prior weight 1,
// Optuna's weights (older trials ramp down) and bandwidth rule (parzen.h). Pending trials are constant liars:
// they join the bad group, so g(x) is high around them and the next suggestion goes elsewhere.
//
// Cost: the history is kept per group of coordinates as trials are told (tpe_history.h): the good group is
// read off an ordered set, and past kKernelTermBudget the bad mixture is a stratified subsample with the
// group's weights preserved, so a suggestion's cost stops growing with the history (docs/BENCHMARKS.md:
// bench/search_vs_optuna's 100,000-trial part).
//
// Conditional parameters: the always-active parameters are modelled jointly; each conditional parameter gets
// its own one-dimensional estimator over the trials in which it was active (split into good and bad among
// those trials), added to a candidate's score only when the candidate activates it.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "search/samplers/parzen.h"
#include "search/samplers/sampler_internal.h"
#include "search/samplers/samplers.h"
#include "search/samplers/tpe_candidates.h"
#include "search/samplers/tpe_history.h"

namespace ladder::search::internal {
namespace {

constexpr int kDefaultStartup = 10;
constexpr int kDefaultCandidates = 24;
constexpr double kDefaultGamma = 0.1;
constexpr size_t kMaxGood = 25;
// Cost bound of one suggestion (tpe_history.h): the kernel terms (candidate x component x coordinate) of
// log g(x) over the candidates. 2^19 terms take about 0.4 ms on one core of the bench machine (about 1 ns a
// term) and building the mixture about as much, so a suggestion costs about 1.1 ms at 100,000 trials, under
// the 2 ms the product promises at that size, with room for a loaded machine; with Optuna's 24 candidates and 9 coordinates the bad
// mixture keeps 2,427 components, exact up to that many bad trials.
constexpr size_t kKernelTermBudget = size_t{1} << 19;
constexpr size_t kMinComponents = 256;

class TpeSampler : public HistorySampler {
 public:
  explicit TpeSampler(const SearchSpec& spec) : HistorySampler(spec) {
    const SamplerOptions& o = spec.sampler_options;
    startup_ = o.n_startup_trials > 0 ? o.n_startup_trials : kDefaultStartup;
    candidates_ = o.n_ei_candidates > 0 ? o.n_ei_candidates : kDefaultCandidates;
    gamma_ = o.gamma > 0 ? o.gamma : kDefaultGamma;
    for (size_t i = 0; i < unit().dims(); ++i) (unit().parent(i) < 0 ? joint_ : conditional_).push_back(i);
    dims_.push_back(joint_);
    for (size_t d : conditional_) dims_.push_back({d});
    history_.resize(dims_.size());
  }

 protected:
  void OnTold(const Observation& o) override {
    for (size_t g = 0; g < dims_.size(); ++g) {
      if (o.loss && Has(o, g)) history_[g].Add(&o);
    }
  }
  void OnForget(const Observation& o) override {
    for (size_t g = 0; g < dims_.size(); ++g) {
      if (o.loss && Has(o, g)) history_[g].Remove(&o);
    }
  }

  std::vector<double> Suggest(int64_t trial_number, const std::vector<const Observation*>& /*told*/,
                              const std::vector<const Observation*>& pending) override {
    if (completed() < static_cast<size_t>(startup_)) {
      std::vector<double> u = SobolPoint(static_cast<uint64_t>(trial_number));
      SnapAll(&u);
      return u;
    }
    std::mt19937_64 rng = TrialRng(seed(), trial_number, 0x7e5);
    // The good and bad groups of one group of coordinates (group 0: the joint ones; 1 + i: conditional_[i]):
    // its completed trials plus the pending ones that have them (constant liar: worse than any completed one).
    auto split = [&](size_t group) {
      std::vector<const Observation*> liars;
      for (const Observation* o : pending) {
        if (Has(*o, group)) liars.push_back(o);
      }
      std::mt19937_64 subsample = TrialRng(seed(), trial_number, 0x5b5a + group);
      TpeHistory::Split ts =
          history_[group].Make(liars, gamma_, kMaxGood, MaxComponents(dims_[group].size()), subsample);
      TpeGroups s;
      for (const Observation* o : ts.good.trials) s.good.push_back(&o->u);
      for (const Observation* o : ts.bad.trials) s.bad.push_back(&o->u);
      s.good_w = std::move(ts.good.weights);
      s.bad_w = std::move(ts.bad.weights);
      return s;
    };
    return ChooseTpeCandidate(unit(), joint_, conditional_, split, candidates_, rng);
  }

 private:
  int startup_;
  int candidates_;
  double gamma_;
  // Whether trial o has every coordinate of a group.
  bool Has(const Observation& o, size_t group) const {
    return std::all_of(dims_[group].begin(), dims_[group].end(), [&](size_t d) { return bool(o.active[d]); });
  }
  // The bad mixture's bound for a group of `coordinates` (tpe_history.h): each candidate's log g(x) costs
  // components x coordinates kernel terms, so components = kKernelTermBudget / (candidates x coordinates),
  // at least kMinComponents.
  size_t MaxComponents(size_t coordinates) const {
    const size_t per_component = static_cast<size_t>(candidates_) * std::max<size_t>(coordinates, 1);
    return std::max(kMinComponents, kKernelTermBudget / per_component);
  }

  std::vector<size_t> joint_, conditional_;
  std::vector<std::vector<size_t>> dims_;  // per group: 0 the joint coordinates, 1 + i conditional_[i]
  std::vector<TpeHistory> history_;        // per group, kept as trials are told
};

}  // namespace

std::unique_ptr<Sampler> MakeTpeSampler(const SearchSpec& spec) { return std::make_unique<TpeSampler>(spec); }

}  // namespace ladder::search::internal
