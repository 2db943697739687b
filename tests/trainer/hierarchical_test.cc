// The hierarchical allreduce is exact: 4 ranks simulated as 2 nodes x 2 ranks (--hierarchical
// --ranks-per-node 2), each with local batch b, end with the same parameters as 1 rank with batch 4b after K
// steps (relative 1e-5), over MPI (mpirun) and Gloo (ranks started one by one, torchrun style). Also: the node
// layout taken from torchrun's LOCAL_WORLD_SIZE, and an invalid layout failing on every rank with a message.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "tests/support/process.h"
#include "tests/support/trainer_runs.h"

namespace ladder {
namespace {

using testing::FreePort;
using testing::ReadParams;
using testing::RelativeError;
std::string Train() { return testing::TrainerBinary(); }

constexpr int kRanks = 4;
constexpr int kBatch = 16;

std::string ReadText(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::vector<std::string> TrainArgs(int batch, const std::string& out, const std::string& comm) {
  return {"--comm", comm, "--optimizer", "sgd", "--lr", "0.1", "--momentum", "0.9", "--batch-size",
          std::to_string(batch), "--epochs", "1", "--max-steps", "15", "--width", "64", "--seed", "3",
          "--save-params", out};
}

// The parameters of 1 rank with batch kRanks * kBatch.
std::vector<float> Reference(const std::filesystem::path& dir) {
  auto args = TrainArgs(kRanks * kBatch, (dir / "ref.bin").string(), "none");
  args.insert(args.begin(), Train());
  auto r = testing::RunCommand(args, dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return ReadParams(dir / "ref.bin");
}

bool HaveMpirun() { return std::system("command -v mpirun > /dev/null 2>&1") == 0; }

testing::CommandResult RunMpi(const std::filesystem::path& dir, const std::vector<std::string>& train_args) {
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 1);
  std::vector<std::string> args = {"/usr/bin/env", "mpirun", "-n", std::to_string(kRanks), "--oversubscribe",
                                   Train()};
  args.insert(args.end(), train_args.begin(), train_args.end());
  return testing::RunCommand(args, dir);
}

// torchrun style: one process per rank with RANK/LOCAL_RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT, plus
// LOCAL_WORLD_SIZE when `local_world_size` > 0 (then LOCAL_RANK = RANK % local_world_size, as torchrun sets
// it). Rank r's output goes to rank<r>.log; returns the exit code of the whole group (0 if all succeeded).
int RunTorchrunStyle(const std::filesystem::path& dir, const std::vector<std::string>& train_args,
                     int local_world_size) {
  const std::string port = std::to_string(FreePort());
  std::string script;
  for (int r = 0; r < kRanks; ++r) {
    const int local = local_world_size > 0 ? r % local_world_size : r;
    script += "RANK=" + std::to_string(r) + " LOCAL_RANK=" + std::to_string(local) + " WORLD_SIZE=" +
              std::to_string(kRanks) + " MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port;
    if (local_world_size > 0) script += " LOCAL_WORLD_SIZE=" + std::to_string(local_world_size);
    script += " '" + Train() + "'";
    for (auto& a : train_args) script += " '" + a + "'";
    script += " > rank" + std::to_string(r) + ".log 2>&1 & ";
  }
  script += "fail=0; for p in $(jobs -p); do wait $p || fail=1; done; exit $fail";
  return testing::RunCommand({"/bin/bash", "-c", script}, dir).exit_code;
}

void ExpectEqualToReference(const std::filesystem::path& dir, const std::string& out) {
  auto want = Reference(dir);
  auto got = ReadParams(out);
  ASSERT_EQ(got.size(), want.size());
  ASSERT_GT(want.size(), 1000u);
  EXPECT_LE(RelativeError(got, want), 1e-5);
}

// Small buckets (5 KB), so that several hierarchical allreduces are in flight during each backward pass.
std::vector<std::string> Hierarchical(std::vector<std::string> args, int ranks_per_node) {
  args.insert(args.end(), {"--hierarchical", "--bucket-cap-mb", "0.005"});
  if (ranks_per_node > 0) {
    args.push_back("--ranks-per-node");
    args.push_back(std::to_string(ranks_per_node));
  }
  return args;
}

TEST(Hierarchical, MpiTwoNodesOfTwoEqualsOneRankWithFourTimesTheBatch) {
  if (!HaveMpirun()) GTEST_SKIP() << "mpirun is not installed";
  testing::TempDir dir("hier");
  const std::string out = (dir / "mpi.bin").string();
  auto r = RunMpi(dir, Hierarchical(TrainArgs(kBatch, out, "mpi"), 2));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("hierarchical: 2 nodes x 2 ranks (ranks per node from --ranks-per-node), over mpi"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("4 rank(s) over mpi/hierarchical"), std::string::npos) << r.err;
  ExpectEqualToReference(dir, out);
}

TEST(Hierarchical, GlooTwoNodesOfTwoEqualsOneRankWithFourTimesTheBatch) {
  testing::TempDir dir("hier");
  const std::string out = (dir / "gloo.bin").string();
  const int rc = RunTorchrunStyle(dir, Hierarchical(TrainArgs(kBatch, out, "gloo"), 2), 0);
  const std::string log = ReadText(dir / "rank0.log");
  ASSERT_EQ(rc, 0) << log << ReadText(dir / "rank1.log");
  EXPECT_NE(log.find("hierarchical: 2 nodes x 2 ranks (ranks per node from --ranks-per-node), over gloo"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("4 rank(s) over gloo/hierarchical"), std::string::npos) << log;
  ExpectEqualToReference(dir, out);
}

TEST(Hierarchical, GlooNodesFromTorchrunLocalWorldSize) {
  testing::TempDir dir("hier");
  const std::string out = (dir / "gloo.bin").string();
  const int rc = RunTorchrunStyle(dir, Hierarchical(TrainArgs(kBatch, out, "gloo"), 0), 2);
  const std::string log = ReadText(dir / "rank0.log");
  ASSERT_EQ(rc, 0) << log;
  EXPECT_NE(log.find("hierarchical: 2 nodes x 2 ranks (ranks per node from LOCAL_WORLD_SIZE)"), std::string::npos)
      << log;
  ExpectEqualToReference(dir, out);
}

TEST(Hierarchical, IndivisibleLayoutFailsOnEveryRankWithTheValues) {
  testing::TempDir dir("hier");
  const int rc = RunTorchrunStyle(dir, Hierarchical(TrainArgs(kBatch, (dir / "x.bin").string(), "gloo"), 3), 0);
  EXPECT_NE(rc, 0);
  for (int r = 0; r < kRanks; ++r) {
    const std::string log = ReadText(dir / ("rank" + std::to_string(r) + ".log"));
    EXPECT_NE(log.find("world size 4 is not divisible by 3 ranks per node (from --ranks-per-node)"),
              std::string::npos)
        << "rank " << r << ": " << log;
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "x.bin"));
}

}  // namespace
}  // namespace ladder
