// TrialManager: launching a trial on the node group the scheduler gave it — the members and their placement,
// the command with its placeholders, what every rank gets (LADDER_*, torchrun's variables or an mpirun line),
// and the starts, which leave only after the commit of the allocation and epoch they carry.
#include "common/id_set.h"
#include "common/log.h"
#include "common/token.h"
#include "server/params_codec.h"
#include "server/rendezvous_port.h"
#include "server/trial_manager.h"
#include "common/wall_clock.h"

namespace ladder::server {

namespace {

constexpr const char* kLog = "coordinator";

// The trial's command: the spec's (or, for the ensemble's retrain step, ensemble.retrain) with its placeholders.
search::Substituted CommandOf(const search::SearchSpec& spec, const TrialRecord& t,
                              std::map<std::string, std::string> builtins) {
  if (!t.workflow_step) return search::SubstituteCommand(spec, t.params, builtins);
  search::SearchSpec step = spec;
  step.command = spec.ensemble.retrain;
  builtins["ensemble_file"] = t.proto.checkpoint_dir() + "/ensemble.json";
  search::Substituted sub = search::SubstituteCommand(step, t.params, builtins);
  sub.env["LADDER_ENSEMBLE_FILE"] = builtins["ensemble_file"];
  return sub;
}

// `stage:`: every rank runs `ladder-stage --from F --to DIR ... -- COMMAND` (worker/stage.h), which stages the
// files onto its node (once per node; the ranks of a node take turns) and then runs the command in its place. The
// worker finds ladder-stage beside itself and puts that directory first on the ranks' PATH, which srun passes on.
std::vector<std::string> WithStaging(const search::SearchSpec& spec, const std::vector<std::string>& command) {
  if (spec.stage.empty()) return command;
  std::vector<std::string> argv = {"ladder-stage"};
  for (const auto& f : spec.stage) argv.insert(argv.end(), {"--from", f.from, "--to", f.to});
  argv.push_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

// A trial's Slurm step name: the worker that runs its srun finds the step by it to signal its tasks.
std::string SrunStepName(int64_t trial_id) { return "ladder-trial-" + std::to_string(trial_id); }

const char* LauncherName(search::Launcher l) {
  switch (l) {
    case search::Launcher::kMpirun: return "mpirun";
    case search::Launcher::kSrun: return "srun";
    default: return "per_node";
  }
}

}  // namespace

void TrialManager::AssignMembers(TrialRecord& t, const scheduler::NodeGroup& group) {
  t.members.clear();
  t.proto.clear_placement();
  const auto& cluster = sched_.cluster();
  for (const auto& slice : group.slices) {
    TrialRecord::Member m;
    m.node_id = cluster.spec(slice.node).id;
    m.epoch = t.epoch;
    m.slots = slice.slots;
    m.gpus = slice.gpus;
    m.first_rank = slice.first_rank;
    auto* pl = t.proto.add_placement();
    pl->set_node_id(m.node_id);
    std::string hostname = nodes_.Hostname(m.node_id);
    if (!hostname.empty()) pl->set_hostname(hostname);
    for (int sl : m.slots) pl->add_slots(sl);
    for (int g : m.gpus) pl->add_gpus(g);
    pl->set_first_rank(m.first_rank);
    t.members.push_back(std::move(m));
  }
}

void TrialManager::Launch(TrialRecord& t, const scheduler::NodeGroup& group) {
  const search::SearchSpec& spec = owner_->Spec(t.proto.search_id());
  const auto& p = t.proto;
  t.proto.set_checkpoint_dir(CheckpointDir(t));
  t.epoch = next_assignment_epoch_++;
  AssignMembers(t, group);
  search::Substituted sub = CommandOf(spec, t, Builtins(t));
  if (!sub.error.empty()) {
    SetState(t, v1::TRIAL_RUNNING);
    Finish(t, v1::TRIAL_FAILED, -1, std::string(t.workflow_step ? "ensemble.retrain: " : "command: ") + sub.error);
    return;
  }
  t.last_progress = Clock::now();
  t.watchdog_error.clear();
  t.preempting = false;
  t.port_taken = false;
  t.early_stop.clear();
  t.exploit.reset();
  t.proto.clear_command();
  for (const auto& a : sub.argv) t.proto.add_command(a);
  t.proto.set_started_unix(WallNow());
  t.proto.clear_last_metrics();
  t.proto.set_metric_count(0);
  t.proto.set_ignored_lines(0);
  t.proto.clear_last_ignored_line();
  SetState(t, v1::TRIAL_RUNNING);
  std::string nodes, where;
  for (const auto& m : t.members) {
    nodes += (nodes.empty() ? "" : ",") + m.node_id;
    where += (where.empty() ? "" : " ") + m.node_id + ":s[" + FormatIdSet(m.slots) + "]";
  }
  // The same instant as the stored run's start: node-seconds agree after a restart.
  OpenRun(t, WallNow(), static_cast<int>(t.members.size()));
  store_.OpenAllocation(p.id(), p.attempt(), nodes, group.ToString(), t.epoch, t.run_since);
  t.log_tail.clear();
  Save(t);
  hub_.Record("trial_assigned", p.search_id(), p.id(), where + " epoch " + std::to_string(t.epoch));

  // What every started process gets.
  std::map<std::string, std::string> env(sub.env.begin(), sub.env.end());
  env["LADDER_TRIAL_ID"] = std::to_string(p.id());
  env["LADDER_TRIAL_NUMBER"] = std::to_string(p.number());
  env["LADDER_SEARCH_ID"] = std::to_string(p.search_id());
  env["LADDER_ATTEMPT"] = std::to_string(p.attempt());
  env["LADDER_ASSIGNMENT_EPOCH"] = std::to_string(t.epoch);  // this run's, as the worker's messages carry it
  env["LADDER_PARAMS"] = ParamsJson(t.params);
  env["LADDER_CHECKPOINT_DIR"] = p.checkpoint_dir();
  env["LADDER_NODES"] = std::to_string(t.members.size());
  // How the ranks start: the worker stops an srun or mpirun trial through that launcher (worker/launcher_stop.h),
  // an srun step by its name.
  env["LADDER_LAUNCHER"] = LauncherName(spec.group.launcher);
  if (spec.group.launcher == search::Launcher::kSrun) env["LADDER_STEP_NAME"] = SrunStepName(p.id());
  SendStarts(t, sub.argv, std::move(env));
  for (auto& m : t.members) nodes_.UpdateBusy(m.node_id);  // mpirun's other nodes are held too
  if (!t.AnyLive()) {
    RequeueOrFail(t, "no worker stream to start it on");
    return;
  }
  hub_.Trial(t.proto);
  owner_->OnCountsChanged(p.search_id());
}

std::vector<std::string> TrialManager::SrunLine(const TrialRecord& t, int ranks_per_node, int world,
                                                const std::vector<std::string>& command) const {
  // The workers' node ids are Slurm's node names (ladder up --slurm): the step runs on exactly the group's nodes,
  // and in ladder's rank order (rank 0 on the first member, whose address is MASTER_ADDR): with the arbitrary
  // distribution the node list is the task layout, one entry per rank (Slurm would otherwise number the ranks in
  // its own node order).
  std::string nodelist;
  for (const auto& m : t.members) {
    for (int r = 0; r < ranks_per_node; ++r) nodelist += (nodelist.empty() ? "" : ",") + m.node_id;
  }
  std::vector<std::string> words = opt_.srun;
  words.insert(words.end(),
               {"--nodes=" + std::to_string(t.members.size()), "--ntasks=" + std::to_string(world),
                "--ntasks-per-node=" + std::to_string(ranks_per_node), "--distribution=arbitrary",
                "--nodelist=" + nodelist,
                // ladder holds the slots: the step shares the allocation with the workers' step and the others
                "--overlap", "--kill-on-bad-exit=1", "--mpi=pmix", "--export=ALL",
                "--job-name=" + SrunStepName(t.proto.id())});
  words.insert(words.end(), command.begin(), command.end());
  return words;
}

void TrialManager::SendStarts(TrialRecord& t, const std::vector<std::string>& command,
                              std::map<std::string, std::string> env) {
  const search::SearchSpec& spec = owner_->Spec(t.proto.search_id());
  const auto& p = t.proto;
  const int world = Nodes(t) * spec.group.ranks_per_node;
  // mpirun and srun: one process on the first node starts every rank; the other nodes' slots are only held.
  const bool one_launch = spec.group.launcher != search::Launcher::kPerNode;
  std::vector<std::string> argv = WithStaging(spec, command);
  if (spec.group.launcher == search::Launcher::kMpirun) {
    std::vector<std::string> words = opt_.mpirun;
    std::string hosts;
    for (const auto& m : t.members) {
      std::string host = nodes_.Address(m.node_id).value_or(m.node_id);
      hosts += (hosts.empty() ? "" : ",") + host + ":" + std::to_string(m.slots.size());
    }
    words.insert(words.end(), {"-np", std::to_string(world), "--host", hosts});
    for (const auto& [k, v] : env) words.insert(words.end(), {"-x", k});
    words.insert(words.end(), argv.begin(), argv.end());
    argv = std::move(words);
  } else {
    std::string master = opt_.master_addr;
    if (t.members.size() > 1) master = nodes_.Address(t.members.front().node_id).value_or(master);
    env["WORLD_SIZE"] = std::to_string(world);
    env["LOCAL_WORLD_SIZE"] = std::to_string(spec.group.ranks_per_node);
    env["MASTER_ADDR"] = master;
    env["MASTER_PORT"] =
        std::to_string(RendezvousPort(opt_.rendezvous_port_base, opt_.rendezvous_port_span, p.id(), t.port_collisions));
    // Rank 0's rendezvous store admits only connections that bring this run's secret (trainer/comm/bound_store.h):
    // another user who reaches MASTER_PORT cannot read or write the keys the ranks exchange. A new one per run.
    env["LADDER_RENDEZVOUS_SECRET"] = GenerateToken();
  }
  if (spec.group.launcher == search::Launcher::kSrun) argv = SrunLine(t, spec.group.ranks_per_node, world, argv);
  for (auto& m : t.members) {
    if (one_launch && m.first_rank != 0) continue;  // the launch's ranks run there; the worker only holds slots
    auto link = nodes_.Link(m.node_id);
    if (!link) {
      // The scheduler only places on UP nodes, which have a stream: this is a bug, not a user error.
      LogError(kLog, "trial " + std::to_string(p.id()) + ": node " + m.node_id + " has no worker stream");
      continue;
    }
    v1::CoordinatorMessage msg;
    auto* st = msg.mutable_start();
    st->set_trial_id(p.id());
    st->set_search_id(p.search_id());
    st->set_assignment_epoch(t.epoch);
    for (const auto& a : argv) st->add_argv(a);
    auto& menv = *st->mutable_env();
    for (const auto& [k, v] : env) menv[k] = v;
    if (!one_launch) {
      menv["RANK"] = std::to_string(m.first_rank);
      menv["LOCAL_RANK"] = "0";
    }
    if (!m.gpus.empty()) menv["CUDA_VISIBLE_DEVICES"] = FormatIdSet(m.gpus);
    st->set_checkpoint_dir(p.checkpoint_dir());
    // The node's worker starts its local ranks (RANK = first_rank + k, LOCAL_RANK = k) and stops them all when
    // one fails.
    st->set_local_ranks(one_launch ? 1 : spec.group.ranks_per_node);
    st->set_first_rank(m.first_rank);
    for (int sl : m.slots) st->add_slots(sl);
    m.live = true;
    nodes_.AddRun(m.node_id, p.id());
    outbox_.SendAfterCommit(link, std::move(msg));
  }
}

}  // namespace ladder::server
