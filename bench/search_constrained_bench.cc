// ladder-search-bench constrained (search_constrained_bench.h).
#include "bench/search_constrained_bench.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>

#include "bench/search_problems.h"
#include "search/samplers/sampler.h"

namespace ladder::bench {
namespace {

// Each synthetic problem's (first) global optimum, in its own coordinates.
const std::map<std::string, std::vector<double>>& Optima() {
  static const std::map<std::string, std::vector<double>> optima = {
      {"branin", {-3.141592653589793, 12.275}},
      {"hartmann6", {0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573}},
      {"rosenbrock20", std::vector<double>(20, 1.0)},
      {"levy10", std::vector<double>(10, 1.0)}};
  return optima;
}

}  // namespace

double HalfSpace::C(const std::vector<double>& u) const {
  double s = 0;
  for (size_t i = 0; i < w.size(); ++i) s += w[i] * (u[i] - 0.5);
  return s - t;
}

HalfSpace ConstraintOf(const std::string& problem) {
  HalfSpace h;
  auto it = Optima().find(problem);
  auto p = MakeSyntheticProblem(problem);
  if (it == Optima().end() || !p) return h;
  double norm = 0;
  for (size_t i = 0; i < it->second.size(); ++i) {
    const auto& spec = p->space().params[i];
    h.w.push_back((it->second[i] - spec.low) / (spec.high - spec.low) - 0.5);
    norm += h.w.back() * h.w.back();
  }
  for (double& v : h.w) v /= std::sqrt(norm);
  h.t = 0.5244005127080407 / std::sqrt(12.0);
  return h;
}

int ConstrainedRuns(const std::map<std::string, std::string>& a) {
  const std::string name = a.count("problem") ? a.at("problem") : "";
  auto problem = MakeSyntheticProblem(name);
  const HalfSpace h = ConstraintOf(name);
  if (!problem || h.w.empty()) {
    std::cerr << "ladder-search-bench constrained: --problem must be a synthetic problem, got '" << name << "'\n";
    return 2;
  }
  const std::string sampler = a.count("sampler") ? a.at("sampler") : "tpe";
  const std::string mode = a.count("mode") ? a.at("mode") : "constrained";
  if (mode != "constrained" && mode != "unconstrained") {
    std::cerr << "ladder-search-bench constrained: --mode must be constrained or unconstrained, got '" << mode << "'\n";
    return 2;
  }
  const int seeds = a.count("seeds") ? std::atoi(a.at("seeds").c_str()) : 20;
  const int seed0 = a.count("seed0") ? std::atoi(a.at("seed0").c_str()) : 0;
  const int budget = a.count("budget") ? std::atoi(a.at("budget").c_str()) : 100;
  for (int s = seed0; s < seed0 + seeds; ++s) {
    auto smp = search::MakeSampler(RunSpec(*problem, sampler, static_cast<uint64_t>(s), budget));
    double best = std::numeric_limits<double>::infinity();
    int infeasible = 0;
    for (int n = 0; n < budget; ++n) {
      search::Params p = *smp->Ask(n);
      std::vector<double> u;
      for (const auto& ps : problem->space().params) {
        u.push_back((std::get<double>(p.at(ps.name)) - ps.low) / (ps.high - ps.low));
      }
      const double y = problem->Evaluate(p, static_cast<uint64_t>(s), n), c = h.C(u);
      if (mode == "constrained") {
        smp->TellConstrained(n, p, y, {c});
      } else {
        smp->Tell(n, p, y);
      }
      if (c <= 0) {
        best = std::min(best, problem->Regret(p));
      } else {
        ++infeasible;
      }
    }
    std::printf("{\"problem\": \"%s\", \"sampler\": \"ladder-%s-%s\", \"seed\": %d, \"regret\": %s, "
                "\"infeasible\": %.4f}\n",
                name.c_str(), sampler.c_str(), mode.c_str(), s,
                std::isfinite(best) ? std::to_string(best).c_str() : "null", infeasible / static_cast<double>(budget));
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace ladder::bench
