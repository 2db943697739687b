// The communicator factory's decisions that need no second process: where the node layout of the
// hierarchical allreduce comes from (and its errors), and what a build without a backend says.
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>

#include "trainer/comm/communicator.h"
#include "trainer/comm/node_layout.h"
#include "trainer/overlap_rule.h"

namespace ladder::trainer::comm {
namespace {

// A fake environment for ResolveNodeLayout.
struct FakeEnv {
  std::map<std::string, std::string> vars;
  EnvLookup lookup() const {
    return [this](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

CommOptions Hier(int ranks_per_node = 0) {
  CommOptions o;
  o.hierarchical = true;
  o.ranks_per_node = ranks_per_node;
  return o;
}

TEST(NodeLayout, OptionWinsOverEveryLauncherVariable) {
  FakeEnv env{{{"LOCAL_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}, {"SLURM_NTASKS_PER_NODE", "4"},
               {"LOCAL_RANK", "3"}}};
  NodeLayout l;
  std::string err;
  ASSERT_TRUE(ResolveNodeLayout(3, 4, Hier(2), env.lookup(), &l, &err)) << err;
  EXPECT_EQ(l.ranks_per_node, 2);
  EXPECT_EQ(l.source, "--ranks-per-node");
}

TEST(NodeLayout, LauncherVariablesInOrderTorchrunMpirunSlurm) {
  NodeLayout l;
  std::string err;
  FakeEnv all{{{"LOCAL_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}, {"SLURM_NTASKS_PER_NODE", "8"}}};
  ASSERT_TRUE(ResolveNodeLayout(0, 8, Hier(), all.lookup(), &l, &err)) << err;
  EXPECT_EQ(l.ranks_per_node, 2);
  EXPECT_EQ(l.source, "LOCAL_WORLD_SIZE");

  FakeEnv mpi_slurm{{{"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}, {"SLURM_NTASKS_PER_NODE", "8"}}};
  ASSERT_TRUE(ResolveNodeLayout(0, 8, Hier(), mpi_slurm.lookup(), &l, &err)) << err;
  EXPECT_EQ(l.ranks_per_node, 4);
  EXPECT_EQ(l.source, "OMPI_COMM_WORLD_LOCAL_SIZE");

  FakeEnv slurm{{{"SLURM_NTASKS_PER_NODE", "8"}, {"LOCAL_WORLD_SIZE", ""}}};  // empty counts as unset
  ASSERT_TRUE(ResolveNodeLayout(0, 16, Hier(), slurm.lookup(), &l, &err)) << err;
  EXPECT_EQ(l.ranks_per_node, 8);
  EXPECT_EQ(l.source, "SLURM_NTASKS_PER_NODE");
}

TEST(NodeLayout, NothingKnownGroupsByHostName) {
  FakeEnv none;
  NodeLayout l;
  std::string err;
  ASSERT_TRUE(ResolveNodeLayout(1, 3, Hier(), none.lookup(), &l, &err)) << err;
  EXPECT_EQ(l.ranks_per_node, 0);
  EXPECT_EQ(l.source, "host name");
}

TEST(NodeLayout, WorldSizeNotDivisibleNamesBothValuesAndTheSource) {
  FakeEnv none;
  NodeLayout l;
  std::string err;
  EXPECT_FALSE(ResolveNodeLayout(0, 6, Hier(4), none.lookup(), &l, &err));
  EXPECT_NE(err.find("world size 6"), std::string::npos) << err;
  EXPECT_NE(err.find("4 ranks per node"), std::string::npos) << err;
  EXPECT_NE(err.find("--ranks-per-node"), std::string::npos) << err;

  FakeEnv torchrun{{{"LOCAL_WORLD_SIZE", "3"}}};
  err.clear();
  EXPECT_FALSE(ResolveNodeLayout(0, 4, Hier(), torchrun.lookup(), &l, &err));
  EXPECT_NE(err.find("world size 4"), std::string::npos) << err;
  EXPECT_NE(err.find("LOCAL_WORLD_SIZE"), std::string::npos) << err;

  err.clear();  // more ranks per node than ranks
  EXPECT_FALSE(ResolveNodeLayout(0, 2, Hier(4), none.lookup(), &l, &err));
  EXPECT_NE(err.find("world size 2"), std::string::npos) << err;
}

TEST(NodeLayout, MalformedLauncherValueIsNamed) {
  NodeLayout l;
  std::string err;
  for (const char* bad : {"two", "0", "-2", "2x"}) {
    FakeEnv env{{{"OMPI_COMM_WORLD_LOCAL_SIZE", bad}}};
    err.clear();
    EXPECT_FALSE(ResolveNodeLayout(0, 4, Hier(), env.lookup(), &l, &err)) << bad;
    EXPECT_NE(err.find(std::string("OMPI_COMM_WORLD_LOCAL_SIZE='") + bad + "'"), std::string::npos) << err;
  }
}

TEST(NodeLayout, LauncherLocalRankMustMatchTheBlockLayout) {
  NodeLayout l;
  std::string err;
  // Block placement (mpirun --map-by slot): rank 3 of 2-rank nodes is local rank 1.
  FakeEnv block{{{"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}}};
  EXPECT_TRUE(ResolveNodeLayout(3, 4, Hier(), block.lookup(), &l, &err)) << err;
  // Round-robin placement (--map-by node): rank 1 is local rank 0 on the second node.
  FakeEnv rr{{{"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}}};
  EXPECT_FALSE(ResolveNodeLayout(1, 4, Hier(), rr.lookup(), &l, &err));
  EXPECT_NE(err.find("rank 1 has OMPI_COMM_WORLD_LOCAL_RANK='0'"), std::string::npos) << err;
  EXPECT_NE(err.find("local rank 1"), std::string::npos) << err;
  // The local rank of another launcher is not compared, nor any with --ranks-per-node (a simulation).
  FakeEnv other{{{"SLURM_NTASKS_PER_NODE", "2"}, {"LOCAL_RANK", "0"}}};
  EXPECT_TRUE(ResolveNodeLayout(1, 4, Hier(), other.lookup(), &l, &err)) << err;
  EXPECT_TRUE(ResolveNodeLayout(1, 4, Hier(2), rr.lookup(), &l, &err)) << err;
}

TEST(Factory, OneProcessIsTheSameWithOrWithoutHierarchical) {
  std::string err;
  auto c = MakeCommunicator("none", Hier(2), &err);
  ASSERT_TRUE(c) << err;
  EXPECT_EQ(c->size(), 1);
  EXPECT_EQ(c->backend(), "none");
}

TEST(Factory, UnknownBackendIsNamed) {
  std::string err;
  EXPECT_FALSE(MakeCommunicator("infiniband", &err));
  EXPECT_NE(err.find("'infiniband'"), std::string::npos) << err;
}

#ifndef LADDER_HAVE_NCCL
TEST(Factory, CpuBuildSaysNcclIsNotInIt) {
  const auto backends = AvailableBackends();
  EXPECT_EQ(std::count(backends.begin(), backends.end(), "nccl"), 0);
  std::string err;
  EXPECT_FALSE(MakeCommunicator("nccl", &err));
  EXPECT_NE(err.find("built without NCCL"), std::string::npos) << err;
  EXPECT_NE(err.find("gloo"), std::string::npos) << err;  // and lists what the build has
}
#else
TEST(Factory, NcclBuildListsNccl) {
  const auto backends = AvailableBackends();
  EXPECT_EQ(std::count(backends.begin(), backends.end(), "nccl"), 1);
}
#endif

// --overlap auto: the allreduce overlaps the backward pass only where it has something of its own to run on.
TEST(OverlapRule, OverlapsOnGpusAndOnCpuRanksWithACoreToSpare) {
  // A launcher that bound the rank (mpirun --bind-to core): its affinity; else the online CPUs shared by the
  // node's ranks.
  EXPECT_EQ(CoresForRank(1, 2, 2), 1);
  EXPECT_EQ(CoresForRank(4, 16, 4), 4);
  EXPECT_EQ(CoresForRank(2, 2, 2), 1);
  EXPECT_EQ(CoresForRank(16, 16, 4), 4);
  EXPECT_EQ(CoresForRank(2, 2, 8), 1);  // oversubscribed: still one
  EXPECT_FALSE(OverlapAllreduce("auto", false, 1, 1));  // 2 ranks on 2 cores, 1 thread each
  EXPECT_TRUE(OverlapAllreduce("auto", false, 1, 4));
  EXPECT_FALSE(OverlapAllreduce("auto", false, 4, 4));  // the intra-op threads use every core
  EXPECT_TRUE(OverlapAllreduce("auto", true, 4, 1));    // NCCL runs on the GPU
  EXPECT_TRUE(OverlapAllreduce("on", false, 1, 1));
  EXPECT_FALSE(OverlapAllreduce("off", true, 1, 8));
}

// A worker's other trials share the node: LADDER_WORKER_SLOTS (its slot count) counts them among the node's ranks.
TEST(OverlapRule, AWorkersSlotsShareTheCores) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  const int cpus = CPU_COUNT(&set);
  if (cpus < 2 || cpus != sysconf(_SC_NPROCESSORS_ONLN)) GTEST_SKIP() << "needs 2+ CPUs and no affinity mask";
  for (const char* name : {"LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE"}) unsetenv(name);
  unsetenv("LADDER_WORKER_SLOTS");
  EXPECT_EQ(CoresForThisRank(), cpus) << "one rank alone on the node";
  setenv("LADDER_WORKER_SLOTS", std::to_string(cpus).c_str(), 1);
  EXPECT_EQ(CoresForThisRank(), 1) << "as many slots as cores: one core each";
  TrainArgs a;
  a.threads = 1;
  a.prefetch = -1;
  EXPECT_EQ(PrefetchDepth(a, torch::kCPU), 0) << "no spare core for a prefetch thread";
  setenv("LOCAL_WORLD_SIZE", "1", 1);
  EXPECT_EQ(CoresForThisRank(), 1) << "the larger count wins";
  unsetenv("LOCAL_WORLD_SIZE");
  unsetenv("LADDER_WORKER_SLOTS");
  EXPECT_EQ(PrefetchDepth(a, torch::kCPU), 2) << "alone with a core to spare";
}

}  // namespace
}  // namespace ladder::trainer::comm
