// The warm-start part of bench/search_vs_optuna. The slice rule, one for every table: the earlier search sees the
// table's odd seed columns (seed1, seed3, ...), the measured searches its even ones (seed0, seed2, ...): the same
// configurations trained with other seeds, a neighbouring task. The earlier search runs the same sampler with the
// same budget (its own seed); the warm search is told its trials as the coordinator tells a warm_start: search's
// (SearchManager::TellWarmStart: numbered -n .. -1 in the earlier order, before the first Ask); the cold one is not.
#include "bench/search_warm_start_bench.h"

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <vector>

#include "bench/search_problems.h"
#include "search/samplers/auto_sampler.h"
#include "search/samplers/sampler.h"

namespace ladder::bench {
namespace {

using search::Params;

constexpr uint64_t kEarlierSeedOffset = 100000;  // the earlier search's sampler and noise seeds: its own

search::SearchSpec Spec(const Problem& p, const std::string& sampler, uint64_t seed, int budget) {
  search::SearchSpec spec;
  spec.name = "bench";
  spec.sampler = sampler;
  spec.seed = seed;
  spec.objective.maximize = p.maximize();
  spec.space = p.space();
  spec.max_trials = budget;
  spec.parallelism = 1;
  return spec;
}

// One search of `budget` evaluations on `problem`, after `told` (warm start); the regret of the incumbent (the
// best observed value) after every evaluation, and every evaluation in *history.
std::vector<double> Run(const Problem& problem, const std::string& sampler, uint64_t seed, int budget,
                        const std::vector<std::pair<Params, double>>& told,
                        std::vector<std::pair<Params, double>>* history) {
  auto smp = search::MakeSampler(Spec(problem, sampler, seed, budget));
  const auto n = static_cast<int64_t>(told.size());
  for (int64_t i = 0; i < n; ++i) smp->Tell(i - n, told[static_cast<size_t>(i)].first, told[static_cast<size_t>(i)].second);
  std::vector<double> regret;
  Params incumbent;
  double best = 0;
  for (int k = 0; k < budget; ++k) {
    Params p = *smp->Ask(k);
    const double y = problem.Evaluate(p, seed, k);
    if (k == 0 || (problem.maximize() ? y > best : y < best)) {
      best = y;
      incumbent = p;
    }
    smp->Tell(k, p, y);
    if (history) history->emplace_back(p, y);
    regret.push_back(problem.Regret(incumbent));
  }
  return regret;
}

void PrintCurve(const char* key, const std::vector<double>& v) {
  std::printf("\"%s\": [", key);
  for (size_t i = 0; i < v.size(); ++i) std::printf("%s%.10g", i ? ", " : "", v[i]);
  std::printf("]");
}

}  // namespace

int WarmStartRuns(const std::map<std::string, std::string>& a) {
  if (!a.count("table")) {
    std::cerr << "ladder-search-bench: warm needs --table PATH\n";
    return 2;
  }
  std::string error;
  auto earlier = LoadTableProblem(a.at("table"), &error, SeedSlice::kOdd);
  auto target = earlier ? LoadTableProblem(a.at("table"), &error, SeedSlice::kEven) : nullptr;
  if (!target) {
    std::cerr << "ladder-search-bench: " << error << "\n";
    return 2;
  }
  const std::string sampler = a.count("sampler") ? a.at("sampler") : "auto";
  const int seeds = a.count("seeds") ? std::atoi(a.at("seeds").c_str()) : 20;
  const int seed0 = a.count("seed0") ? std::atoi(a.at("seed0").c_str()) : 0;
  const int budget = a.count("budget") ? std::atoi(a.at("budget").c_str()) : 200;
  const std::string resolved = search::ResolveSampler(Spec(*target, sampler, 0, budget)).sampler;
  for (int s = seed0; s < seed0 + seeds; ++s) {
    const auto seed = static_cast<uint64_t>(s);
    std::vector<std::pair<Params, double>> history;
    Run(*earlier, sampler, seed + kEarlierSeedOffset, budget, {}, &history);
    const std::vector<double> cold = Run(*target, sampler, seed, budget, {}, nullptr);
    const std::vector<double> warm = Run(*target, sampler, seed, budget, history, nullptr);
    std::printf("{\"problem\": \"%s\", \"sampler\": \"ladder-%s\", \"resolved\": \"%s\", \"seed\": %d, ",
                a.at("table").c_str(), sampler.c_str(), resolved.c_str(), s);
    PrintCurve("cold", cold);
    std::printf(", ");
    PrintCurve("warm", warm);
    std::printf("}\n");
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace ladder::bench
