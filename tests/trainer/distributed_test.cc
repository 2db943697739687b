// Synchronous data parallelism is exact: N ranks × local batch b end with the same parameters as 1 rank × batch
// N·b after K steps (relative 1e-5), over MPI (mpirun) and Gloo (ranks started one by one, torchrun style).
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

std::vector<std::string> TrainArgs(int batch, const std::string& out, const std::string& comm) {
  return {"--comm", comm, "--optimizer", "sgd", "--lr", "0.1", "--momentum", "0.9", "--batch-size",
          std::to_string(batch), "--epochs", "1", "--max-steps", "15", "--width", "64", "--seed", "3",
          "--save-params", out};
}

class Distributed : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(Distributed, NRanksTimesBatchEqualsOneRankTimesNBatch) {
  const auto [backend, ranks] = GetParam();
  testing::TempDir dir("dist");
  const int b = 16;
  // Reference: one rank, batch ranks·b.
  auto ref_args = TrainArgs(ranks * b, (dir / "ref.bin").string(), "none");
  ref_args.insert(ref_args.begin(), Train());
  auto ref = testing::RunCommand(ref_args, dir);
  ASSERT_EQ(ref.exit_code, 0) << ref.err;

  const std::string out = (dir / (backend + ".bin")).string();
  if (backend == "mpi") {
    if (std::system("command -v mpirun > /dev/null 2>&1") != 0) GTEST_SKIP() << "mpirun is not installed";
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 1);
    std::vector<std::string> args = {"/usr/bin/env", "mpirun", "-n", std::to_string(ranks), "--oversubscribe",
                                     Train()};
    for (auto& a : TrainArgs(b, out, "mpi")) args.push_back(a);
    auto r = testing::RunCommand(args, dir);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.err.find(std::to_string(ranks) + " rank(s) over mpi"), std::string::npos) << r.err;
  } else {
    // torchrun style: one process per rank with RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT.
    const std::string port = std::to_string(FreePort());
    std::string script;
    for (int r = 0; r < ranks; ++r) {
      script += "RANK=" + std::to_string(r) + " LOCAL_RANK=" + std::to_string(r) + " WORLD_SIZE=" +
                std::to_string(ranks) + " MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port + " '" + Train() + "'";
      for (auto& a : TrainArgs(b, out, "gloo")) script += " '" + a + "'";
      script += " > rank" + std::to_string(r) + ".log 2>&1 & ";
    }
    script += "fail=0; for p in $(jobs -p); do wait $p || fail=1; done; exit $fail";
    auto r = testing::RunCommand({"/bin/bash", "-c", script}, dir);
    std::ifstream log(dir / "rank0.log");
    std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    ASSERT_EQ(r.exit_code, 0) << text << r.err;
    EXPECT_NE(text.find(std::to_string(ranks) + " rank(s) over gloo"), std::string::npos) << text;
  }
  auto want = ReadParams(dir / "ref.bin");
  auto got = ReadParams(out);
  ASSERT_EQ(got.size(), want.size());
  ASSERT_GT(want.size(), 1000u);
  EXPECT_LE(RelativeError(got, want), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Backends, Distributed,
                         ::testing::Combine(::testing::Values("mpi", "gloo"), ::testing::Values(2, 4)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + std::to_string(std::get<1>(info.param));
                         });

// Every workload is exactly data-parallel: its own data and model on 2 Gloo ranks × batch b (with gradient
// accumulation on one of them) against 1 rank × batch 2b.
struct WorkloadCase {
  std::string name;
  std::vector<std::string> args;
};

class Workload : public ::testing::TestWithParam<WorkloadCase> {};

TEST_P(Workload, TwoRanksEqualOneRankWithTwiceTheBatch) {
  const auto& wc = GetParam();
  testing::TempDir dir("dist-" + wc.name);
  auto args_for = [&](int batch, const std::string& out, const std::string& comm) {
    std::vector<std::string> a = {"--comm", comm, "--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.9",
                                  "--batch-size", std::to_string(batch), "--epochs", "2", "--max-steps", "6",
                                  "--seed", "5", "--save-params", out, "--eval-train-rows", "0"};
    a.insert(a.end(), wc.args.begin(), wc.args.end());
    return a;
  };
  auto ref_args = args_for(16, (dir / "ref.bin").string(), "none");
  ref_args.insert(ref_args.begin(), Train());
  auto ref = testing::RunCommand(ref_args, dir);
  ASSERT_EQ(ref.exit_code, 0) << ref.err;
  const std::string out = (dir / "gloo.bin").string(), port = std::to_string(FreePort());
  std::string script;
  for (int r = 0; r < 2; ++r) {
    script += "RANK=" + std::to_string(r) + " LOCAL_RANK=" + std::to_string(r) +
              " WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port + " '" + Train() + "'";
    for (auto& a : args_for(8, out, "gloo")) script += " '" + a + "'";
    script += " > rank" + std::to_string(r) + ".log 2>&1 & ";
  }
  script += "fail=0; for p in $(jobs -p); do wait $p || fail=1; done; exit $fail";
  auto r = testing::RunCommand({"/bin/bash", "-c", script}, dir);
  std::ifstream log(dir / "rank0.log");
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  ASSERT_EQ(r.exit_code, 0) << text << r.err;
  EXPECT_NE(text.find("2 rank(s) over gloo"), std::string::npos) << text;
  auto want = ReadParams(dir / "ref.bin");
  auto got = ReadParams(out);
  ASSERT_EQ(got.size(), want.size());
  ASSERT_GT(want.size(), 1000u);
  EXPECT_LE(RelativeError(got, want), 1e-5);
}

std::string DigitsPath() {
  const char* d = std::getenv("LADDER_SOURCE_DIR");
  return std::string(d ? d : LADDER_TEST_SOURCE_DIR) + "/data/digits.csv.gz";
}

INSTANTIATE_TEST_SUITE_P(
    Models, Workload,
    ::testing::Values(
        WorkloadCase{"cnn", {"--model", "cnn", "--data", DigitsPath(), "--input-shape", "1,8,8", "--width", "8"}},
        WorkloadCase{"unet", {"--model", "unet", "--data", "climate:96:16", "--width", "8", "--depth", "1"}},
        WorkloadCase{"transformer",
                     {"--model", "transformer", "--data", "markov:200:16:16", "--width", "32", "--heads", "2"}},
        WorkloadCase{"mlp_microbatches", {"--micro-batches", "2", "--width", "32"}}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace ladder
