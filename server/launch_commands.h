#pragma once
// The starts of a trial's run for each launcher (resources.launcher): pure functions from the spec, the run, the
// group's members and their addresses to the StartTrial messages the members' workers get. No coordinator state,
// no I/O: TrialLauncher (server/trial_launcher.h) gathers the inputs — the addresses, this run's rendezvous port and
// secret — and hands the messages over.
//
// What every rank gets, by launcher:
//   per_node  each member's worker starts its local ranks (RANK = first_rank + k, LOCAL_RANK = k) with torchrun's
//             variables: WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR (rank 0's node address), MASTER_PORT and the
//             rendezvous secret.
//   mpirun    the first member's worker runs `mpirun -np W --host a:S,b:S -x VAR... COMMAND`; the other members
//             get no start (their slots are only held). No torchrun variables: mpirun numbers the ranks.
//   srun      the first member's worker runs one Slurm step over the group's nodes (named after the trial, so that
//             the worker can signal it), with torchrun's variables; the other members get no start.
// A spec with `stage:` runs every rank through ladder-stage first (worker/stage.h); one with `container:` runs each
// rank's command inside the container (after ladder-stage, which stays on the host).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ladder/v1/ladder.pb.h"
#include "search/core/space.h"
#include "search/core/spec.h"

namespace ladder::server {

// One node of the run's group, as a start needs it.
struct LaunchMember {
  std::string node_id;                 // with srun: Slurm's node name (ladder up --slurm labels workers so)
  std::optional<std::string> address;  // the node's worker's address, when the coordinator knows it
  std::vector<int> slots, gpus;
  int first_rank = 0;
};

// The run: the trial, its assignment, its command (placeholders substituted) and what every process gets.
struct LaunchRun {
  int64_t trial_id = 0;
  int64_t search_id = 0;
  int64_t epoch = 0;  // the assignment epoch
  std::string checkpoint_dir;
  int nodes = 0;      // the trial's node count: WORLD_SIZE = nodes x group.ranks_per_node
  std::vector<std::string> command;
  std::map<std::string, std::string> env;  // RunEnv's
};

// The coordinator's side of a launch: its mpirun and srun words, the MASTER_ADDR of a one-node run, and this run's
// rendezvous (its port, rendezvous_port.h; a fresh secret that rank 0's store requires, trainer/comm/bound_store.h).
struct LaunchSettings {
  std::vector<std::string> mpirun, srun;
  std::string master_addr;
  int master_port = 0;
  std::string rendezvous_secret;
};

// A start for the member at `member` (an index into the members given).
struct MemberStart {
  size_t member = 0;
  v1::StartTrial start;
};

// resources.launcher as LADDER_LAUNCHER says it: "per_node", "mpirun", "srun".
const char* LauncherName(search::Launcher launcher);
// A trial's Slurm step name: the worker that runs its srun finds the step by it to signal its tasks.
std::string SrunStepName(int64_t trial_id);

// What every started process of the run gets: the command's own variables, then LADDER_TRIAL_ID, _TRIAL_NUMBER,
// _SEARCH_ID, _ATTEMPT, _ASSIGNMENT_EPOCH, _PARAMS, _CHECKPOINT_DIR (the trial's, already set), _NODES (members),
// _LAUNCHER and, for srun, _STEP_NAME.
std::map<std::string, std::string> RunEnv(const search::SearchSpec& spec, const v1::Trial& trial, int64_t epoch,
                                          const search::Params& params, size_t members,
                                          const std::map<std::string, std::string>& command_env);

// `stage:`: `ladder-stage --from F --to DIR ... -- COMMAND` (the command itself without stage:); an archive to
// extract is `--extract --from A --to DIR`, shards `--shard node --from SHARD_DIR/ --to DIR` or
// `--shard node --from F1 --from F2 ... --to DIR`.
std::vector<std::string> WithStaging(const search::SearchSpec& spec, const std::vector<std::string>& command);

// `container:`: the rank's command inside the container (server/container_command.h), binding the trial directory
// ("{trial_dir}", filled in by the worker: common/container_trial_dir.h), the checkpoint and staged directories,
// passing `env`'s variables and the worker's per-rank ones; `command` itself without one. ladder-stage stays outside.
std::vector<std::string> InContainer(const search::SearchSpec& spec, const std::string& checkpoint_dir,
                                     const std::map<std::string, std::string>& env,
                                     const std::vector<std::string>& command);

// torchrun's variables for a run of `world` ranks: MASTER_ADDR is the first member's address when the group has
// more than one node (settings.master_addr otherwise, or when the address is not known).
void AddTorchrunEnv(const std::vector<LaunchMember>& members, int world, int ranks_per_node,
                    const LaunchSettings& settings, std::map<std::string, std::string>* env);

// mpirun's line: settings.mpirun, -np, --host with every member's address (its node id when not known) and slot
// count, -x for each variable of `env`, then `command`.
std::vector<std::string> MpirunLine(const std::vector<std::string>& mpirun, const std::vector<LaunchMember>& members,
                                    int world, const std::map<std::string, std::string>& env,
                                    const std::vector<std::string>& command);

// srun's line: one step on exactly the group's nodes, in ladder's rank order (the arbitrary distribution with one
// node list entry per rank), sharing the allocation (--overlap), named SrunStepName(trial_id).
std::vector<std::string> SrunLine(const std::vector<std::string>& srun, int64_t trial_id,
                                  const std::vector<LaunchMember>& members, int ranks_per_node, int world,
                                  const std::vector<std::string>& command);

// The run's starts, one per member that starts processes (every member per node; the first one with mpirun and
// srun), in the members' order. With a container, each start's env has LADDER_CONTAINER (its runtime).
std::vector<MemberStart> StartMessages(const search::SearchSpec& spec, const LaunchRun& run,
                                       const std::vector<LaunchMember>& members, const LaunchSettings& settings);

}  // namespace ladder::server
