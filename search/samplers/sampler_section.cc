#include "search/samplers/sampler_section.h"

#include <algorithm>

namespace ladder::search::internal {

void ReadSamplerSection(ErrorSink& sink, const YAML::Node& n, std::string* type, uint64_t* seed,
                        SamplerOptions* options) {
  const std::vector<std::string> types = {"auto", "random", "grid", "sobol", "tpe", "gp", "cmaes", "nsga2"};
  if (n.IsScalar()) {
    if (auto s = ReadEnum(sink, n, "sampler", types)) *type = *s;
    return;
  }
  if (!n.IsMap()) {
    sink.At(n, "sampler",
            "expected a sampler type (auto, random, grid, sobol, tpe, gp, cmaes, nsga2) or a mapping, got " + Describe(n));
    return;
  }
  auto m = ReadMapping(sink, n, "sampler",
                       {"type", "seed", "n_startup_trials", "n_ei_candidates", "gamma", "max_history", "population",
                        "sigma0", "scramble"});
  if (!m) return;
  if (const MapEntry* e = Find(*m, "type")) {
    if (auto s = ReadEnum(sink, e->value, "sampler.type", types)) *type = *s;
  }
  if (const MapEntry* e = Find(*m, "seed")) {
    if (auto v = ReadUint64(sink, e->value, "sampler.seed")) *seed = *v;
  }
  SamplerOptions& o = *options;
  // Options that do not apply to the chosen type are errors: a typo in `type:` should not pass silently.
  auto for_types = [&](const MapEntry* e, std::string_view key, std::vector<std::string> ok) {
    if (std::find(ok.begin(), ok.end(), *type) != ok.end()) return true;
    std::string list;
    for (const auto& t : ok) list += (list.empty() ? "" : ", ") + t;
    sink.At(e->key_node, JoinField("sampler", key),
            "applies only to the " + list + " sampler" + (ok.size() > 1 ? "s" : "") + ", not " + *type);
    return false;
  };
  auto int_option = [&](std::string_view key, std::vector<std::string> ok, int64_t min, int64_t max, int* out) {
    const MapEntry* e = Find(*m, key);
    if (e == nullptr || !for_types(e, key, std::move(ok))) return;
    if (auto v = ReadInt(sink, e->value, JoinField("sampler", key), min, max)) {
      *out = static_cast<int>(*v);
    }
  };
  auto number_option = [&](std::string_view key, std::vector<std::string> ok, double min, double max, double* out) {
    const MapEntry* e = Find(*m, key);
    if (e == nullptr || !for_types(e, key, std::move(ok))) return;
    auto v = ReadNumber(sink, e->value, JoinField("sampler", key));
    if (!v) return;
    if (!(*v > min && *v <= max)) {
      sink.At(e->value, JoinField("sampler", key),
              "must be in (" + FormatNumber(min) + ", " + FormatNumber(max) + "], got " + FormatNumber(*v));
      return;
    }
    *out = *v;
  };
  int_option("n_startup_trials", {"tpe", "gp", "cmaes"}, 1, 100000, &o.n_startup_trials);
  int_option("n_ei_candidates", {"tpe"}, 1, 100000, &o.n_ei_candidates);
  number_option("gamma", {"tpe"}, 0, 1, &o.gamma);
  int_option("max_history", {"gp"}, 10, 5000, &o.max_history);
  int_option("population", {"cmaes", "nsga2"}, 2, 100000, &o.population);
  number_option("sigma0", {"cmaes"}, 0, 1, &o.sigma0);
  if (const MapEntry* e = Find(*m, "scramble"); e != nullptr && for_types(e, "scramble", {"sobol"})) {
    if (auto b = ReadBool(sink, e->value, "sampler.scramble")) o.scramble = *b;
  }
}

}  // namespace ladder::search::internal
