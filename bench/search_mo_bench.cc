// ladder-search-mo-bench: the ladder side of bench/search_vs_optuna's multi-objective part. Runs a
// multi-objective sampler on a problem of bench/mo_problems.h and prints one JSON line per seed with the
// hypervolume (of the true objectives of every configuration evaluated so far, against the problem's reference
// point) after each checkpoint, or times suggestions at a given history size.
//   ladder-search-mo-bench hv (--problem NAME | --table PATH) --sampler S [--seeds N] [--seed0 K]
//                             [--checkpoints 100,200]
//   ladder-search-mo-bench timing --sampler S [--history 10000] [--asks K] [--budget N]
//   ladder-search-mo-bench resolve (--problem NAME | --table PATH) [--budget N]   (what `auto` picks there)
//   ladder-search-mo-bench constrained --problem NAME --sampler S [--seeds N] [--seed0 K] [--checkpoints 50,100]
//     a constrained problem (c2dtlz2): per seed, the hypervolume of the FEASIBLE configurations evaluated so far
//     when the sampler is told the constraint values (TellConstrained) and when it is told the objectives only
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench/mo_problems.h"
#include "bench/search_problems.h"
#include "search/multiobjective/mo_sampler.h"
#include "search/multiobjective/pareto.h"
#include "search/samplers/sampler.h"

namespace {

using ladder::search::MultiObjectiveOptions;
using ladder::search::Params;
using ladder::search::SearchSpec;

constexpr const char* kUsage =
    "usage: ladder-search-mo-bench hv (--problem NAME | --table PATH) --sampler S [--seeds N] [--seed0 K]"
    " [--checkpoints 100,200]\n       ladder-search-mo-bench timing --sampler S [--history 10000] [--asks K]"
    " [--budget N]\n       ladder-search-mo-bench resolve (--problem NAME | --table PATH) [--budget N]\n"
    "       ladder-search-mo-bench constrained --problem NAME --sampler S [--seeds N] [--seed0 K] [--checkpoints L]\n"
    "The ladder side of bench/search_vs_optuna's multi-objective part; one JSON line per seed (hv) or history"
    " size (timing).\n";

int Usage(const std::string& msg) {
  std::cerr << "ladder-search-mo-bench: " << msg << "\n" << kUsage;
  return 2;
}

std::vector<int> IntList(const std::string& s) {
  std::vector<int> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::atoi(item.c_str()));
  return out;
}

std::unique_ptr<ladder::bench::MoProblem> LoadProblem(const std::map<std::string, std::string>& a, std::string* name,
                                                      int* rc) {
  std::unique_ptr<ladder::bench::MoProblem> problem;
  if (a.count("problem")) {
    *name = a.at("problem");
    problem = ladder::bench::MakeSyntheticMoProblem(*name);
    if (!problem) *rc = Usage("unknown problem '" + *name + "'");
  } else if (a.count("table")) {
    std::string error;
    problem = ladder::bench::LoadTableMoProblem(a.at("table"), &error);
    if (!problem) *rc = Usage(error);
    *name = a.at("table");
  } else {
    *rc = Usage("needs --problem or --table");
  }
  return problem;
}

SearchSpec RunSpec(const ladder::search::SearchSpace& space, const std::string& sampler, uint64_t seed, int budget) {
  SearchSpec spec;
  spec.name = "bench";
  spec.sampler = sampler;
  spec.seed = seed;
  spec.space = space;
  spec.max_trials = budget;
  spec.parallelism = 1;
  return spec;
}

MultiObjectiveOptions Minimize(size_t objectives) {
  MultiObjectiveOptions o;
  o.maximize.assign(objectives, false);
  return o;
}

int Resolve(const std::map<std::string, std::string>& a) {
  std::string name;
  int rc = 0;
  auto problem = LoadProblem(a, &name, &rc);
  if (!problem) return rc;
  const int budget = a.count("budget") ? std::atoi(a.at("budget").c_str()) : 200;
  auto c = ladder::search::ResolveMultiObjectiveSampler(RunSpec(problem->space(), "auto", 0, budget),
                                                        Minimize(problem->Reference().size()));
  std::printf("{\"problem\": \"%s\", \"budget\": %d, \"sampler\": \"%s\", \"reason\": \"%s\", \"reference\": [",
              name.c_str(), budget, c.sampler.c_str(), c.reason.c_str());
  const std::vector<double> ref = problem->Reference();
  for (size_t i = 0; i < ref.size(); ++i) std::printf("%s%.17g", i ? ", " : "", ref[i]);
  std::printf("]}\n");
  return 0;
}

int Hypervolumes(const std::map<std::string, std::string>& a) {
  std::string name;
  int rc = 0;
  auto problem = LoadProblem(a, &name, &rc);
  if (!problem) return rc;
  const std::string sampler = a.count("sampler") ? a.at("sampler") : "auto";
  const int seeds = a.count("seeds") ? std::atoi(a.at("seeds").c_str()) : 20;
  const int seed0 = a.count("seed0") ? std::atoi(a.at("seed0").c_str()) : 0;
  const std::vector<int> checkpoints = IntList(a.count("checkpoints") ? a.at("checkpoints") : "100,200");
  const std::vector<double> ref = problem->Reference();
  for (int s = seed0; s < seed0 + seeds; ++s) {
    const SearchSpec spec = RunSpec(problem->space(), sampler, static_cast<uint64_t>(s), checkpoints.back());
    std::string error;
    auto smp = ladder::search::MakeMultiObjectiveSampler(spec, Minimize(ref.size()), &error);
    if (!smp) return Usage(error);
    std::vector<std::vector<double>> seen;
    std::vector<double> hv;
    auto t0 = std::chrono::steady_clock::now();
    size_t next_cp = 0;
    for (int n = 0; n < checkpoints.back(); ++n) {
      Params p = *smp->Ask(n);
      smp->Tell(n, p, problem->Evaluate(p, static_cast<uint64_t>(s), n));
      seen.push_back(problem->TrueValues(p));
      if (n + 1 == checkpoints[next_cp]) {
        hv.push_back(ladder::search::Hypervolume(seen, ref));
        ++next_cp;
      }
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("{\"problem\": \"%s\", \"sampler\": \"ladder-%s\", \"seed\": %d, \"seconds\": %.4f, \"hv\": [",
                name.c_str(), sampler.c_str(), s, secs);
    for (size_t i = 0; i < hv.size(); ++i) std::printf("%s%.12g", i ? ", " : "", hv[i]);
    std::printf("], \"resolved\": \"%s\"}\n",
                ladder::search::ResolveMultiObjectiveSampler(spec, Minimize(ref.size())).sampler.c_str());
    std::fflush(stdout);
  }
  return 0;
}

// One run of `sampler` on a constrained problem, told the constraint values or not: the hypervolume of the feasible
// configurations evaluated by each checkpoint, and how many of them were feasible by the last.
std::vector<double> FeasibleHypervolumes(const ladder::bench::MoProblem& problem, const SearchSpec& spec, bool told,
                                         const std::vector<int>& checkpoints, int* feasible, std::string* error) {
  const std::vector<double> ref = problem.Reference();
  auto smp = ladder::search::MakeMultiObjectiveSampler(spec, Minimize(ref.size()), error);
  std::vector<double> hv;
  if (!smp) return hv;
  std::vector<std::vector<double>> seen;
  *feasible = 0;
  size_t next_cp = 0;
  for (int n = 0; n < checkpoints.back(); ++n) {
    Params p = *smp->Ask(n);
    const std::vector<double> f = problem.TrueValues(p), c = problem.Constraints(p);
    if (told) {
      smp->TellConstrained(n, p, f, c);
    } else {
      smp->Tell(n, p, f);
    }
    if (!ladder::search::Infeasible(c)) {
      seen.push_back(f);
      ++*feasible;
    }
    if (n + 1 == checkpoints[next_cp]) {
      hv.push_back(ladder::search::Hypervolume(seen, ref));
      ++next_cp;
    }
  }
  return hv;
}

int Constrained(const std::map<std::string, std::string>& a) {
  std::string name;
  int rc = 0;
  auto problem = LoadProblem(a, &name, &rc);
  if (!problem) return rc;
  const std::string sampler = a.count("sampler") ? a.at("sampler") : "auto";
  const int seeds = a.count("seeds") ? std::atoi(a.at("seeds").c_str()) : 20;
  const int seed0 = a.count("seed0") ? std::atoi(a.at("seed0").c_str()) : 0;
  const std::vector<int> checkpoints = IntList(a.count("checkpoints") ? a.at("checkpoints") : "50,100");
  for (int s = seed0; s < seed0 + seeds; ++s) {
    const SearchSpec spec = RunSpec(problem->space(), sampler, static_cast<uint64_t>(s), checkpoints.back());
    std::string error;
    int feasible[2] = {0, 0};
    const std::vector<double> with = FeasibleHypervolumes(*problem, spec, true, checkpoints, &feasible[0], &error);
    const std::vector<double> without = FeasibleHypervolumes(*problem, spec, false, checkpoints, &feasible[1], &error);
    if (with.empty() || without.empty()) return Usage(error);
    std::printf("{\"problem\": \"%s\", \"sampler\": \"ladder-%s\", \"seed\": %d, \"hv_constrained\": [", name.c_str(),
                sampler.c_str(), s);
    for (size_t i = 0; i < with.size(); ++i) std::printf("%s%.12g", i ? ", " : "", with[i]);
    std::printf("], \"hv_objectives_only\": [");
    for (size_t i = 0; i < without.size(); ++i) std::printf("%s%.12g", i ? ", " : "", without[i]);
    std::printf("], \"feasible_constrained\": %d, \"feasible_objectives_only\": %d}\n", feasible[0], feasible[1]);
    std::fflush(stdout);
  }
  return 0;
}

// Suggestions of `sampler` with `history` completed trials on the timing space (bench/search_problems.h), two
// objectives: its objective and a cost that grows with the width.
int Timing(const std::map<std::string, std::string>& a) {
  const std::string sampler = a.count("sampler") ? a.at("sampler") : "auto";
  const std::vector<int> history = IntList(a.count("history") ? a.at("history") : "10000");
  const int asks = a.count("asks") ? std::atoi(a.at("asks").c_str()) : 20;
  const int budget = a.count("budget") ? std::atoi(a.at("budget").c_str()) : 200;
  auto objectives = [](const Params& p) {
    const double w = static_cast<double>(std::get<int64_t>(p.at("width")));
    return std::vector<double>{ladder::bench::TimingObjective(p), w * static_cast<double>(std::get<int64_t>(p.at("depth")))};
  };
  for (int h : history) {
    SearchSpec spec = ladder::bench::TimingSpec(sampler);
    spec.max_trials = budget;  // what auto picks for a search of that size
    std::string error;
    auto smp = ladder::search::MakeMultiObjectiveSampler(spec, Minimize(2), &error);
    if (!smp) return Usage(error);
    auto rnd = ladder::search::MakeSampler(ladder::bench::TimingSpec("random"));
    for (int n = 0; n < h; ++n) {
      Params p = *rnd->Ask(n);
      smp->Tell(n, p, objectives(p));
    }
    Params w = *smp->Ask(h);  // one warm-up suggestion, then `asks` timed
    smp->Tell(h, w, objectives(w));
    auto t0 = std::chrono::steady_clock::now();
    for (int k = 1; k <= asks; ++k) {
      Params p = *smp->Ask(h + k);
      smp->Tell(h + k, p, objectives(p));
    }
    const double per = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / asks;
    std::printf("{\"sampler\": \"ladder-%s\", \"resolved\": \"%s\", \"history\": %d, \"asks\": %d, "
                "\"seconds_per_suggestion\": %.6g}\n",
                sampler.c_str(), ladder::search::ResolveMultiObjectiveSampler(spec, Minimize(2)).sampler.c_str(), h,
                asks, per);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Usage("missing command");
  const std::string cmd = argv[1];
  if (cmd == "--help" || cmd == "-h") {
    std::cout << kUsage;
    return 0;
  }
  std::map<std::string, std::string> a;
  for (int i = 2; i < argc; ++i) {
    const std::string k = argv[i];
    if (k.rfind("--", 0) != 0 || i + 1 >= argc) return Usage("bad argument '" + k + "'");
    a[k.substr(2)] = argv[++i];
  }
  if (cmd == "hv") return Hypervolumes(a);
  if (cmd == "timing") return Timing(a);
  if (cmd == "resolve") return Resolve(a);
  if (cmd == "constrained") return Constrained(a);
  return Usage("unknown command '" + cmd + "'");
}
