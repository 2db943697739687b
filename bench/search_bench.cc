// ladder-search-bench: the ladder side of bench/search_vs_optuna. Runs a ladder sampler on a problem and prints
// one JSON line per seed with the regret after each checkpoint, or times suggestions at a given history size.
//   ladder-search-bench regret (--problem NAME | --table PATH) --sampler S [--seeds N] [--seed0 K]
//                              [--checkpoints 25,50,100,200]
//   ladder-search-bench timing --sampler S [--history 100,1000,10000,100000] [--asks K]
//   ladder-search-bench resolve (--problem NAME | --table PATH) [--budget N]   (what `auto` picks there)
//   ladder-search-bench warm --table PATH [--sampler auto] [--seeds N] [--seed0 K] [--budget N]
//                            (the warm-start part: bench/search_warm_start_bench.h)
//   ladder-search-bench constrained --problem NAME [--sampler tpe] [--mode constrained|unconstrained] [--seeds N]
//                                   [--seed0 K] [--budget N]   (the constrained part: search_constrained_bench.h)
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bench/search_constrained_bench.h"
#include "bench/search_problems.h"
#include "bench/search_warm_start_bench.h"
#include "search/samplers/auto_sampler.h"
#include "search/samplers/sampler.h"

namespace {

using ladder::search::MakeSampler;
using ladder::search::Params;
using ladder::search::ParamKind;
using ladder::search::ParamSpec;
using ladder::search::SearchSpec;
using ladder::bench::RunSpec;

constexpr const char* kUsage =
    "usage: ladder-search-bench regret (--problem NAME | --table PATH) --sampler S [--seeds N] [--seed0 K]"
    " [--checkpoints 25,50,100,200]\n       ladder-search-bench timing --sampler S [--history 100,1000,10000,100000]"
    " [--asks K]\n       ladder-search-bench resolve (--problem NAME | --table PATH) [--budget N]\n"
    "       ladder-search-bench warm --table PATH [--sampler auto] [--seeds N] [--seed0 K] [--budget N]\n"
    "       ladder-search-bench constrained --problem NAME [--sampler tpe] [--mode constrained|unconstrained]"
    " [--seeds N] [--seed0 K] [--budget N]\nThe ladder side of bench/search_vs_optuna; one JSON line per seed (regret) or history size (timing).\n";

int Usage(const std::string& msg) {
  std::cerr << "ladder-search-bench: " << msg << "\n" << kUsage;
  return 2;
}

std::vector<int> IntList(const std::string& s) {
  std::vector<int> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::atoi(item.c_str()));
  return out;
}

// The problem named by --problem or --table; nullptr after printing the usage error (*rc set).
std::unique_ptr<ladder::bench::Problem> LoadProblem(const std::map<std::string, std::string>& a, std::string* name,
                                                    int* rc) {
  std::unique_ptr<ladder::bench::Problem> problem;
  if (a.count("problem")) {
    *name = a.at("problem");
    problem = ladder::bench::MakeSyntheticProblem(*name);
    if (!problem) *rc = Usage("unknown problem '" + *name + "'");
  } else if (a.count("table")) {
    std::string error;
    problem = ladder::bench::LoadTableProblem(a.at("table"), &error);
    if (!problem) *rc = Usage(error);
    *name = a.at("table");
  } else {
    *rc = Usage("needs --problem or --table");
  }
  return problem;
}

// What `auto` runs on this problem with this budget, and why (the bench reuses that sampler's runs).
int Resolve(const std::map<std::string, std::string>& a) {
  std::string name;
  int rc = 0;
  auto problem = LoadProblem(a, &name, &rc);
  if (!problem) return rc;
  const int budget = a.count("budget") ? std::atoi(a.at("budget").c_str()) : 200;
  ladder::search::SamplerChoice c = ladder::search::ResolveSampler(RunSpec(*problem, "auto", 0, budget));
  std::printf("{\"problem\": \"%s\", \"budget\": %d, \"sampler\": \"%s\", \"reason\": \"%s\"}\n", name.c_str(),
              budget, c.sampler.c_str(), c.reason.c_str());
  return 0;
}

int Regret(const std::map<std::string, std::string>& a) {
  std::string name;
  int rc = 0;
  auto problem = LoadProblem(a, &name, &rc);
  if (!problem) return rc;
  const std::string sampler = a.count("sampler") ? a.at("sampler") : "tpe";
  const int seeds = a.count("seeds") ? std::atoi(a.at("seeds").c_str()) : 20;
  const int seed0 = a.count("seed0") ? std::atoi(a.at("seed0").c_str()) : 0;
  std::vector<int> checkpoints = IntList(a.count("checkpoints") ? a.at("checkpoints") : "25,50,100,200");
  const int budget = checkpoints.back();
  for (int s = seed0; s < seed0 + seeds; ++s) {
    SearchSpec spec = RunSpec(*problem, sampler, static_cast<uint64_t>(s), budget);
    const std::string resolved = ladder::search::ResolveSampler(spec).sampler;
    auto smp = MakeSampler(spec);
    double best = 0;
    Params incumbent;
    std::vector<double> regrets;
    std::set<Params> seen;  // distinct configurations evaluated (a repeat only redraws a table's noise)
    auto t0 = std::chrono::steady_clock::now();
    size_t next_cp = 0;
    for (int n = 0; n < budget; ++n) {
      Params p = *smp->Ask(n);
      seen.insert(p);
      double y = problem->Evaluate(p, static_cast<uint64_t>(s), n);
      if (n == 0 || (problem->maximize() ? y > best : y < best)) {
        best = y;
        incumbent = p;
      }
      smp->Tell(n, p, y);
      if (n + 1 == checkpoints[next_cp]) {
        regrets.push_back(problem->Regret(incumbent));
        ++next_cp;
      }
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("{\"problem\": \"%s\", \"sampler\": \"ladder-%s\", \"seed\": %d, \"seconds\": %.4f, \"regret\": [", name.c_str(),
                sampler.c_str(), s, secs);
    for (size_t i = 0; i < regrets.size(); ++i) std::printf("%s%.10g", i ? ", " : "", regrets[i]);
    std::printf("], \"distinct\": %zu, \"resolved\": \"%s\"}\n", seen.size(), resolved.c_str());
    std::fflush(stdout);
  }
  return 0;
}

int Timing(const std::map<std::string, std::string>& a) {
  const std::string sampler = a.count("sampler") ? a.at("sampler") : "tpe";
  std::vector<int> history = IntList(a.count("history") ? a.at("history") : "100,1000,10000,100000");
  const int asks = a.count("asks") ? std::atoi(a.at("asks").c_str()) : 20;
  for (int h : history) {
    auto smp = MakeSampler(ladder::bench::TimingSpec(sampler));
    auto rnd = MakeSampler(ladder::bench::TimingSpec("random"));
    for (int n = 0; n < h; ++n) {
      Params p = *rnd->Ask(n);
      smp->Tell(n, p, ladder::bench::TimingObjective(p));
    }
    // One warm-up suggestion (GP-BO fits its kernel here and then on a geometric schedule), then `asks` timed.
    Params w = *smp->Ask(h);
    smp->Tell(h, w, ladder::bench::TimingObjective(w));
    auto t0 = std::chrono::steady_clock::now();
    for (int k = 1; k <= asks; ++k) {
      Params p = *smp->Ask(h + k);
      smp->Tell(h + k, p, ladder::bench::TimingObjective(p));
    }
    double per = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / asks;
    std::printf("{\"sampler\": \"ladder-%s\", \"history\": %d, \"asks\": %d, \"seconds_per_suggestion\": %.6g}\n",
                sampler.c_str(), h, asks, per);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Usage("missing command");
  std::string cmd = argv[1];
  if (cmd == "--help" || cmd == "-h") {
    std::cout << kUsage;
    return 0;
  }
  std::map<std::string, std::string> a;
  for (int i = 2; i < argc; ++i) {
    std::string k = argv[i];
    if (k.rfind("--", 0) != 0 || i + 1 >= argc) return Usage("bad argument '" + k + "'");
    a[k.substr(2)] = argv[++i];
  }
  if (cmd == "regret") return Regret(a);
  if (cmd == "timing") return Timing(a);
  if (cmd == "resolve") return Resolve(a);
  if (cmd == "warm") return ladder::bench::WarmStartRuns(a);
  if (cmd == "constrained") return ladder::bench::ConstrainedRuns(a);
  return Usage("unknown command '" + cmd + "'");
}
