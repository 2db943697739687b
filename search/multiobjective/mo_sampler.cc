#include "search/multiobjective/mo_sampler.h"

#include <algorithm>

#include "search/multiobjective/mo_history.h"
#include "search/samplers/auto_sampler.h"
#include "search/samplers/sampler.h"

namespace ladder::search {
namespace {

// random and sobol read no objective: the single-objective sampler, its Tell given nothing.
class ModelFree : public MultiObjectiveSampler {
 public:
  explicit ModelFree(std::unique_ptr<Sampler> s) : s_(std::move(s)) {}
  std::optional<Params> Ask(int64_t trial_number) override { return s_->Ask(trial_number); }
  void Tell(int64_t trial_number, const Params& params, std::optional<std::vector<double>>) override {
    s_->Tell(trial_number, params, std::nullopt);
  }
  void AddPending(int64_t trial_number, const Params& params) override { s_->AddPending(trial_number, params); }

 private:
  std::unique_ptr<Sampler> s_;
};

}  // namespace

MultiObjectiveChoice ResolveMultiObjectiveSampler(const SearchSpec& spec, const MultiObjectiveOptions& options) {
  if (spec.sampler != "auto") return {spec.sampler, ""};
  const int population = options.population > 0 ? options.population : kNsga2DefaultPopulation;
  if (spec.space.params.empty()) return {"random", "no parameters to model"};
  if (spec.max_trials <= kMoTpeStartupTrials) {
    return {"sobol", std::to_string(spec.max_trials) + " trials, no more than TPE's " +
                         std::to_string(kMoTpeStartupTrials) + " startup points"};
  }
  if (spec.parallelism >= population) {
    return {"nsga2", std::to_string(spec.parallelism) + " trials at a time, a generation of NSGA-II's population of " +
                         std::to_string(population)};
  }
  const size_t params = spec.space.params.size();
  const auto categorical = static_cast<size_t>(std::count_if(spec.space.params.begin(), spec.space.params.end(),
                                                             [](const ParamSpec& p) { return p.kind == ParamKind::kCategorical; }));
  if (spec.max_trials <= kAutoMoGpMaxTrials && params <= kAutoGpMaxParams &&
      static_cast<double>(categorical) <= kAutoMaxCategoricalShare * static_cast<double>(params)) {
    return {"gp", std::to_string(spec.max_trials) + " trials (at most " + std::to_string(kAutoMoGpMaxTrials) + "), " +
                      std::to_string(categorical) + " of " + std::to_string(params) +
                      " parameters categorical: ParEGO (GP-BO on a random scalarisation per suggestion)"};
  }
  if (spec.max_trials > kAutoMoTpeMaxTrials) {
    return {"nsga2", std::to_string(spec.max_trials) + " trials (more than " + std::to_string(kAutoMoTpeMaxTrials) +
                         "): MOTPE's cost per suggestion grows with the history"};
  }
  return {"tpe", std::to_string(spec.max_trials) + " trials, " + std::to_string(spec.parallelism) +
                     " at a time: multi-objective TPE after " + std::to_string(kMoTpeStartupTrials) + " Sobol points"};
}

std::unique_ptr<MultiObjectiveSampler> MakeMultiObjectiveSampler(const SearchSpec& spec,
                                                                 const MultiObjectiveOptions& options,
                                                                 std::string* error) {
  if (options.maximize.size() < 2) {
    *error = "several objectives need at least 2, got " + std::to_string(options.maximize.size());
    return nullptr;
  }
  const std::string name = ResolveMultiObjectiveSampler(spec, options).sampler;
  if (name == "tpe") return internal::MakeMoTpeSampler(spec, options);
  if (name == "nsga2") return internal::MakeNsga2Sampler(spec, options);
  if (name == "gp") return internal::MakeParEgoSampler(spec, options);
  if (name == "random" || name == "sobol") {
    SearchSpec single = spec;
    single.sampler = name;
    return std::make_unique<ModelFree>(MakeSampler(single));
  }
  *error = "sampler '" + name + "' has no multi-objective form (auto, tpe, nsga2, gp, random or sobol)";
  return nullptr;
}

}  // namespace ladder::search
