// The starts of a trial's run for each launcher: per node, mpirun, srun (see launch_commands.h).
#include "server/launch_commands.h"

#include <filesystem>

#include "common/container_trial_dir.h"
#include "common/id_set.h"
#include "server/container_command.h"
#include "server/params_codec.h"

namespace ladder::server {

const char* LauncherName(search::Launcher launcher) {
  switch (launcher) {
    case search::Launcher::kMpirun: return "mpirun";
    case search::Launcher::kSrun: return "srun";
    default: return "per_node";
  }
}

std::string SrunStepName(int64_t trial_id) { return "ladder-trial-" + std::to_string(trial_id); }

std::map<std::string, std::string> RunEnv(const search::SearchSpec& spec, const v1::Trial& trial, int64_t epoch,
                                          const search::Params& params, size_t members,
                                          const std::map<std::string, std::string>& command_env) {
  std::map<std::string, std::string> env(command_env.begin(), command_env.end());
  env["LADDER_TRIAL_ID"] = std::to_string(trial.id());
  env["LADDER_TRIAL_NUMBER"] = std::to_string(trial.number());
  env["LADDER_SEARCH_ID"] = std::to_string(trial.search_id());
  env["LADDER_ATTEMPT"] = std::to_string(trial.attempt());
  env["LADDER_ASSIGNMENT_EPOCH"] = std::to_string(epoch);  // this run's, as the worker's messages carry it
  env["LADDER_PARAMS"] = ParamsJson(params);
  env["LADDER_CHECKPOINT_DIR"] = trial.checkpoint_dir();
  env["LADDER_NODES"] = std::to_string(members);
  // How the ranks start: the worker stops an srun or mpirun trial through that launcher (worker/launcher_stop.h),
  // an srun step by its name.
  env["LADDER_LAUNCHER"] = LauncherName(spec.group.launcher);
  if (spec.group.launcher == search::Launcher::kSrun) env["LADDER_STEP_NAME"] = SrunStepName(trial.id());
  return env;
}

// The worker finds ladder-stage beside itself and puts that directory first on the ranks' PATH, which srun passes
// on; ladder-stage stages the files onto its node (once per node; the ranks of a node take turns) and then runs
// the command in its place.
std::vector<std::string> WithStaging(const search::SearchSpec& spec, const std::vector<std::string>& command) {
  if (spec.stage.empty()) return command;
  std::vector<std::string> argv = {"ladder-stage"};
  for (const auto& f : spec.stage) {
    if (f.extract) argv.push_back("--extract");
    if (f.shard_node) argv.insert(argv.end(), {"--shard", "node"});
    if (f.shard_node && f.from.empty()) {
      for (const auto& s : f.shards) argv.insert(argv.end(), {"--from", s});
    } else {
      argv.insert(argv.end(), {"--from", f.shard_node ? f.from + "/" : f.from});  // DIR/: a directory of shards
    }
    argv.insert(argv.end(), {"--to", f.to});
  }
  argv.push_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

std::vector<std::string> InContainer(const search::SearchSpec& spec, const std::string& checkpoint_dir,
                                     const std::map<std::string, std::string>& env,
                                     const std::vector<std::string>& command) {
  if (spec.container.runtime == search::ContainerRuntime::kNone) return command;
  ContainerRun run;
  run.trial_dir = kTrialDirPlaceholder;  // the worker's, filled in by it (common/container_trial_dir.h)
  run.checkpoint_dir = checkpoint_dir;
  // ROOT/search-S/trial-T (TrialManager::CheckpointDir): ROOT
  const std::filesystem::path trial_dir(checkpoint_dir);
  if (trial_dir.parent_path().filename().string().rfind("search-", 0) == 0) {
    run.checkpoint_root = trial_dir.parent_path().parent_path().string();
  }
  for (const auto& f : spec.stage) run.stage_dirs.push_back(f.to);
  for (const auto& [name, value] : env) run.env_names.push_back(name);
  // What the worker sets per rank (RANK, LOCAL_RANK, LOCAL_WORLD_SIZE; CUDA_VISIBLE_DEVICES with GPUs; its trial
  // directory, node and slots), when not there already.
  for (const char* name : {"RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "CUDA_VISIBLE_DEVICES", "LADDER_TRIAL_DIR",
                           kHostTrialDirVariable, "LADDER_NODE_ID", "LADDER_WORKER_SLOTS"}) {
    if (!env.count(name)) run.env_names.push_back(name);
  }
  run.gpus = spec.group.gpus_per_rank > 0;
  return ContainerLine(spec.container, run, command);
}

void AddTorchrunEnv(const std::vector<LaunchMember>& members, int world, int ranks_per_node,
                    const LaunchSettings& settings, std::map<std::string, std::string>* env) {
  std::string master = settings.master_addr;
  if (members.size() > 1) master = members.front().address.value_or(master);
  (*env)["WORLD_SIZE"] = std::to_string(world);
  (*env)["LOCAL_WORLD_SIZE"] = std::to_string(ranks_per_node);
  (*env)["MASTER_ADDR"] = master;
  (*env)["MASTER_PORT"] = std::to_string(settings.master_port);
  // Rank 0's rendezvous store admits only connections that bring this run's secret (trainer/comm/bound_store.h):
  // another user who reaches MASTER_PORT cannot read or write the keys the ranks exchange. A new one per run.
  (*env)["LADDER_RENDEZVOUS_SECRET"] = settings.rendezvous_secret;
}

std::vector<std::string> MpirunLine(const std::vector<std::string>& mpirun, const std::vector<LaunchMember>& members,
                                    int world, const std::map<std::string, std::string>& env,
                                    const std::vector<std::string>& command) {
  std::vector<std::string> words = mpirun;
  std::string hosts;
  for (const auto& m : members) {
    hosts += (hosts.empty() ? "" : ",") + m.address.value_or(m.node_id) + ":" + std::to_string(m.slots.size());
  }
  words.insert(words.end(), {"-np", std::to_string(world), "--host", hosts});
  for (const auto& [k, v] : env) words.insert(words.end(), {"-x", k});
  words.insert(words.end(), command.begin(), command.end());
  return words;
}

std::vector<std::string> SrunLine(const std::vector<std::string>& srun, int64_t trial_id,
                                  const std::vector<LaunchMember>& members, int ranks_per_node, int world,
                                  const std::vector<std::string>& command) {
  // The workers' node ids are Slurm's node names (ladder up --slurm): the step runs on exactly the group's nodes,
  // and in ladder's rank order (rank 0 on the first member, whose address is MASTER_ADDR): with the arbitrary
  // distribution the node list is the task layout, one entry per rank (Slurm would otherwise number the ranks in
  // its own node order).
  std::string nodelist;
  for (const auto& m : members) {
    for (int r = 0; r < ranks_per_node; ++r) nodelist += (nodelist.empty() ? "" : ",") + m.node_id;
  }
  std::vector<std::string> words = srun;
  words.insert(words.end(),
               {"--nodes=" + std::to_string(members.size()), "--ntasks=" + std::to_string(world),
                "--ntasks-per-node=" + std::to_string(ranks_per_node), "--distribution=arbitrary",
                "--nodelist=" + nodelist,
                // ladder holds the slots: the step shares the allocation with the workers' step and the others
                "--overlap", "--kill-on-bad-exit=1", "--mpi=pmix", "--export=ALL",
                "--job-name=" + SrunStepName(trial_id)});
  words.insert(words.end(), command.begin(), command.end());
  return words;
}

std::vector<MemberStart> StartMessages(const search::SearchSpec& spec, const LaunchRun& run,
                                       const std::vector<LaunchMember>& members, const LaunchSettings& settings) {
  const search::Launcher launcher = spec.group.launcher;
  const int world = run.nodes * spec.group.ranks_per_node;
  // mpirun and srun: one process on the first node starts every rank; the other nodes' slots are only held.
  const bool one_launch = launcher != search::Launcher::kPerNode;
  std::map<std::string, std::string> env = run.env;
  if (launcher != search::Launcher::kMpirun) AddTorchrunEnv(members, world, spec.group.ranks_per_node, settings, &env);
  // In a container: its runtime, which also has the worker fill in the trial directory it binds (InContainer).
  if (spec.container.runtime != search::ContainerRuntime::kNone) {
    env[kContainerVariable] = search::ContainerRuntimeName(spec.container.runtime);
  }
  std::vector<std::string> argv = WithStaging(spec, InContainer(spec, run.checkpoint_dir, env, run.command));
  if (launcher == search::Launcher::kMpirun) argv = MpirunLine(settings.mpirun, members, world, env, argv);
  if (launcher == search::Launcher::kSrun) {
    argv = SrunLine(settings.srun, run.trial_id, members, spec.group.ranks_per_node, world, argv);
  }
  std::vector<MemberStart> starts;
  for (size_t i = 0; i < members.size(); ++i) {
    const LaunchMember& m = members[i];
    if (one_launch && m.first_rank != 0) continue;  // the launch's ranks run there; the worker only holds slots
    MemberStart out;
    out.member = i;
    v1::StartTrial& st = out.start;
    st.set_trial_id(run.trial_id);
    st.set_search_id(run.search_id);
    st.set_assignment_epoch(run.epoch);
    for (const auto& a : argv) st.add_argv(a);
    auto& menv = *st.mutable_env();
    for (const auto& [k, v] : env) menv[k] = v;
    if (!one_launch) {
      menv["RANK"] = std::to_string(m.first_rank);
      menv["LOCAL_RANK"] = "0";
    }
    if (!m.gpus.empty()) menv["CUDA_VISIBLE_DEVICES"] = FormatIdSet(m.gpus);
    st.set_checkpoint_dir(run.checkpoint_dir);
    // The node's worker starts its local ranks (RANK = first_rank + k, LOCAL_RANK = k) and stops them all when
    // one fails.
    st.set_local_ranks(one_launch ? 1 : spec.group.ranks_per_node);
    st.set_first_rank(m.first_rank);
    for (int sl : m.slots) st.add_slots(sl);
    starts.push_back(std::move(out));
  }
  return starts;
}

}  // namespace ladder::server
