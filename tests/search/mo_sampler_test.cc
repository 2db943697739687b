// Multi-objective samplers (search/multiobjective/mo_sampler.h): the determinism contract, parallel asks and
// directions negated at the boundary (tpe, nsga2, gp), the auto rule, TopRanks against a brute-force ranking, and
// tpe and nsga2 ahead of random search on ZDT1 (gp: parego_test.cc).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "search/multiobjective/mo_sampler.h"
#include "search/multiobjective/pareto.h"
#include "search/multiobjective/top_ranks.h"
#include "search/samplers/auto_sampler.h"
#include "tests/search/sampler_test_util.h"

namespace ladder::search {
namespace {

using testing::CatParam;
using testing::FloatParam;
using testing::IntParam;
using testing::SpecWith;
using testing::When;

std::vector<ParamSpec> Zdt1Space(int n) {
  std::vector<ParamSpec> ps;
  for (int i = 0; i < n; ++i) ps.push_back(FloatParam("x" + std::to_string(i), 0, 1));
  return ps;
}

ObjectiveVector Zdt1(const Params& p, int n) {
  const double f1 = std::get<double>(p.at("x0"));
  double g = 0;
  for (int i = 1; i < n; ++i) g += std::get<double>(p.at("x" + std::to_string(i)));
  g = 1 + 9 * g / (n - 1);
  return {f1, g * (1 - std::sqrt(f1 / g))};
}

std::unique_ptr<MultiObjectiveSampler> Make(const SearchSpec& spec, std::vector<bool> maximize = {false, false}) {
  std::string error;
  MultiObjectiveOptions o;
  o.maximize = std::move(maximize);
  auto s = MakeMultiObjectiveSampler(spec, o, &error);
  EXPECT_NE(s, nullptr) << error;
  return s;
}

// A mixed space: float (log), int, categorical, and a conditional float.
std::vector<ParamSpec> MixedSpace() {
  return {FloatParam("lr", 1e-4, 1e-1, true), IntParam("width", 8, 64), CatParam("opt", {"sgd", "adam"}),
          When(FloatParam("momentum", 0, 1), "opt", {"sgd"})};
}

ObjectiveVector Mixed(const Params& p) {
  const double lr = std::log10(std::get<double>(p.at("lr")));
  const double w = static_cast<double>(std::get<int64_t>(p.at("width")));
  const double m = p.count("momentum") ? std::get<double>(p.at("momentum")) : 0.5;
  return {std::pow(lr + 2, 2) + (std::get<std::string>(p.at("opt")) == "adam" ? 0 : 0.3) + m * 0.1, w / 64};
}

class EachSampler : public ::testing::TestWithParam<std::string> {};

TEST_P(EachSampler, AskIsAFunctionOfSeedNumberAndTheToldSetNotTheOrderOfTells) {
  const SearchSpec spec = SpecWith(MixedSpace(), GetParam(), 5);
  auto a = Make(spec), b = Make(spec);
  std::vector<Params> asked;
  for (int n = 0; n < 120; ++n) asked.push_back(*a->Ask(n));
  for (int n = 0; n < 120; ++n) a->Tell(n, asked[static_cast<size_t>(n)], Mixed(asked[static_cast<size_t>(n)]));
  // b is told the same trials in reverse order, without asking (a restarted coordinator's replay).
  for (int n = 119; n >= 0; --n) b->Tell(n, asked[static_cast<size_t>(n)], Mixed(asked[static_cast<size_t>(n)]));
  for (int n = 120; n < 130; ++n) {
    Params pa = *a->Ask(n), pb = *b->Ask(n);
    EXPECT_EQ(pa, pb) << "trial " << n;
    EXPECT_EQ(*a->Ask(n), pa);  // asking again for a pending trial: the same configuration
    a->Tell(n, pa, Mixed(pa));
    b->Tell(n, pb, Mixed(pb));
  }
}

TEST_P(EachSampler, ARestartReplayingFinishedAndRunningTrialsSuggestsWhatTheFirstWould) {
  const SearchSpec spec = SpecWith(MixedSpace(), GetParam(), 6);
  auto a = Make(spec), b = Make(spec);
  std::vector<Params> asked;
  for (int n = 0; n < 60; ++n) {
    asked.push_back(*a->Ask(n));
    if (n < 56 || n == 57) a->Tell(n, asked.back(), Mixed(asked.back()));  // 56, 58, 59 still run
  }
  // b: the restarted coordinator's replay: the finished trials in reverse order, then the running ones.
  for (int n = 57; n >= 0; --n) {
    if (n != 56) b->Tell(n, asked[static_cast<size_t>(n)], Mixed(asked[static_cast<size_t>(n)]));
  }
  for (int n : {59, 56, 58}) b->AddPending(n, asked[static_cast<size_t>(n)]);
  for (int n = 56; n < 60; ++n) EXPECT_EQ(*b->Ask(n), asked[static_cast<size_t>(n)]) << "trial " << n;
  for (int n = 60; n < 64; ++n) {
    const Params pa = *a->Ask(n), pb = *b->Ask(n);
    EXPECT_EQ(pa, pb) << "trial " << n;
    if (n % 2 == 0) {
      a->Tell(n, pa, Mixed(pa));
      b->Tell(n, pb, Mixed(pb));
    }
  }
}

TEST_P(EachSampler, ParallelAsksWithoutTellGiveDistinctValidConfigurations) {
  auto s = Make(SpecWith(MixedSpace(), GetParam(), 2));
  for (int n = 0; n < 60; ++n) {  // past TPE's startup and NSGA-II's first generation
    Params p = *s->Ask(n);
    s->Tell(n, p, n % 7 == 3 ? std::nullopt : std::optional<ObjectiveVector>(Mixed(p)));  // some fail
  }
  std::set<Params> seen;
  for (int n = 60; n < 76; ++n) {
    Params p = *s->Ask(n);
    EXPECT_TRUE(seen.insert(p).second) << "trial " << n << " repeats an earlier pending one";
    const double lr = std::get<double>(p.at("lr"));
    EXPECT_TRUE(lr >= 1e-4 && lr <= 1e-1);
    const int64_t w = std::get<int64_t>(p.at("width"));
    EXPECT_TRUE(w >= 8 && w <= 64);
    EXPECT_EQ(p.count("momentum"), std::get<std::string>(p.at("opt")) == "sgd" ? 1u : 0u);
  }
}

TEST_P(EachSampler, MaximizedObjectivesAreNegatedAtTheBoundary) {
  // (max -f1, min f2) must suggest exactly what (min f1, min f2) does.
  const SearchSpec spec = SpecWith(Zdt1Space(4), GetParam(), 9);
  auto lo = Make(spec), hi = Make(spec, {true, false});
  for (int n = 0; n < 80; ++n) {
    Params p = *lo->Ask(n), q = *hi->Ask(n);
    ASSERT_EQ(p, q) << "trial " << n;
    ObjectiveVector f = Zdt1(p, 4);
    lo->Tell(n, p, f);
    hi->Tell(n, q, ObjectiveVector{-f[0], f[1]});
  }
}

TEST_P(EachSampler, TellingATrialAgainIsTheSameAsTellingItOnceWithItsLastValue) {
  const SearchSpec spec = SpecWith(Zdt1Space(3), GetParam(), 4);
  auto a = Make(spec), b = Make(spec);
  std::vector<Params> asked;
  for (int n = 0; n < 70; ++n) asked.push_back(*a->Ask(n));
  for (int n = 0; n < 70; ++n) {
    const Params& p = asked[static_cast<size_t>(n)];
    a->Tell(n, p, ObjectiveVector{0.0, 0.0});  // first told as the best point, then corrected
    a->Tell(n, p, Zdt1(p, 3));
    b->Tell(n, p, Zdt1(p, 3));
  }
  EXPECT_EQ(*a->Ask(70), *b->Ask(70));
}

double HypervolumeAfter(const std::string& sampler, uint64_t seed, int budget) {
  auto s = Make(SpecWith(Zdt1Space(5), sampler, seed));
  std::vector<ObjectiveVector> f;
  for (int n = 0; n < budget; ++n) {
    Params p = *s->Ask(n);
    f.push_back(Zdt1(p, 5));
    s->Tell(n, p, f.back());
  }
  return Hypervolume(f, {1.1, 6.0});
}

// tpe and nsga2 at 250 evaluations (gp: parego_test.cc, at 60; 250 would take GP-BO a minute).
class EachPopulationOrParzenSampler : public ::testing::TestWithParam<std::string> {};

TEST_P(EachPopulationOrParzenSampler, BeatsRandomSearchOnZdt1) {
  // Median over 5 seeds of the hypervolume after 250 evaluations (fixed seeds: deterministic).
  std::vector<double> model, random;
  for (uint64_t seed = 0; seed < 5; ++seed) {
    model.push_back(HypervolumeAfter(GetParam(), seed, 250));
    random.push_back(HypervolumeAfter("random", seed, 250));
  }
  std::sort(model.begin(), model.end());
  std::sort(random.begin(), random.end());
  EXPECT_GT(model[2], random[2] + 0.1) << GetParam() << " " << model[2] << " vs random " << random[2];
}

INSTANTIATE_TEST_SUITE_P(MultiObjective, EachSampler, ::testing::Values("tpe", "nsga2", "gp"));
INSTANTIATE_TEST_SUITE_P(MultiObjective, EachPopulationOrParzenSampler, ::testing::Values("tpe", "nsga2"));

TEST(MultiObjectiveAuto, RuleFromSpaceBudgetAndParallelism) {
  MultiObjectiveOptions o;
  o.maximize = {false, false};
  SearchSpec spec = SpecWith(Zdt1Space(3), "auto");
  spec.max_trials = kAutoMoGpMaxTrials;
  EXPECT_EQ(ResolveMultiObjectiveSampler(spec, o).sampler, "gp") << "a small budget on float and int parameters";
  spec.max_trials = kAutoMoGpMaxTrials + 1;
  EXPECT_EQ(ResolveMultiObjectiveSampler(spec, o).sampler, "tpe");
  SearchSpec mixed = SpecWith(MixedSpace(), "auto");  // 1 of 4 parameters categorical
  mixed.max_trials = 100;
  EXPECT_EQ(ResolveMultiObjectiveSampler(mixed, o).sampler, "gp");
  mixed.space.params.push_back(CatParam("act", {"relu", "gelu"}));
  EXPECT_EQ(ResolveMultiObjectiveSampler(mixed, o).sampler, "gp") << "2 of 5: at most half";
  mixed.space.params.push_back(CatParam("norm", {"layer", "batch"}));
  mixed.space.params.push_back(CatParam("init", {"he", "xavier"}));
  EXPECT_EQ(ResolveMultiObjectiveSampler(mixed, o).sampler, "tpe") << "4 of 7: more than half";
  SearchSpec wide = SpecWith(Zdt1Space(static_cast<int>(kAutoGpMaxParams) + 1), "auto");
  wide.max_trials = 100;
  EXPECT_EQ(ResolveMultiObjectiveSampler(wide, o).sampler, "tpe") << "more parameters than GP-BO's ARD kernel takes";
  spec.max_trials = 8;
  EXPECT_EQ(ResolveMultiObjectiveSampler(spec, o).sampler, "sobol");
  spec.max_trials = 200;
  spec.parallelism = 50;
  EXPECT_EQ(ResolveMultiObjectiveSampler(spec, o).sampler, "nsga2");
  spec.parallelism = 4;
  spec.max_trials = kAutoMoTpeMaxTrials + 1;
  EXPECT_EQ(ResolveMultiObjectiveSampler(spec, o).sampler, "nsga2");
  spec.space.params.clear();
  EXPECT_EQ(ResolveMultiObjectiveSampler(spec, o).sampler, "random");
  spec.sampler = "nsga2";
  EXPECT_EQ(ResolveMultiObjectiveSampler(spec, o).reason, "");
}

TEST(MultiObjectiveAuto, SamplersWithoutAMultiObjectiveFormAreRefusedWithAReason) {
  MultiObjectiveOptions o;
  o.maximize = {false, true};
  std::string error;
  EXPECT_EQ(MakeMultiObjectiveSampler(SpecWith(Zdt1Space(2), "cmaes"), o, &error), nullptr);
  EXPECT_NE(error.find("'cmaes' has no multi-objective form"), std::string::npos) << error;
  o.maximize = {false};
  EXPECT_EQ(MakeMultiObjectiveSampler(SpecWith(Zdt1Space(2), "tpe"), o, &error), nullptr);
  EXPECT_NE(error.find("at least 2"), std::string::npos) << error;
}

// TopRanks keeps few trials yet gives the first k by rank exactly as a full non-dominated sort does.
TEST(TopRanks, BestIsTheBruteForceFirstFrontsOfTheWholeHistory) {
  std::mt19937_64 rng(21);
  std::uniform_real_distribution<double> u(0, 1);
  for (size_t m : {2, 3}) {
    std::vector<internal::MoObservation> obs(2000);
    internal::TopRanks top(25);
    for (size_t i = 0; i < obs.size(); ++i) {
      obs[i].number = static_cast<int64_t>(i);
      ObjectiveVector f(m);
      for (double& x : f) x = u(rng);
      obs[i].loss = f;
      top.Add(&obs[i]);
    }
    EXPECT_LT(top.kept(), 1000u);  // most of the history is dropped
    std::vector<ObjectiveVector> all;
    for (const auto& o : obs) all.push_back(*o.loss);
    const std::vector<int> rank = NonDominatedRanks(all);
    for (size_t n : {1, 7, 25}) {
      std::vector<const internal::MoObservation*> best = top.Best(n);
      ASSERT_EQ(best.size(), n);
      // Every trial of a lower rank than the worst chosen one is chosen.
      int worst = 0;
      std::set<int64_t> chosen;
      for (const auto* o : best) {
        worst = std::max(worst, rank[static_cast<size_t>(o->number)]);
        chosen.insert(o->number);
      }
      for (size_t i = 0; i < obs.size(); ++i) {
        if (rank[i] < worst) {
          EXPECT_EQ(chosen.count(static_cast<int64_t>(i)), 1u) << "trial " << i;
        }
      }
    }
  }
}

// A trial dominated by many (but fewer than k) trials of the first front is still among the first k.
TEST(TopRanks, KeepsATrialDominatedByFewerThanKTrials) {
  std::vector<internal::MoObservation> obs;
  for (int i = 0; i < 10; ++i) obs.push_back({i, {}, {}, ObjectiveVector{double(i), double(9 - i)}});
  obs.push_back({10, {}, {}, ObjectiveVector{10, 10}});  // dominated by all 10: rank 1
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(20, 30);
  for (int i = 11; i < 500; ++i) obs.push_back({i, {}, {}, ObjectiveVector{u(rng), u(rng)}});
  internal::TopRanks top(25);
  for (const auto& o : obs) top.Add(&o);
  std::set<int64_t> best;
  for (const auto* o : top.Best(11)) best.insert(o->number);
  EXPECT_EQ(best.size(), 11u);
  EXPECT_EQ(best.count(10), 1u);
}

}  // namespace
}  // namespace ladder::search
