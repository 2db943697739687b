#include "search/spec/spec_reader.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <unordered_map>
#include <unordered_set>

#include "search/core/command_template.h"
#include "search/core/space_section.h"
#include "search/ensemble/ensemble_section.h"
#include "search/samplers/sampler_section.h"
#include "search/spec/enqueue_section.h"
#include "search/spec/objectives_section.h"
#include "search/spec/spec_limits.h"
#include "search/scaling/scales_section.h"
#include "search/spec/constraints_section.h"
#include "search/spec/container_section.h"
#include "search/spec/stage_section.h"
#include "search/spec/warm_start_section.h"
#include "search/stopping/stopping_section.h"
#include "search/core/yaml_reader.h"

namespace ladder::search {
namespace {

using internal::ErrorSink;
using internal::Find;
using internal::JoinField;
using internal::MapEntries;
using internal::MapEntry;

constexpr int kMaxTrialsLimit = 1000000;
constexpr size_t kMaxNameLength = 64;
constexpr int kMaxNodesPerTrial = 65536;      // resources.nodes: more than any cluster ladder schedules
constexpr int kMaxRanksPerNode = 4096;
constexpr int kMaxGpusPerRank = 1024;
constexpr size_t kMaxPlaceholderHints = 100;  // "did you mean" for the first unknown placeholders only

// A string that may hold placeholders, remembered with its position for the cross-field check.
struct TemplateSite {
  std::string field;
  YAML::Mark mark;
  std::string text;
};

// Reads one spec; the order of Read* calls does not matter for the errors, which are sorted at the end.
class SpecReader {
 public:
  SpecReader(ErrorSink& sink, SearchSpec& spec) : sink_(sink), spec_(spec) {}

  void Read(const YAML::Node& root) {
    if (root.IsNull()) {
      YAML::Mark start;  // line 1, column 1
      sink_.Add(start, "", "the spec is empty");
      return;
    }
    auto top = internal::ReadMapping(sink_, root, "",
                                     {"name", "description", "objective", "budget", "sampler", "resources",
                                      "command", "env", "trial", "space", "scheduler", "ensemble", "scales",
                                      "stage", "enqueue", "warm_start", "container", "objectives",
                                      "constraints"});
    if (!top) return;
    const MapEntries& t = *top;
    auto required = [&](std::string_view key) -> const MapEntry* {
      const MapEntry* e = Find(t, key);
      if (e == nullptr) {
        sink_.At(root, std::string(key), "missing required field '" + std::string(key) + "'");
      }
      return e;
    };
    if (const MapEntry* e = required("name")) ReadName(e->value);
    if (const MapEntry* e = Find(t, "description")) internal::ReadString(sink_, e->value, "description");
    ReadObjectives(t, root);
    const MapEntry* scales = Find(t, "scales");
    if (const MapEntry* e = Find(t, "sampler")) {
      sampler_node_ = e->value;
      if (scales != nullptr) {
        sink_.At(e->key_node, "sampler", "scales: plans the trials itself: leave sampler out");
      } else {
        ReadSampler(e->value);
      }
    }
    const MapEntry* budget = Find(t, "budget");
    if (budget != nullptr) ReadBudget(budget->value);
    if (const MapEntry* e = Find(t, "resources")) ReadResources(e->value);
    if (const MapEntry* e = required("command")) ReadCommand(e->value);
    if (const MapEntry* e = Find(t, "env")) ReadEnv(e->value);
    if (const MapEntry* e = Find(t, "trial")) ReadTrial(e->value);
    if (const MapEntry* e = Find(t, "stage")) internal::ReadStageSection(sink_, e->value, &spec_.stage);
    if (const MapEntry* e = Find(t, "container")) internal::ReadContainerSection(sink_, e->value, &spec_.container);
    const MapEntry* space = nullptr;
    if (scales != nullptr) {
      if (const MapEntry* e = Find(t, "space")) {
        sink_.At(e->key_node, "space", "scales: defines the space (global_batch and lr): leave space out");
      }
      ReadScales(scales->value);
    } else {
      space = required("space");
      if (space != nullptr) ReadSpace(space->value);
    }
    if (const MapEntry* e = Find(t, "enqueue")) ReadEnqueue(*e, space != nullptr);
    if (const MapEntry* e = Find(t, "warm_start")) {
      internal::ReadWarmStartSection(sink_, e->value, &spec_.warm_start);
      warm_start_node_ = e->key_node;
    }

    if (const MapEntry* e = Find(t, "scheduler")) {
      scheduler_node_ = e->key_node;
      internal::ReadStoppingSection(sink_, e->value, &spec_.scheduler, &scheduler_seed_given_);
      internal::CheckStoppingSection(sink_, e->value, spec_);
    }
    if (const MapEntry* e = Find(t, "ensemble")) {
      ensemble_node_ = e->key_node;
      if (auto site = internal::ReadEnsembleSection(sink_, e->value, &spec_.ensemble)) {
        sites_.push_back({"ensemble.predictions_file", site->mark, site->text});
      }
    }
    CheckBudget(root, budget);
    CheckEnqueue();
    CheckWarmStart();
    CheckObjectives();
    if (const MapEntry* e = Find(t, "constraints")) {
      internal::ReadConstraintsSection(sink_, e->value, &spec_.constraints);
      internal::CheckConstraintsSection(sink_, e->key_node, spec_, scales_present_);
    }
    if (space != nullptr && space_ok_) CheckGrid();
    CheckPlaceholders();
  }

 private:
  // [A-Za-z0-9._-]+, at most kMaxNameLength characters.
  static bool IsNameLike(const std::string& s) {
    return !s.empty() && s.size() <= kMaxNameLength && std::all_of(s.begin(), s.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    });
  }

  void ReadName(const YAML::Node& n) {
    auto s = internal::ReadString(sink_, n, "name");
    if (!s) return;
    bool chars_ok = std::all_of(s->begin(), s->end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    });
    if (s->empty() || !chars_ok) {
      sink_.At(n, "name", "must match [A-Za-z0-9._-]+, got '" + *s + "'");
    } else if (s->size() > kMaxNameLength) {
      sink_.At(n, "name", "must be at most " + std::to_string(kMaxNameLength) + " characters, got " +
                              std::to_string(s->size()));
    } else {
      spec_.name = *s;
    }
  }

  // `objective:` (one) or `objectives:` (several), not both; one of them is required.
  void ReadObjectives(const MapEntries& t, const YAML::Node& root) {
    const MapEntry* one = Find(t, "objective");
    const MapEntry* several = Find(t, "objectives");
    if (one != nullptr && several != nullptr) {
      sink_.At(several->key_node, "objectives",
               "give objective (one) or objectives (several), not both; objective: is objectives[0]'s place");
      return;
    }
    if (several == nullptr) {
      if (one == nullptr) {
        sink_.At(root, "objective", "missing required field 'objective'");
      } else {
        ReadObjective(one->value);
      }
      return;
    }
    objectives_node_ = several->key_node;
    internal::ReadObjectivesSection(sink_, several->value, &spec_.objectives);
    if (!spec_.objectives.empty()) spec_.objective = spec_.objectives.front();
  }

  // What several objectives rule out: a single-objective sampler, and every part that ranks trials by one value
  // (early stopping, PBT, ensembles, scales:); and what needs them (nsga2); built-in metrics only there.
  void CheckObjectives() {
    const std::string& s = spec_.sampler;
    if (!spec_.MultiObjective()) {
      if (s == "nsga2") {
        sink_.At(sampler_node_, "sampler", "the nsga2 sampler needs several objectives (objectives:)");
      }
      if (IsBuiltinMetric(spec_.objective.metric) && spec_.objectives.empty()) {
        sink_.At(objective_metric_node_, "objective.metric",
                 "'" + spec_.objective.metric + "' is a built-in metric, measured once a trial has ended: name it "
                 "in objectives: beside the metric it trades against");
      }
      return;
    }
    if (s != "auto" && s != "tpe" && s != "nsga2" && s != "gp" && s != "random" && s != "sobol") {
      sink_.At(scales_present_ ? objectives_node_ : sampler_node_, scales_present_ ? "objectives" : "sampler",
               scales_present_ ? "scales: plans a batch x learning-rate sweep for one objective: not with objectives:"
                               : "the " + s + " sampler has one objective; with objectives: use auto, tpe, nsga2, "
                                              "gp, random or sobol");
    }
    auto refuse = [&](const YAML::Node& at, const std::string& field, const std::string& what) {
      sink_.At(at, field, what + " ranks trials by one objective: not with objectives:");
    };
    if (spec_.scheduler.type != StoppingRuleType::kNone) refuse(scheduler_node_, "scheduler", "the stopping rule");
    if (spec_.ensemble.enabled) refuse(ensemble_node_, "ensemble", "the ensemble selection");
    if (spec_.warm_start.search_id != 0) refuse(warm_start_node_, "warm_start", "a warm start");
  }

  void ReadObjective(const YAML::Node& n) {
    auto m = internal::ReadMapping(sink_, n, "objective", {"metric", "mode", "scope"});
    if (!m) return;
    if (const MapEntry* e = Find(*m, "metric")) {
      objective_metric_node_ = e->value;
      if (auto s = internal::ReadString(sink_, e->value, "objective.metric")) {
        if (s->empty()) {
          sink_.At(e->value, "objective.metric", "must not be empty");
        } else {
          spec_.objective.metric = *s;
        }
      }
    } else {
      sink_.At(n, "objective.metric", "missing required field 'metric'");
    }
    if (const MapEntry* e = Find(*m, "mode")) {
      if (auto s = internal::ReadEnum(sink_, e->value, "objective.mode", {"max", "min"}, {"maximize", "minimize"})) {
        spec_.objective.maximize = *s == "max" || *s == "maximize";
      }
    } else {
      sink_.At(n, "objective.mode", "missing required field 'mode' (max or min)");
    }
    if (const MapEntry* e = Find(*m, "scope")) {
      if (auto s = internal::ReadEnum(sink_, e->value, "objective.scope", {"last", "best"})) {
        spec_.objective.scope = *s == "best" ? Objective::Scope::kBest : Objective::Scope::kLast;
      }
    }
  }

  void ReadSampler(const YAML::Node& n) {
    internal::ReadSamplerSection(sink_, n, &spec_.sampler, &spec_.seed, &spec_.sampler_options);
  }

  void ReadBudget(const YAML::Node& n) {
    auto m = internal::ReadMapping(sink_, n, "budget",
                                   {"max_trials", "parallelism", "max_failed_trials", "max_retries"});
    if (!m) return;
    if (const MapEntry* e = Find(*m, "max_trials")) {
      if (auto v = internal::ReadInt(sink_, e->value, "budget.max_trials", 1, kMaxTrialsLimit)) {
        max_trials_ = static_cast<int>(*v);
      }
      max_trials_given_ = true;
    }
    if (const MapEntry* e = Find(*m, "parallelism")) {
      if (auto v = internal::ReadInt(sink_, e->value, "budget.parallelism", 1, kMaxTrialsLimit)) {
        spec_.parallelism = static_cast<int>(*v);
      }
    }
    if (const MapEntry* e = Find(*m, "max_failed_trials")) {
      if (auto v = internal::ReadInt(sink_, e->value, "budget.max_failed_trials", 1, INT32_MAX)) {
        spec_.max_failed_trials = static_cast<int>(*v);
      }
    }
    if (const MapEntry* e = Find(*m, "max_retries")) {
      if (auto v = internal::ReadInt(sink_, e->value, "budget.max_retries", 0, INT32_MAX)) {
        spec_.max_retries = static_cast<int>(*v);
      }
    }
  }

  // trial: {progress_timeout: 90 | "90s" | "15m" | "2h"}
  void ReadTrial(const YAML::Node& n) {
    auto m = internal::ReadMapping(sink_, n, "trial", {"progress_timeout"});
    if (!m) return;
    const MapEntry* e = Find(*m, "progress_timeout");
    if (e == nullptr) return;
    const YAML::Node& v = e->value;
    std::string text = v.IsScalar() ? v.Scalar() : "";
    double scale = 1;
    if (!text.empty() && (text.back() == 's' || text.back() == 'm' || text.back() == 'h')) {
      scale = text.back() == 'h' ? 3600 : text.back() == 'm' ? 60 : 1;
      text.pop_back();
    }
    char* end = nullptr;
    double seconds = text.empty() ? -1 : std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !(seconds > 0) || seconds * scale > 1e7) {
      sink_.At(v, "trial.progress_timeout",
               "expected a positive duration in seconds, or with a unit (90s, 15m, 2h), got " +
                   internal::Describe(v));
      return;
    }
    spec_.progress_timeout_s = seconds * scale;
  }

  void ReadResources(const YAML::Node& n) {
    auto m = internal::ReadMapping(sink_, n, "resources",
                                   {"nodes", "ranks_per_node", "gpus_per_rank", "launcher", "pool"});
    if (!m) return;
    auto read = [&](std::string_view key, int64_t min, int64_t max, int* out) {
      if (const MapEntry* e = Find(*m, key)) {
        if (auto v = internal::ReadInt(sink_, e->value, JoinField("resources", key), min, max)) {
          *out = static_cast<int>(*v);
        }
      }
    };
    read("nodes", 1, kMaxNodesPerTrial, &spec_.group.nodes);
    read("ranks_per_node", 1, kMaxRanksPerNode, &spec_.group.ranks_per_node);
    read("gpus_per_rank", 0, kMaxGpusPerRank, &spec_.group.gpus_per_rank);
    if (const MapEntry* e = Find(*m, "launcher")) {
      if (auto v = internal::ReadEnum(sink_, e->value, "resources.launcher", {"per_node", "mpirun", "srun"})) {
        spec_.group.launcher = *v == "mpirun" ? Launcher::kMpirun : *v == "srun" ? Launcher::kSrun : Launcher::kPerNode;
      }
    }
    if (const MapEntry* e = Find(*m, "pool")) {
      if (auto v = internal::ReadString(sink_, e->value, "resources.pool")) {
        if (!IsNameLike(*v)) {
          sink_.At(e->value, "resources.pool", "must match [A-Za-z0-9._-]+ (at most " +
                                                   std::to_string(kMaxNameLength) + " characters), got '" + *v + "'");
        } else {
          spec_.group.pool = *v;
        }
      }
    }
  }

  void ReadCommand(const YAML::Node& n) {
    if (n.IsScalar()) {
      std::string err;
      std::vector<std::string> words = SplitCommandLine(n.Scalar(), &err);
      if (!err.empty()) {
        sink_.At(n, "command", err);
        return;
      }
      if (words.empty()) {
        sink_.At(n, "command", "must not be empty");
        return;
      }
      for (size_t i = 0; i < words.size(); ++i) {
        sites_.push_back({"command[" + std::to_string(i) + "]", n.Mark(), words[i]});
      }
      spec_.command = std::move(words);
      return;
    }
    if (!n.IsSequence()) {
      sink_.At(n, "command", "expected a sequence of strings or a string, got " + internal::Describe(n));
      return;
    }
    if (n.size() == 0) {
      sink_.At(n, "command", "must not be empty");
      return;
    }
    for (size_t i = 0; i < n.size(); ++i) {
      const YAML::Node word = n[i];
      std::string field = "command[" + std::to_string(i) + "]";
      auto s = internal::ReadString(sink_, word, field);
      if (!s) continue;
      if (i == 0 && s->empty()) {
        sink_.At(word, field, "the program must not be empty");
        continue;
      }
      sites_.push_back({field, word.Mark(), *s});
      spec_.command.push_back(*s);
    }
  }

  void ReadEnv(const YAML::Node& n) {
    if (n.IsNull()) return;
    if (!n.IsMap()) {
      sink_.At(n, "env", "expected a mapping of NAME: value, got " + internal::Describe(n));
      return;
    }
    for (auto it = n.begin(); it != n.end(); ++it) {
      const YAML::Node key = it->first;
      const YAML::Node value = it->second;
      sink_.NoteKey(value, key);
      if (!key.IsScalar() || !internal::IsIdentifier(key.Scalar())) {
        sink_.At(key, "env", "an environment variable name is [A-Za-z_][A-Za-z0-9_]*, got " +
                                 internal::Describe(key));
        continue;
      }
      std::string field = "env." + key.Scalar();
      if (spec_.env.count(key.Scalar()) != 0) {
        sink_.At(key, field, "duplicate variable '" + key.Scalar() + "'");
        continue;
      }
      auto s = internal::ReadString(sink_, value, field);
      if (!s) continue;
      sites_.push_back({field, value.Mark(), *s});
      spec_.env[key.Scalar()] = *s;
    }
  }

  void ReadSpace(const YAML::Node& n) {
    internal::SpaceSection section;
    internal::ReadSpaceSection(sink_, n, &section);
    spec_.space = std::move(section.space);
    param_names_ = std::move(section.names);
    param_marks_ = std::move(section.marks);
    space_ok_ = section.ok;
  }

  // `enqueue:`: points read against the space once it read cleanly (else its errors would cascade).
  void ReadEnqueue(const MapEntry& e, bool has_space) {
    if (scales_present_) {
      sink_.At(e.key_node, "enqueue", "scales: plans the trials itself: leave enqueue out");
      return;
    }
    if (!has_space || !space_ok_) return;
    internal::ReadEnqueueSection(sink_, e.value, spec_.space, &spec_.enqueue);
    enqueue_node_ = e.key_node;
  }

  // warm_start: only where a model learns from it.
  void CheckWarmStart() {
    if (spec_.warm_start.search_id == 0) return;
    const std::string& s = spec_.sampler;
    if (scales_present_ || s == "grid" || s == "random" || s == "sobol") {
      sink_.At(warm_start_node_, "warm_start",
               "the " + (scales_present_ ? std::string("scales: sweep") : s + " sampler") +
                   " learns nothing from earlier trials: warm_start needs tpe, gp, cmaes or auto");
    }
  }

  void CheckEnqueue() {
    if (spec_.enqueue.empty()) return;
    if (spec_.sampler == "grid") {
      sink_.At(enqueue_node_, "enqueue", "the grid sampler visits its own points: enqueue needs another sampler");
    } else if (max_trials_given_ && max_trials_ < static_cast<int>(spec_.enqueue.size())) {
      sink_.At(enqueue_node_, "enqueue",
               std::to_string(spec_.enqueue.size()) + " points, more than budget.max_trials (" +
                   std::to_string(max_trials_) + "): enqueued points are trials of the search");
    }
  }

  void CheckBudget(const YAML::Node& root, const MapEntry* budget) {
    if (spec_.sampler != "grid" && !scales_present_ && !max_trials_given_) {
      sink_.At(budget != nullptr ? budget->value : root, "budget.max_trials",
               "missing required field 'max_trials' (only the grid sampler and scales: have a default)");
    }
    if (spec_.scales.enabled && max_trials_given_ && max_trials_ < static_cast<int>(ScalesGrid(spec_.scales).size())) {
      sink_.At(budget->value, "budget.max_trials",
               "scales: plans " + std::to_string(ScalesGrid(spec_.scales).size()) +
                   " grid trials; max_trials must be at least that (or left out: grid + extend x batches = " +
                   std::to_string(ScalesMaxTrials(spec_.scales)) + "), got " + std::to_string(max_trials_));
    }
  }

  void ReadScales(const YAML::Node& n) {
    scales_present_ = true;  // even when invalid: its parameters and budget default, so errors do not cascade
    spec_.sampler = "scales";
    param_names_.insert(param_names_.end(), {kScalesBatchParam, kScalesLrParam});
    internal::ReadScalesSection(sink_, n, &spec_.scales);
    if (!spec_.scales.enabled) return;
    spec_.space = ScalesSpace(spec_.scales);
    param_marks_.assign(spec_.space.params.size(), n.Mark());
  }

  void CheckGrid() {
    if (spec_.sampler != "grid") return;
    int64_t size = 1;
    bool ok = true;
    for (size_t i = 0; i < spec_.space.params.size(); ++i) {
      const ParamSpec& p = spec_.space.params[i];
      if (p.conditional()) {
        sink_.Add(param_marks_[i], "space." + p.name + ".condition",
                  "the grid sampler does not take conditional parameters");
        ok = false;
        continue;
      }
      if (p.kind != ParamKind::kCategorical && p.grid_points < 2) {
        sink_.Add(param_marks_[i], "space." + p.name + ".grid_points",
                  "the grid sampler needs grid_points (>= 2) for every float and int parameter");
        ok = false;
        continue;
      }
      size = std::min<int64_t>(size * static_cast<int64_t>(GridValues(p).size()), int64_t{kMaxTrialsLimit} + 1);
    }
    if (!ok) return;
    if (size > kMaxTrialsLimit) {
      sink_.Add(param_marks_.front(), "space",
                "the grid has more than " + std::to_string(kMaxTrialsLimit) + " points; lower grid_points");
      return;
    }
    grid_size_ = static_cast<int>(size);
  }

  void CheckPlaceholders() {
    std::vector<std::string> names = param_names_;
    for (const auto& b : BuiltinPlaceholders()) names.push_back(b);
    const std::unordered_set<std::string> known(names.begin(), names.end());
    size_t hints = 0;
    for (const TemplateSite& site : sites_) {
      ParsedTemplate parsed = ParseTemplate(site.text);
      if (!parsed.error.empty()) {
        sink_.Add(site.mark, site.field, parsed.error);
        continue;
      }
      for (const auto& piece : parsed.pieces) {
        if (!piece.is_placeholder || known.count(piece.text) != 0) continue;
        std::string msg = "unknown placeholder {" + piece.text + "}";
        std::string hint = hints++ < kMaxPlaceholderHints ? internal::ClosestMatch(piece.text, names) : "";
        if (!hint.empty()) msg += " (did you mean {" + hint + "}?)";
        sink_.Add(site.mark, site.field, msg);
      }
    }
  }

 public:
  // Fills the fields whose defaults depend on others; call once the reading found no error.
  void Finish() {
    if (spec_.sampler == "grid") {
      spec_.max_trials = max_trials_given_ ? std::min(max_trials_, grid_size_) : grid_size_;
    } else if (spec_.sampler == "scales" && !max_trials_given_) {
      spec_.max_trials = static_cast<int>(ScalesMaxTrials(spec_.scales));
    } else {
      spec_.max_trials = max_trials_;
    }
    if (spec_.max_failed_trials == 0) spec_.max_failed_trials = std::max(3, spec_.max_trials / 10);
    if (!scheduler_seed_given_) spec_.scheduler.seed = spec_.seed;
  }

 private:
  ErrorSink& sink_;
  SearchSpec& spec_;
  std::vector<TemplateSite> sites_;
  std::vector<std::string> param_names_;   // every well-formed name, even of parameters with errors
  std::vector<YAML::Mark> param_marks_;    // parallel to spec_.space.params
  bool space_ok_ = true;
  YAML::Node enqueue_node_;
  YAML::Node warm_start_node_;  // the `enqueue` and `warm_start` keys, for the checks against the budget and sampler
  // Where the checks of several objectives point: the keys (objectives, scheduler, ensemble), the sampler's value,
  // objective.metric's value.
  YAML::Node objectives_node_, scheduler_node_, ensemble_node_, sampler_node_, objective_metric_node_;
  bool max_trials_given_ = false;
  bool scheduler_seed_given_ = false;
  bool scales_present_ = false;
  int max_trials_ = 0;
  int grid_size_ = 0;
};

}  // namespace

std::string SpecError::ToString() const {
  std::string out = file;
  if (line > 0) {
    out += ":" + std::to_string(line);
    if (column > 0) out += ":" + std::to_string(column);
  }
  out += ": ";
  if (!field.empty()) out += field + ": ";
  out += message;
  return out;
}

ParseResult ParseSpec(std::string_view yaml_text, std::string_view path_for_errors) {
  ErrorSink sink{std::string(path_for_errors)};
  ParseResult result;
  SearchSpec spec;
  try {
    // Bounded before anything walks it: size and bytes, then the tree's shape (search/spec/spec_limits.h).
    if (internal::CheckSpecText(sink, yaml_text)) {
      YAML::Node root = YAML::Load(std::string(yaml_text));
      if (internal::CheckSpecShape(sink, root)) {
        SpecReader reader(sink, spec);
        reader.Read(root);
        if (sink.empty()) reader.Finish();
      }
    }
  } catch (const YAML::DeepRecursion& e) {
    sink.Add(e.mark, internal::KeyOfLine(yaml_text, e.mark.line),
             "nested deeper than " + std::to_string(internal::kMaxSpecDepth) + " levels; refused");
  } catch (const YAML::ParserException& e) {
    sink.Add(e.mark, internal::KeyOfLine(yaml_text, e.mark.line), e.msg);
  } catch (const YAML::Exception& e) {
    sink.Add(e.mark, internal::KeyOfLine(yaml_text, e.mark.line), e.msg);
  } catch (const std::exception& e) {
    sink.Add(YAML::Mark::null_mark(), "", std::string("cannot read the spec: ") + e.what());
  }
  result.errors = sink.Take();
  if (result.errors.empty()) result.spec = std::move(spec);
  return result;
}

}  // namespace ladder::search
