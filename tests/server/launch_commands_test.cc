// The starts of a run per launcher (server/launch_commands.h), without a coordinator: per node, mpirun, srun, and
// what every process gets.
#include "server/launch_commands.h"

#include <gtest/gtest.h>

#include "server/params_codec.h"

namespace ladder::server {
namespace {

using Words = std::vector<std::string>;

search::SearchSpec SpecWith(search::Launcher launcher, int nodes, int ranks_per_node) {
  search::SearchSpec spec;
  spec.group.launcher = launcher;
  spec.group.nodes = nodes;
  spec.group.ranks_per_node = ranks_per_node;
  return spec;
}

// Two nodes of two ranks each: a (rank 0, GPUs 0-1) and b (rank 2, no GPUs).
std::vector<LaunchMember> TwoMembers() {
  return {{"a", std::string("10.0.0.1"), {0, 1}, {0, 1}, 0}, {"b", std::string("10.0.0.2"), {2, 3}, {}, 2}};
}

LaunchRun RunOf(int nodes) {
  LaunchRun run;
  run.trial_id = 7;
  run.search_id = 3;
  run.epoch = 42;
  run.checkpoint_dir = "/ckpt/search-3/trial-7";
  run.nodes = nodes;
  run.command = {"train", "--lr", "0.1"};
  run.env = {{"LADDER_TRIAL_ID", "7"}, {"MY_VAR", "x"}};
  return run;
}

LaunchSettings Settings() {
  LaunchSettings s;
  s.mpirun = {"mpirun", "--oversubscribe"};
  s.srun = {"srun", "--quiet"};
  s.master_addr = "127.0.0.1";
  s.master_port = 29555;
  s.rendezvous_secret = "s3cret";
  return s;
}

Words ArgvOf(const v1::StartTrial& st) { return Words(st.argv().begin(), st.argv().end()); }

std::string EnvOf(const v1::StartTrial& st, const std::string& key) {
  auto it = st.env().find(key);
  return it == st.env().end() ? "<unset>" : it->second;
}

TEST(LaunchCommands, PerNodeEveryMemberStartsItsLocalRanksWithTorchrunsVariables) {
  auto starts = StartMessages(SpecWith(search::Launcher::kPerNode, 2, 2), RunOf(2), TwoMembers(), Settings());
  ASSERT_EQ(starts.size(), 2u);
  for (size_t i = 0; i < starts.size(); ++i) {
    const auto& st = starts[i].start;
    EXPECT_EQ(starts[i].member, i);
    EXPECT_EQ(st.trial_id(), 7);
    EXPECT_EQ(st.search_id(), 3);
    EXPECT_EQ(st.assignment_epoch(), 42);
    EXPECT_EQ(st.checkpoint_dir(), "/ckpt/search-3/trial-7");
    EXPECT_EQ(ArgvOf(st), (Words{"train", "--lr", "0.1"}));
    EXPECT_EQ(st.local_ranks(), 2);
    EXPECT_EQ(EnvOf(st, "WORLD_SIZE"), "4");
    EXPECT_EQ(EnvOf(st, "LOCAL_WORLD_SIZE"), "2");
    EXPECT_EQ(EnvOf(st, "MASTER_ADDR"), "10.0.0.1");  // rank 0's node
    EXPECT_EQ(EnvOf(st, "MASTER_PORT"), "29555");
    EXPECT_EQ(EnvOf(st, "LADDER_RENDEZVOUS_SECRET"), "s3cret");
    EXPECT_EQ(EnvOf(st, "LOCAL_RANK"), "0");
    EXPECT_EQ(EnvOf(st, "MY_VAR"), "x");
    EXPECT_EQ(EnvOf(st, "LADDER_TRIAL_ID"), "7");
  }
  EXPECT_EQ(starts[0].start.first_rank(), 0);
  EXPECT_EQ(EnvOf(starts[0].start, "RANK"), "0");
  EXPECT_EQ(EnvOf(starts[0].start, "CUDA_VISIBLE_DEVICES"), "0-1");
  EXPECT_EQ(std::vector<int>(starts[0].start.slots().begin(), starts[0].start.slots().end()), (std::vector<int>{0, 1}));
  EXPECT_EQ(starts[1].start.first_rank(), 2);
  EXPECT_EQ(EnvOf(starts[1].start, "RANK"), "2");
  EXPECT_EQ(EnvOf(starts[1].start, "CUDA_VISIBLE_DEVICES"), "<unset>");
  EXPECT_EQ(std::vector<int>(starts[1].start.slots().begin(), starts[1].start.slots().end()), (std::vector<int>{2, 3}));
}

TEST(LaunchCommands, OneNodeUsesTheCoordinatorsMasterAddressAndAnUnknownAddressFallsBackToIt) {
  auto one = TwoMembers();
  one.resize(1);
  auto starts = StartMessages(SpecWith(search::Launcher::kPerNode, 1, 2), RunOf(1), one, Settings());
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(EnvOf(starts[0].start, "MASTER_ADDR"), "127.0.0.1");
  EXPECT_EQ(EnvOf(starts[0].start, "WORLD_SIZE"), "2");

  auto unknown = TwoMembers();
  unknown[0].address.reset();
  starts = StartMessages(SpecWith(search::Launcher::kPerNode, 2, 2), RunOf(2), unknown, Settings());
  ASSERT_EQ(starts.size(), 2u);
  EXPECT_EQ(EnvOf(starts[1].start, "MASTER_ADDR"), "127.0.0.1");
}

TEST(LaunchCommands, MpirunRunsOnTheFirstMemberOverEveryHostAndExportsTheEnvironment) {
  auto members = TwoMembers();
  members[1].address.reset();  // not known: its node id stands for it
  auto starts = StartMessages(SpecWith(search::Launcher::kMpirun, 2, 2), RunOf(2), members, Settings());
  ASSERT_EQ(starts.size(), 1u);
  const auto& st = starts[0].start;
  EXPECT_EQ(starts[0].member, 0u);
  EXPECT_EQ(ArgvOf(st), (Words{"mpirun", "--oversubscribe", "-np", "4", "--host", "10.0.0.1:2,b:2", "-x",
                               "LADDER_TRIAL_ID", "-x", "MY_VAR", "train", "--lr", "0.1"}));
  EXPECT_EQ(st.local_ranks(), 1);
  EXPECT_EQ(st.first_rank(), 0);
  // mpirun numbers the ranks: no torchrun variables, no RANK.
  EXPECT_EQ(EnvOf(st, "WORLD_SIZE"), "<unset>");
  EXPECT_EQ(EnvOf(st, "MASTER_ADDR"), "<unset>");
  EXPECT_EQ(EnvOf(st, "LADDER_RENDEZVOUS_SECRET"), "<unset>");
  EXPECT_EQ(EnvOf(st, "RANK"), "<unset>");
  EXPECT_EQ(EnvOf(st, "CUDA_VISIBLE_DEVICES"), "0-1");
}

TEST(LaunchCommands, SrunIsOneNamedStepOnExactlyTheGroupsNodesInRankOrder) {
  auto starts = StartMessages(SpecWith(search::Launcher::kSrun, 2, 2), RunOf(2), TwoMembers(), Settings());
  ASSERT_EQ(starts.size(), 1u);
  const auto& st = starts[0].start;
  EXPECT_EQ(ArgvOf(st),
            (Words{"srun", "--quiet", "--nodes=2", "--ntasks=4", "--ntasks-per-node=2", "--distribution=arbitrary",
                   "--nodelist=a,a,b,b", "--overlap", "--kill-on-bad-exit=1", "--mpi=pmix", "--export=ALL",
                   "--job-name=ladder-trial-7", "train", "--lr", "0.1"}));
  EXPECT_EQ(st.local_ranks(), 1);
  EXPECT_EQ(EnvOf(st, "WORLD_SIZE"), "4");
  EXPECT_EQ(EnvOf(st, "MASTER_ADDR"), "10.0.0.1");
  EXPECT_EQ(EnvOf(st, "RANK"), "<unset>");
}

TEST(LaunchCommands, AStagedSpecRunsEveryRankThroughLadderStageInsideTheLauncher) {
  auto spec = SpecWith(search::Launcher::kSrun, 1, 1);
  spec.stage = {{"/shared/data.bin", "/local/data", {}, false, false},
                {"/shared/vocab", "/local/v", {}, false, false}};
  const Words staged = {"ladder-stage", "--from", "/shared/data.bin", "--to", "/local/data", "--from",
                        "/shared/vocab", "--to", "/local/v", "--", "train", "--lr", "0.1"};
  EXPECT_EQ(WithStaging(spec, {"train", "--lr", "0.1"}), staged);
  auto one = TwoMembers();
  one.resize(1);
  auto starts = StartMessages(spec, RunOf(1), one, Settings());
  ASSERT_EQ(starts.size(), 1u);
  Words argv = ArgvOf(starts[0].start);
  ASSERT_GE(argv.size(), staged.size());
  EXPECT_EQ(argv.front(), "srun");
  EXPECT_EQ(Words(argv.end() - static_cast<long>(staged.size()), argv.end()), staged);
  EXPECT_EQ(WithStaging(SpecWith(search::Launcher::kPerNode, 1, 1), {"x"}), Words{"x"});
}

// extract: true and shard: node become ladder-stage's flags; a directory of shards is passed as DIR/ (what tells
// it from a list of one file).
TEST(LaunchCommands, AnArchiveAndShardsAreStagedWithTheirFlags) {
  auto spec = SpecWith(search::Launcher::kPerNode, 2, 1);
  spec.stage.resize(3);
  spec.stage[0] = {"/shared/data.tar", "/local", {}, true, false};
  spec.stage[1] = {"/shared/shards", "/local", {}, false, true};
  spec.stage[2] = {"", "/local/l", {"/shared/a.h5", "/shared/b.h5"}, false, true};
  EXPECT_EQ(WithStaging(spec, {"train"}),
            (Words{"ladder-stage", "--extract", "--from", "/shared/data.tar", "--to", "/local", "--shard", "node",
                   "--from", "/shared/shards/", "--to", "/local", "--shard", "node", "--from", "/shared/a.h5",
                   "--from", "/shared/b.h5", "--to", "/local/l", "--", "train"}));
}

TEST(LaunchCommands, RunEnvSaysTheTrialItsRunAndItsLauncher) {
  v1::Trial trial;
  trial.set_id(7);
  trial.set_number(2);
  trial.set_search_id(3);
  trial.set_attempt(1);
  trial.set_checkpoint_dir("/ckpt/search-3/trial-7");
  search::Params params = {{"lr", 0.1}, {"layers", int64_t{4}}};
  auto env = RunEnv(SpecWith(search::Launcher::kSrun, 2, 1), trial, 42, params, 2, {{"MY_VAR", "x"}});
  EXPECT_EQ(env["MY_VAR"], "x");
  EXPECT_EQ(env["LADDER_TRIAL_ID"], "7");
  EXPECT_EQ(env["LADDER_TRIAL_NUMBER"], "2");
  EXPECT_EQ(env["LADDER_SEARCH_ID"], "3");
  EXPECT_EQ(env["LADDER_ATTEMPT"], "1");
  EXPECT_EQ(env["LADDER_ASSIGNMENT_EPOCH"], "42");
  EXPECT_EQ(env["LADDER_PARAMS"], ParamsJson(params));
  EXPECT_EQ(env["LADDER_CHECKPOINT_DIR"], "/ckpt/search-3/trial-7");
  EXPECT_EQ(env["LADDER_NODES"], "2");
  EXPECT_EQ(env["LADDER_LAUNCHER"], "srun");
  EXPECT_EQ(env["LADDER_STEP_NAME"], "ladder-trial-7");

  env = RunEnv(SpecWith(search::Launcher::kPerNode, 1, 1), trial, 42, params, 1, {});
  EXPECT_EQ(env["LADDER_LAUNCHER"], "per_node");
  EXPECT_EQ(env.count("LADDER_STEP_NAME"), 0u);
  EXPECT_STREQ(LauncherName(search::Launcher::kMpirun), "mpirun");
}

}  // namespace
}  // namespace ladder::server
