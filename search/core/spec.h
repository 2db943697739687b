#pragma once
// SearchSpec and its parts: a search as the user writes it in YAML, once read. Pure data, on the ground floor of
// search/ so that every subsystem can use it; the YAML format and its reader are in search/spec/spec_reader.h
// (ParseSpec), which assembles a spec from the sections each subsystem reads.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "search/core/container_options.h"
#include "search/core/scales.h"
#include "search/core/space.h"
#include "search/core/ensemble_options.h"
#include "search/core/stopping_options.h"

namespace ladder::search {

struct Objective {
  std::string metric;
  bool maximize = false;
  enum class Scope { kLast, kBest } scope = Scope::kLast;
};

// Built-in metrics: what the coordinator measures of every finished trial (a trial does not print them), named in
// `objectives:` beside the metrics a trial reports.
//   node_hours  the node-seconds of all its runs (each run's nodes x its duration) / 3600
//   wall_time   the seconds its runs ran, summed (a preempted or requeued trial's every run; queueing not counted)
inline constexpr std::string_view kNodeHoursMetric = "node_hours";
inline constexpr std::string_view kWallTimeMetric = "wall_time";
inline bool IsBuiltinMetric(std::string_view metric) {
  return metric == kNodeHoursMetric || metric == kWallTimeMetric;
}

// One of the spec's `constraints:`: the metric (one a trial reports, or a built-in one above) at most `bound`
// (max) or at least `bound` (min). Judged once a trial completed, on the metric's last reported value.
struct Constraint {
  std::string metric;
  bool max = true;  // false: a lower bound (min:)
  double bound = 0;
  // The value the samplers are told (Sampler::TellConstrained, Optuna's convention): <= 0 where it holds, else by
  // how far it is broken.
  double Signed(double value) const { return max ? value - bound : bound - value; }
};
// A trial whose signed constraint values are these broke one of them (a value that is not a number counts as
// broken: nothing says it held).
inline bool Infeasible(const std::vector<double>& signed_values) {
  for (double v : signed_values) {
    if (!(v <= 0)) return true;
  }
  return false;
}

// How a multi-rank trial's processes are started (resources.launcher):
//   per_node  every node's worker starts its local ranks with torchrun's variables (RANK, WORLD_SIZE,
//             LOCAL_RANK, MASTER_ADDR, MASTER_PORT): Gloo and NCCL rendezvous
//   mpirun    the group's first worker runs `mpirun -np WORLD --host h1:r,h2:r ... COMMAND`: MPI
//   srun      the group's first worker runs one Slurm step over the group's nodes (`srun --nodelist=...`): under
//             Slurm, MPI through PMIx or Gloo/NCCL with Slurm's rank variables
enum class Launcher { kPerNode, kMpirun, kSrun };

// One `stage:` entry: data on storage every node sees (`from`) staged into the node-local directory `to`
// (worker/stage.h):
//   a file                   copied to to/NAME (NAME: from's last component)
//   extract: true            the archive `from` (.tar, .tar.gz, .tgz, .tar.bz2, .tar.xz, .tar.zst, .zip) unpacked
//                            once per node into the directory to/STEM (the name without its archive suffix)
//   shard: node              each node of a trial's group gets only its share of a list of shard files: from a
//                            directory (its files, by name), into to/NAME/; or the list `shards`, into to/ itself.
//                            File k of the sorted list goes to the group's node k mod nodes.
struct StageFile {
  std::string from, to;             // from: empty for a list of shards
  std::vector<std::string> shards;  // shard: node with `from:` a list
  bool extract = false;
  bool shard_node = false;
};
// An archive name without its suffix ("data.tar.gz" -> "data"); "" when the name has none of extract's suffixes.
inline std::string ArchiveStem(const std::string& name) {
  for (const char* suffix : {".tar.gz", ".tar.bz2", ".tar.xz", ".tar.zst", ".tgz", ".tar", ".zip"}) {
    const std::string s(suffix);
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      return name.substr(0, name.size() - s.size());
    }
  }
  return "";
}
// What the entry makes under `to`: the copy's file name, the extracted directory, the shard directory; "" for a
// list of shards (they land in `to` itself).
inline std::string StagedName(const StageFile& f) {
  const std::string last = f.from.substr(f.from.rfind('/') + 1);
  return f.extract ? ArchiveStem(last) : last;
}

struct GroupRequest {
  int nodes = 1, ranks_per_node = 1, gpus_per_rank = 0;
  Launcher launcher = Launcher::kPerNode;
  std::string pool;  // [A-Za-z0-9._-]+; "": the shared nodes
};

// Options of the `sampler:` mapping; 0 means the sampler's own default. Each applies only to the samplers its
// comment names (the parser rejects it for the others).
struct SamplerOptions {
  int n_startup_trials = 0;  // tpe (default 10), gp (default clamp(2 * dims, 5, 20)), cmaes (default 0)
  int n_ei_candidates = 0;   // tpe (default 24)
  double gamma = 0;          // tpe (default 0.1; the good group has ceil(gamma * n) trials, at most 25)
  int max_history = 0;       // gp (default 200)
  int population = 0;        // cmaes (default 4 + floor(3 ln d)), nsga2 (default 50)
  double sigma0 = 0;         // cmaes (default 0.3)
  bool scramble = true;      // sobol
};

// `warm_start:`: an earlier search whose completed trials the samplers are told before their first suggestion.
struct WarmStartOptions {
  int64_t search_id = 0;  // 0: no warm start
  std::string db;         // "": the coordinator's own database; else another ladder.db, opened read-only
};

struct SearchSpec {
  std::string name;
  Objective objective;  // with `objectives:`, the first of them (what a trial's single objective value is)
  // `objectives:` (2 or more; empty for `objective:`): every trial completes with one value per objective, the
  // samplers are the multi-objective ones (search/multiobjective/mo_sampler.h) and the coordinator keeps the
  // Pareto front of the completed trials.
  std::vector<Objective> objectives;
  bool MultiObjective() const { return objectives.size() >= 2; }
  int max_trials = 0;
  int parallelism = 1;
  int max_failed_trials = 0;
  int max_retries = 2;
  std::string sampler = "auto";  // resolved to a concrete sampler by ResolveSampler (search/samplers/auto_sampler.h)
  uint64_t seed = 0;
  SamplerOptions sampler_options;
  GroupRequest group;
  std::vector<std::string> command;
  std::map<std::string, std::string> env;
  std::vector<StageFile> stage;   // `stage:`: copied to node-local storage before a trial's ranks start
  ContainerOptions container;     // `container:`: each rank's command inside an image (runtime kNone: on the host)
  double progress_timeout_s = 0;  // trial.progress_timeout; 0: no watchdog
  StoppingOptions scheduler;  // `scheduler:` (type none when absent)
  EnsembleOptions ensemble;         // `ensemble:` (enabled false when absent)
  ScalesOptions scales;             // `scales:` (sampler "scales"; the space is global_batch x lr)
  SearchSpace space;
  // `enqueue:`: configurations run first, in order, before any sampled trial (trials 0..n-1; each checked
  // against the space: search/core/point.h). They count against max_trials; the samplers are told their
  // results like any trial's and never asked for them.
  std::vector<Params> enqueue;
  // `warm_start:` (search_id 0 when absent): read by the coordinator when it creates the search (server/
  // search_manager_warm_start.cc), since search/ does no I/O.
  WarmStartOptions warm_start;
  // `constraints:`: a completed trial breaking one is infeasible (never the best trial; the model samplers learn
  // to avoid its region; never on a Pareto front). Not with pbt, ensemble:, scales: or warm_start:.
  std::vector<Constraint> constraints;
};

struct SpecError {
  std::string file;
  int line = 0, column = 0;  // 1-based; 0 when unknown
  std::string field;         // dotted path, e.g. "space.lr.low"
  std::string message;
  std::string ToString() const;  // "spec.yaml:12:5: space.lr.low: must be > 0 when log: true"
};

struct ParseResult {
  std::optional<SearchSpec> spec;  // set only when errors is empty
  std::vector<SpecError> errors;   // every error found, in file order
  bool ok() const { return errors.empty(); }
};

// Substitutes {name} placeholders in argv and env values. An unknown placeholder sets `error`.
struct Substituted {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::string error;
};
Substituted SubstituteCommand(const SearchSpec& spec, const Params& params,
                              const std::map<std::string, std::string>& builtins);

// The built-in placeholders every command may use.
inline const std::vector<std::string>& BuiltinPlaceholders() {
  static const std::vector<std::string> k = {"trial_id", "trial_number", "search_id", "checkpoint_dir", "nodes",
                                             "micro_batches"};
  return k;
}

}  // namespace ladder::search
