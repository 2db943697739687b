// NSGA-II (Deb, Pratap, Agarwal, Meyarivan 2002), generational as Optuna's NSGAIISampler (mo_sampler.h).
//
// Generations are fixed by trial number: trial n is in generation n / population. The parents of generation g
// (its elite) are a function of the told set only: elite(0) is empty, elite(g) the `population` survivors of
// elite(g-1) and the completed trials of generation g-1, by non-domination rank, the last front that does not
// fit whole by crowding distance (larger first), then trial number. Elites are cached per generation; telling a
// trial of generation k drops the cached elites after k. So a suggestion costs a survival over at most twice the
// population (O(M P^2)), never anything that grows with the history.
//
// Constraints (MultiObjectiveSampler::TellConstrained): ranks are by Deb's constrained domination
// (ConstrainedNonDominatedRanks, pareto.h), as Optuna's NSGAIISampler(constraints_func) sorts: the feasible trials
// first by their fronts, then the infeasible ones by violation (equal violations share a rank), crowding distance
// within each rank as without constraints. So survival keeps feasible trials first, and a tournament prefers a
// feasible parent, then the less violating one.
//
// A child of generation g >= 1 (or generation 0, or fewer than 2 parents: a Sobol point):
//   parents    two binary tournaments among the elite: the lower rank wins, then the larger crowding distance
//   crossover  with probability 0.9: SBX (distribution index 20) on each float/int coordinate with
//              probability 0.5, uniform swapping (probability 0.5) on each categorical; the first child is kept
//   mutation   each coordinate with probability 1/parameters: polynomial mutation (index 20) for float/int, a
//              uniform choice for a categorical
// in the unit cube (unit_space.h), snapped to representable values. Each draw comes from the trial number's
// stream, so parallel Asks give distinct children; pending trials are otherwise ignored.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "search/multiobjective/mo_history.h"
#include "search/samplers/sampler_internal.h"

namespace ladder::search::internal {
namespace {

constexpr double kCrossoverProb = 0.9;
constexpr double kSwapProb = 0.5;
constexpr double kSbxEta = 20;
constexpr double kMutationEta = 20;
constexpr int kRedraws = 8;

struct Member {
  const MoObservation* o = nullptr;
  int rank = 0;
  double crowding = 0;
};

class Nsga2Sampler : public MoHistorySampler {
 public:
  Nsga2Sampler(const SearchSpec& spec, const MultiObjectiveOptions& options)
      : MoHistorySampler(spec, options),
        population_(options.population > 0 ? options.population : kNsga2DefaultPopulation) {}

 protected:
  void OnTold(const MoObservation& o) override { DropAfter(o.number); }
  void OnForget(const MoObservation& o) override { DropAfter(o.number); }

  std::vector<double> Suggest(int64_t trial_number, const std::vector<const MoObservation*>& told,
                              const std::vector<const MoObservation*>& pending) override {
    const int64_t generation = trial_number / population_;
    if (generation == 0) return SobolPoint(static_cast<uint64_t>(trial_number));
    const std::vector<Member>& elite = Elite(static_cast<size_t>(generation), told);
    if (elite.size() < 2) return SobolPoint(static_cast<uint64_t>(trial_number));
    std::mt19937_64 rng = TrialRng(seed(), trial_number, 0x45a2);
    // A child that repeats a told or pending configuration (a parent copied unchanged, or a small discrete
    // space) is drawn again, up to kRedraws times, the last with a coordinate drawn anew: parallel asks stay distinct, repeats are rare.
    std::vector<double> child;
    for (int attempt = 0; attempt <= kRedraws; ++attempt) {
      child = Child(elite, rng, attempt == kRedraws);
      if (!Seen(child, told) && !Seen(child, pending)) break;
    }
    return child;
  }

 private:
  // Parents by tournament, crossover, mutation (`force`: at least one coordinate mutated).
  std::vector<double> Child(const std::vector<Member>& elite, std::mt19937_64& rng, bool force) const {
    const Member& a = Tournament(elite, rng);
    const Member& b = Tournament(elite, rng);
    std::vector<double> child = a.o->u;
    const bool cross = Uniform01(rng) < kCrossoverProb;
    const size_t d = unit().dims();
    for (size_t i = 0; i < d && cross; ++i) {
      if (Uniform01(rng) >= kSwapProb) continue;
      child[i] = unit().choices(i) > 0 ? b.o->u[i] : Sbx(a.o->u[i], b.o->u[i], rng);
    }
    const double p_mut = 1.0 / static_cast<double>(std::max<size_t>(d, 1));
    const size_t forced = force && d > 0 ? UniformBelow(rng, d) : d;
    for (size_t i = 0; i < d; ++i) {
      if (Uniform01(rng) >= p_mut && i != forced) continue;
      child[i] = unit().choices(i) > 0 || i == forced ? Uniform01(rng) : PolynomialMutation(child[i], rng);
    }
    SnapAll(&child);
    for (size_t i = 0; i < d; ++i) {
      if (!unit().ActiveUnder(i, child)) child[i] = 0.5;  // as a trial's encoding has it (unit_space.h)
    }
    return child;
  }

  // Whether some trial has the configuration u (inactive coordinates compared too: they are 0.5 in both).
  bool Seen(const std::vector<double>& u, const std::vector<const MoObservation*>& trials) const {
    return std::any_of(trials.begin(), trials.end(), [&](const MoObservation* o) { return o->u == u; });
  }

  void DropAfter(int64_t number) {
    const auto keep = static_cast<size_t>(number / population_) + 1;  // elite(0..k) do not read generation k
    if (elite_.size() > keep) elite_.resize(keep);
  }

  const std::vector<Member>& Elite(size_t generation, const std::vector<const MoObservation*>& told) {
    if (elite_.empty()) elite_.emplace_back();  // elite(0): nobody
    while (elite_.size() <= generation) {
      const size_t g = elite_.size();  // elite(g) from elite(g-1) and generation g-1's completed trials
      std::vector<const MoObservation*> pool;
      for (const Member& m : elite_[g - 1]) pool.push_back(m.o);
      const int64_t first = static_cast<int64_t>(g - 1) * population_, end = first + population_;
      auto it = std::lower_bound(told.begin(), told.end(), first,
                                 [](const MoObservation* o, int64_t n) { return o->number < n; });
      for (; it != told.end() && (*it)->number < end; ++it) {
        if ((*it)->loss) pool.push_back(*it);
      }
      elite_.push_back(Survivors(pool));
    }
    return elite_[generation];
  }

  std::vector<Member> Survivors(std::vector<const MoObservation*> pool) const {
    std::sort(pool.begin(), pool.end(), [](const MoObservation* a, const MoObservation* b) { return a->number < b->number; });
    std::vector<ObjectiveVector> points;
    std::vector<double> violations;
    for (const MoObservation* o : pool) {
      points.push_back(*o->loss);
      violations.push_back(o->violation);
    }
    const std::vector<int> rank = ConstrainedNonDominatedRanks(points, violations);
    const int max_rank = pool.empty() ? -1 : *std::max_element(rank.begin(), rank.end());
    std::vector<Member> out;
    for (int r = 0; r <= max_rank && out.size() < static_cast<size_t>(population_); ++r) {
      std::vector<size_t> front;
      for (size_t i = 0; i < pool.size(); ++i) {
        if (rank[i] == r) front.push_back(i);
      }
      const std::vector<double> crowd = CrowdingDistance(points, front);
      std::vector<size_t> order(front.size());
      std::iota(order.begin(), order.end(), size_t{0});
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return crowd[a] > crowd[b]; });
      for (size_t k : order) {
        if (out.size() >= static_cast<size_t>(population_)) break;
        out.push_back({pool[front[k]], r, crowd[k]});
      }
    }
    return out;
  }

  static const Member& Tournament(const std::vector<Member>& elite, std::mt19937_64& rng) {
    const Member& a = elite[UniformBelow(rng, elite.size())];
    const Member& b = elite[UniformBelow(rng, elite.size())];
    if (a.rank != b.rank) return a.rank < b.rank ? a : b;
    return b.crowding > a.crowding ? b : a;
  }

  // Simulated binary crossover of x and y in [0, 1] (bounded form, Deb and Agrawal 1995); one child.
  static double Sbx(double x, double y, std::mt19937_64& rng) {
    const double r = Uniform01(rng);
    if (std::abs(x - y) < 1e-14) return x;
    const double lo = std::min(x, y), hi = std::max(x, y);
    const bool upper = Uniform01(rng) < 0.5;
    const double beta = 1.0 + 2.0 * (upper ? (1.0 - hi) : lo) / (hi - lo);
    const double alpha = 2.0 - std::pow(beta, -(kSbxEta + 1));
    const double betaq = r <= 1.0 / alpha ? std::pow(r * alpha, 1.0 / (kSbxEta + 1))
                                          : std::pow(1.0 / (2.0 - r * alpha), 1.0 / (kSbxEta + 1));
    const double c = upper ? 0.5 * ((lo + hi) + betaq * (hi - lo)) : 0.5 * ((lo + hi) - betaq * (hi - lo));
    return std::clamp(c, 0.0, 1.0);
  }

  // Polynomial mutation of x in [0, 1] (Deb and Goyal 1996, the bounded form).
  static double PolynomialMutation(double x, std::mt19937_64& rng) {
    const double r = Uniform01(rng), p = 1.0 / (kMutationEta + 1);
    double dq;
    if (r < 0.5) {
      dq = std::pow(2 * r + (1 - 2 * r) * std::pow(1 - x, kMutationEta + 1), p) - 1;
    } else {
      dq = 1 - std::pow(2 * (1 - r) + 2 * (r - 0.5) * std::pow(x, kMutationEta + 1), p);
    }
    return std::clamp(x + dq, 0.0, 1.0);
  }

  int population_;
  std::vector<std::vector<Member>> elite_;  // elite_[g] for g < size(), valid for the current told set
};

}  // namespace

std::unique_ptr<MultiObjectiveSampler> MakeNsga2Sampler(const SearchSpec& spec, const MultiObjectiveOptions& options) {
  return std::make_unique<Nsga2Sampler>(spec, options);
}

}  // namespace ladder::search::internal
