// Multi-objective TPE (Ozaki et al. 2020; Optuna 3.1's TPESampler with several objectives), on ladder's TPE
// machinery (search/samplers/tpe_candidates.h: the same candidates and score as single-objective TPE; parzen.h):
//   - 10 startup trials are Sobol points;
//   - for each group of coordinates (the always-active ones jointly; each conditional parameter alone, over the
//     trials in which it is active), n = completed + pending trials of the group, n_good =
//     min(ceil(gamma n), 25, completed) with gamma 0.1; the good group is the first n_good completed trials by
//     non-domination rank, the front that does not fit whole cut by greedy hypervolume contribution (Optuna's
//     HSSP), read off TopRanks (top_ranks.h) so it costs nothing that grows with the history;
//   - the good trials weigh by their hypervolume contribution within the good group (divided by the largest,
//     Optuna's _calculate_weights_below_for_multi_objective); the bad group is every other completed trial and
//     the pending ones (constant liars), in trial-number order, with Optuna's weights (older trials ramp down);
//   - 24 candidates drawn from l(x), the one with the largest log l(x) - log g(x) is suggested.
// Constraints (MultiObjectiveSampler::TellConstrained), as Optuna's TPESampler(constraints_func) with several
// objectives: the good group is the first n_good FEASIBLE trials by the rule above; when fewer than n_good trials
// are feasible, the rest of it is the least violating infeasible trials, by (violation, trial number): the order in
// which single-objective constrained TPE ranks them after every feasible trial (completed_trials.h). Every other
// trial, feasible or not, is in the bad group. The good trials' weights are the feasible ones' hypervolume
// contributions among themselves, and 1 for an infeasible one (the weight single-objective constrained TPE gives
// it): while few trials are feasible, l(x) is drawn toward the least violating ones, not toward the prior.
// Cost: past 2^19 kernel terms the bad mixture is a stratified subsample with the group's weight kept (as
// single-objective TPE's, tpe_history.h; exact below that: 2,427 components with 9 coordinates), but building
// it still reads every bad trial, so a suggestion grows slowly with the history: docs/BENCHMARKS.md has it at
// 10,000 trials; auto picks NSGA-II past kAutoMoTpeMaxTrials.
#include <algorithm>
#include <cmath>
#include <set>

#include "search/multiobjective/mo_history.h"
#include "search/multiobjective/top_ranks.h"
#include "search/samplers/parzen.h"
#include "search/samplers/tpe_candidates.h"
#include "search/samplers/sampler_internal.h"

namespace ladder::search::internal {
namespace {

constexpr int kDefaultCandidates = 24;
constexpr double kDefaultGamma = 0.1;
constexpr size_t kMaxGood = 25;
constexpr double kEps = 1e-12;
// The bad mixture's bound, as single-objective TPE's (tpe_sampler.cc): 2^19 kernel terms (candidates x
// components x coordinates) per suggestion, at least 256 components.
constexpr size_t kKernelTermBudget = size_t{1} << 19;
constexpr size_t kMinComponents = 256;

class MoTpeSampler : public MoHistorySampler {
 public:
  MoTpeSampler(const SearchSpec& spec, const MultiObjectiveOptions& options) : MoHistorySampler(spec, options) {
    const SamplerOptions& o = spec.sampler_options;
    startup_ = o.n_startup_trials > 0 ? o.n_startup_trials : kMoTpeStartupTrials;
    candidates_ = o.n_ei_candidates > 0 ? o.n_ei_candidates : kDefaultCandidates;
    gamma_ = o.gamma > 0 ? o.gamma : kDefaultGamma;
    std::vector<size_t> joint;
    for (size_t i = 0; i < unit().dims(); ++i) {
      if (unit().parent(i) < 0) {
        joint.push_back(i);
      } else {
        conditional_.push_back(i);
      }
    }
    dims_.push_back(joint);
    for (size_t d : conditional_) dims_.push_back({d});
    groups_.assign(dims_.size(), Group{TopRanks(kMaxGood), {}, {}});
  }

 protected:
  void OnTold(const MoObservation& o) override {
    if (!o.loss) return;
    for (size_t g = 0; g < dims_.size(); ++g) {
      if (!Has(o, g)) continue;
      std::vector<const MoObservation*>& c = groups_[g].completed;
      auto by_number = [](const MoObservation* a, const MoObservation* b) { return a->number < b->number; };
      c.insert(std::upper_bound(c.begin(), c.end(), &o, by_number), &o);
      if (o.violation > 0) {
        groups_[g].infeasible.insert(&o);
      } else {
        groups_[g].top.Add(&o);
      }
    }
  }
  void OnForget(const MoObservation& o) override {
    if (!o.loss) return;
    for (size_t g = 0; g < dims_.size(); ++g) {
      if (!Has(o, g)) continue;
      Group& gr = groups_[g];
      gr.completed.erase(std::remove(gr.completed.begin(), gr.completed.end(), &o), gr.completed.end());
      if (o.violation > 0) {
        gr.infeasible.erase(&o);
        continue;
      }
      gr.top.Clear();  // told again: rare (a coordinator's replay); rebuilt from the others
      for (const MoObservation* c : gr.completed) {
        if (c->violation <= 0) gr.top.Add(c);
      }
    }
  }

  std::vector<double> Suggest(int64_t trial_number, const std::vector<const MoObservation*>& /*told*/,
                              const std::vector<const MoObservation*>& pending) override {
    if (completed() < static_cast<size_t>(startup_)) return SobolPoint(static_cast<uint64_t>(trial_number));
    std::mt19937_64 rng = TrialRng(seed(), trial_number, 0x307e5);
    auto split = [&](size_t group) { return MakeSplit(trial_number, group, pending); };
    return ChooseTpeCandidate(unit(), dims_[0], conditional_, split, candidates_, rng);
  }

 private:
  // Infeasible trials by (violation, trial number), as completed_trials.h orders them after the feasible ones.
  struct LessViolated {
    bool operator()(const MoObservation* a, const MoObservation* b) const {
      return a->violation < b->violation || (a->violation == b->violation && a->number < b->number);
    }
  };
  struct Group {
    TopRanks top;                                 // of the feasible completed trials
    std::vector<const MoObservation*> completed;  // completed trials with the group's coordinates, by number
    std::set<const MoObservation*, LessViolated> infeasible;  // those of them that broke a constraint
  };
  using Split = TpeGroups;

  Split MakeSplit(int64_t trial_number, size_t group, const std::vector<const MoObservation*>& pending) const {
    const Group& gr = groups_[group];
    std::vector<const MoObservation*> liars;
    for (const MoObservation* o : pending) {
      if (Has(*o, group)) liars.push_back(o);
    }
    const double n = static_cast<double>(gr.completed.size() + liars.size());
    const size_t n_good = std::min({static_cast<size_t>(std::ceil(gamma_ * n)), kMaxGood, gr.completed.size()});
    const size_t feasible = gr.completed.size() - gr.infeasible.size();
    std::vector<const MoObservation*> good = gr.top.Best(std::min(n_good, feasible));
    for (auto it = gr.infeasible.begin(); it != gr.infeasible.end() && good.size() < n_good; ++it) good.push_back(*it);
    std::sort(good.begin(), good.end(), [](const MoObservation* a, const MoObservation* b) { return a->number < b->number; });
    Split s;
    for (const MoObservation* o : good) s.good.push_back(&o->u);
    s.good_w = GoodWeights(good);
    // The bad group: the other completed trials and the liars, merged by trial number.
    size_t gi = 0, li = 0;
    for (const MoObservation* o : gr.completed) {
      while (li < liars.size() && liars[li]->number < o->number) s.bad.push_back(&liars[li++]->u);
      if (gi < good.size() && good[gi] == o) {
        ++gi;
        continue;
      }
      s.bad.push_back(&o->u);
    }
    while (li < liars.size()) s.bad.push_back(&liars[li++]->u);
    s.bad_w = DefaultTpeWeights(s.bad.size());
    const size_t bound = std::max(kMinComponents, kKernelTermBudget / (static_cast<size_t>(candidates_) *
                                                                     std::max<size_t>(dims_[group].size(), 1)));
    if (s.bad.size() > bound) {
      std::mt19937_64 rng = TrialRng(seed(), trial_number, 0x5b5a + group);
      Bound(bound, rng, &s.bad, &s.bad_w);
    }
    return s;
  }

  // The bad mixture over at most `bound` components, its weight kept (as tpe_history.h bounds single-objective
  // TPE's): the most recent bound / 2 trials as themselves, the older ones in bound - bound / 2 strata of
  // consecutive trials, each stratum one of its trials drawn with `rng` carrying the stratum's weight. Pending
  // trials are the most recent, so they stand as themselves.
  static void Bound(size_t bound, std::mt19937_64& rng, std::vector<const std::vector<double>*>* bad,
                    std::vector<double>* w) {
    const size_t nb = bad->size(), recent = bound / 2, strata = bound - recent, older = nb - recent;
    std::vector<const std::vector<double>*> out;
    std::vector<double> out_w;
    for (size_t k = 0; k < strata; ++k) {
      const size_t a = k * older / strata, b = (k + 1) * older / strata;
      out.push_back((*bad)[a + UniformBelow(rng, b - a)]);
      out_w.push_back(DefaultTpeWeightSum(a, b, nb));
    }
    for (size_t p = older; p < nb; ++p) {
      out.push_back((*bad)[p]);
      out_w.push_back((*w)[p]);
    }
    *bad = std::move(out);
    *w = std::move(out_w);
  }

  // The feasible good trials' hypervolume contributions (+ EPS) divided by the largest, against Optuna's reference
  // point for them (1 when there is only one); 1 for an infeasible one.
  static std::vector<double> GoodWeights(const std::vector<const MoObservation*>& good) {
    std::vector<ObjectiveVector> losses;
    for (const MoObservation* o : good) {
      if (o->violation <= 0) losses.push_back(*o->loss);
    }
    std::vector<double> c(losses.size(), 1.0);
    if (losses.size() > 1) {
      c = HypervolumeContributions(losses, OptunaReferencePoint(losses));
      for (double& x : c) x += kEps;
      const double top = *std::max_element(c.begin(), c.end());
      for (double& x : c) x = std::clamp(x / top, 0.0, 1.0);
    }
    std::vector<double> w;
    size_t k = 0;
    for (const MoObservation* o : good) w.push_back(o->violation <= 0 ? c[k++] : 1.0);
    return w;
  }

  bool Has(const MoObservation& o, size_t group) const {
    return std::all_of(dims_[group].begin(), dims_[group].end(), [&](size_t d) { return bool(o.active[d]); });
  }

  int startup_;
  int candidates_;
  double gamma_;
  std::vector<size_t> conditional_;
  std::vector<std::vector<size_t>> dims_;  // per group: 0 the joint coordinates, 1 + i conditional_[i]
  std::vector<Group> groups_;
};

}  // namespace

std::unique_ptr<MultiObjectiveSampler> MakeMoTpeSampler(const SearchSpec& spec, const MultiObjectiveOptions& options) {
  return std::make_unique<MoTpeSampler>(spec, options);
}

}  // namespace ladder::search::internal
