#pragma once
// SearchSpec: a search as the user writes it, in YAML (W&B sweep / Katib / Determined conventions).
// The users' reference is docs/guide/spec.md: every field with its type, default and an example. The ctest
// Guide.EverySpecFieldAndCommandIsDocumented fails when a field read here is missing there (or the reverse).
//
//   name: digits-mlp                 # required, [A-Za-z0-9._-]+, at most 64 characters
//   objective:                       # required
//     metric: val_accuracy           # a metric name the trial prints in its JSON lines (docs/METRICS.md)
//     mode: max                      # max | min
//     scope: last                    # last (default) | best: which reported value is the trial's objective
//   objectives:                      # instead of objective (not both): several, 2 to 16 (objectives_section.h)
//     - {metric: val_loss, mode: min}   # each a metric the trial prints (its last value), or a built-in one:
//     - {metric: node_hours, mode: min} # node_hours, wall_time (search/core/spec.h), allowed only here. The sampler
//                                    # is then auto, tpe, nsga2, random or sobol (search/multiobjective/mo_sampler.h);
//                                    # scheduler, ensemble, warm_start and scales, which rank by one value, are
//                                    # refused; objective is objectives[0]
//   budget:
//     max_trials: 8                  # 1..1000000; required unless the sampler is grid (default: grid size)
//     parallelism: 2                 # trials at once (default 1)
//     max_failed_trials: 3           # the search fails after this many failed trials (default max(3, 10%))
//     max_retries: 2                 # requeues of a trial whose worker was lost (default 2)
//   sampler:                         # a type name, or a mapping (default auto, seed 0)
//     type: tpe                      # auto | random | grid | sobol | tpe | gp | cmaes (auto: search/samplers/auto_sampler.h)
//                                    # | nsga2 (only with objectives:)
//     seed: 1
//     n_startup_trials: 10           # tpe, gp, cmaes: Sobol points before the model is used (default: see below)
//     n_ei_candidates: 24            # tpe: candidates drawn from l(x) per suggestion
//     gamma: 0.1                     # tpe: fraction of the trials in the good group, at most 25 trials
//     max_history: 200               # gp: trials in the model (the best quarter and the most recent)
//     population: 8                  # cmaes: lambda (default 4 + 3 ln d); nsga2: a generation (default 50)
//     sigma0: 0.3                    # cmaes: initial step size, in unit-cube coordinates
//     scramble: true                 # sobol: Owen scrambling seeded by `seed` (false: the plain sequence)
//   resources:                       # the node group each trial needs (default 1 x 1 x 0)
//     nodes: 1
//     ranks_per_node: 1
//     gpus_per_rank: 0
//     launcher: per_node             # per_node (torchrun variables; Gloo/NCCL) | mpirun (MPI) | srun (a Slurm
//                                    # step); see Launcher
//     pool: hero-7                   # only nodes whose worker has the label pool=hero-7 (default: the shared
//                                    # nodes, those without one); ladder promote --submit sets it
//   command: [ladder-train, --lr, "{lr}"]   # a list, or one string split into words like a shell would
//                                           # (quotes, backslashes); no shell runs. {name} is replaced by
//                                           # the parameter's value; also {trial_id} {trial_number}
//                                           # {search_id} {checkpoint_dir} {nodes} (the trial's node
//                                           # count); {{ and }} are literal braces.
//   env: {OMP_NUM_THREADS: "1"}      # extra environment for the trial; values may hold placeholders
//   stage:                           # files copied to node-local storage before a trial runs (default none)
//     - {from: /lustre/me/data.tar, to: /tmp/ladder-stage}   # absolute paths; the trial reads
//                                    # /tmp/ladder-stage/data.tar. Once per node, checked by size and CRC-32,
//                                    # reused by that node's later trials (ladder-stage; under ladder up --slurm
//                                    # --run, sbcast delivers it to every node of the job first)
//     - {from: /lustre/me/imgs.tar, to: /tmp/s, extract: true}  # unpacked once per node into /tmp/s/imgs/
//     - {from: /lustre/me/shards, to: /tmp/s, shard: node}      # each node of a trial only its share of the
//                                    # directory's files (or of a list: from: [F1, F2, ...]); see StageFile
//   container:                       # each rank's command inside an image; ladder stays on the host (default none)
//     runtime: charliecloud          # charliecloud (ch-run) | apptainer (apptainer exec) | podman (podman run)
//     image: /scratch/me/img         # absolute path (podman: an image name)
//     binds: [/lustre/me/code]       # SRC or SRC:DST, besides the checkpoint and staged directories
//   trial:
//     progress_timeout: 10m          # the watchdog fails a trial that prints no metrics line for this long
//                                    # (seconds, or a number with s/m/h; default: no watchdog)
//   scheduler:                       # early stopping / multi-fidelity (default none); search/stopping/stopping_rule.h
//     type: asha                     # none | asha | hyperband | median | pbt (a type name alone also works
//                                    # for none and median)
//     resource: epoch                # the metric that grows along a trial: epoch (default), step, samples, or
//                                    # the trial's scale; a report is a metrics line with it and the objective.
//                                    # nodes (asha, hyperband): the rungs are node counts; a trial runs in
//                                    # stages, relaunched on more nodes from its checkpoint (NodeLevels)
//     min_resource: 1                # asha, hyperband: the first rung r (default 1)
//     max_resource: 27               # asha, hyperband (required): R, where a trial is stopped (done)
//     reduction_factor: 3            # asha, hyperband: eta > 1 (default 3); rungs at r * eta^k < R
//     brackets: 4                    # hyperband: brackets used, at most floor(log_eta(R / r)) + 1 (default)
//     grace_period: 1                # median: no trial is stopped below this resource (default 1)
//     min_trials: 3                  # median: other trials needed at a resource to compare (default 3)
//     perturbation_interval: 4       # pbt (required): resource between exploit/explore steps
//     quantile: 0.25                 # pbt: bottom/top fraction of the population, in (0, 0.5] (default 0.25)
//     resample_probability: 0.25     # pbt: a perturbed parameter is redrawn instead, in [0, 1] (default 0.25)
//     seed: 0                        # pbt's choices (default: the sampler's seed)
//   ensemble:                        # greedy ensemble selection over the best trials (search/ensemble/ensemble.h)
//     predictions_file: "{checkpoint_dir}/val_predictions.csv"  # required: where a trial saves its
//                                    # validation predictions; placeholders as in `command`
//     size: 10                       # selection rounds, members counted with repetition (default 10)
//     top_k: 20                      # candidates: the best completed trials by the objective (default 20)
//     metric: log_loss               # accuracy | log_loss | mse (default log_loss)
//     retrain: [retrain-ensemble, --members, "{ensemble_file}"]  # optional: one workflow step after the
//                                    # selection that retrains the members together (see EnsembleOptions)
//   scales:                          # instead of space and sampler: a batch x learning-rate sweep planned
//     global_batch: [32, 64, 128]    # for `ladder promote` (search/core/scales.h)
//     lr: {low: 0.01, high: 0.16}
//   space:                           # required (unless scales:), at least one parameter
//     lr: {type: float, low: 1.0e-4, high: 0.1, log: true}
//     batch_size: {type: int, low: 16, high: 128, log: true}
//     width: {type: int, low: 32, high: 256, grid_points: 3}
//     optimizer: {type: categorical, values: [sgd, adam]}
//     momentum: {type: float, low: 0.0, high: 0.99, condition: {param: optimizer, in: [sgd]}}  # see below
//   enqueue:                         # configurations to run first, in order, before any sampled trial
//     - {lr: 0.01, batch_size: 64, width: 128, optimizer: sgd, momentum: 0.9}   # (default none)
//                                    # every active parameter, nothing else: each point is read against the
//                                    # space (search/core/point.h) and an error names enqueue[i].NAME and the
//                                    # value. They are trials 0..n-1 of the search and count against
//                                    # max_trials; the samplers learn from them as from any trial. Not with the
//                                    # grid sampler or scales:. `ladder search enqueue ID` adds more to a
//                                    # running search.
//   warm_start: {search: 3}          # or {db: /path/other.db, search: 3}: the earlier search's completed trials
//                                    # are told to the sampler before its first suggestion (the coordinator reads
//                                    # them when it creates the search; another db is opened read-only). Its
//                                    # space must have the same parameters, each of the same kind, and its
//                                    # objective the same metric and mode (else the search is refused, saying
//                                    # which); its trials outside this space's bounds or conditions are skipped
//                                    # and counted. Not run again, not trials of this search (not listed, not
//                                    # counted against max_trials, never its best); tpe, gp, cmaes and auto only.
//
// Also accepted: `description:` (free text, ignored); mode `maximize`/`minimize`. Float ranges need low < high,
// int ranges low <= high (integers); log needs low > 0 (int: >= 1). Categorical values are non-empty and
// distinct. The grid sampler needs grid_points >= 2 on every float/int parameter; its max_trials is at most
// the grid size. A `condition` names a categorical parameter defined above it and some of its values; the
// parameter is active (and appears in the trial's parameters) only when that one takes one of them; a command
// word or env value that mentions an inactive parameter is left out (write `--momentum={momentum}` as one
// word). The grid sampler takes no conditions. Parameter names are [A-Za-z_][A-Za-z0-9_]* and may not be a built-in
// placeholder's name.
//
// The stopping rule's resource must differ from the objective's metric; asha and hyperband need
// min_resource < max_resource; pbt needs budget.parallelism >= 2 (its population is the trials running at once).
//
// ParseSpec reports every error it finds, each with file:line:column and the dotted field, its text escaped
// (common/printable.h). Its cost is linear in the text, which is bounded first (search/spec/spec_limits.h): at most
// 256 KiB of UTF-8 without control bytes, nested at most 32 deep, at most 10,000 entries in a list or mapping
// (categorical values included), 50,000 values in all (an alias counted at each use), 64 KiB per value; a spec
// past a limit is refused with one error naming the line, the field and the limit. Trial shape: nodes at most
// 65,536, ranks_per_node 4,096, gpus_per_rank 1,024.
#include <string_view>

#include "search/core/spec.h"

namespace ladder::search {

ParseResult ParseSpec(std::string_view yaml_text, std::string_view path_for_errors);

}  // namespace ladder::search
