// Synchronous data parallelism is exact: N ranks × local batch b end with the same parameters as 1 rank × batch
// N·b after K steps (relative 1e-5), over MPI (mpirun) and Gloo (ranks started one by one, torchrun style).
// Every rank's step time reaches rank 0's epoch-end metrics line (step_time_s/rankR).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "common/metrics_line.h"
#include "common/trial_exit_codes.h"
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
    // shm: 4 KB chunks, so that every collective takes several rounds through the segment.
    const std::string chunk = backend == "shm" ? " LADDER_SHM_CHUNK_BYTES=4096" : "";
    for (int r = 0; r < ranks; ++r) {
      script += "RANK=" + std::to_string(r) + " LOCAL_RANK=" + std::to_string(r) + " WORLD_SIZE=" +
                std::to_string(ranks) + " MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port + chunk + " '" + Train() + "'";
      for (auto& a : TrainArgs(b, out, backend)) script += " '" + a + "'";
      script += " > rank" + std::to_string(r) + ".log 2>&1 & ";
    }
    script += "fail=0; for p in $(jobs -p); do wait $p || fail=1; done; exit $fail";
    auto r = testing::RunCommand({"/bin/bash", "-c", script}, dir);
    std::ifstream log(dir / "rank0.log");
    std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    ASSERT_EQ(r.exit_code, 0) << text << r.err;
    EXPECT_NE(text.find(std::to_string(ranks) + " rank(s) over " + backend), std::string::npos) << text;
  }
  auto want = ReadParams(dir / "ref.bin");
  auto got = ReadParams(out);
  ASSERT_EQ(got.size(), want.size());
  ASSERT_GT(want.size(), 1000u);
  EXPECT_LE(RelativeError(got, want), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Backends, Distributed,
                         ::testing::Combine(::testing::Values("mpi", "gloo", "shm"), ::testing::Values(2, 4)),
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
        WorkloadCase{"mlp_microbatches", {"--micro-batches", "2", "--width", "32"}},
        // The 3D cnn regressing cosmo:'s volumes (its default model there).
        WorkloadCase{"cnn3d_regression", {"--data", "cosmo:64:8", "--width", "4", "--depth", "2"}}),
    [](const auto& info) { return info.param.name; });

// Per-rank step times (train_loop.cc). Runs ladder-train as `ranks` processes over `backend` ("none": one process;
// "mpi": mpirun; "gloo": torchrun style) in `dir`; out is rank 0's stdout (the only one with metrics), err the
// ranks' stderr.
testing::CommandResult RunRanks(const std::string& backend, int ranks, const std::vector<std::string>& args,
                                const std::filesystem::path& dir) {
  std::vector<std::string> cmd = {Train(), "--comm", backend};
  if (backend == "mpi") {
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 1);
    cmd.insert(cmd.begin(), {"/usr/bin/env", "mpirun", "-n", std::to_string(ranks), "--oversubscribe"});
  }
  cmd.insert(cmd.end(), args.begin(), args.end());
  if (backend != "gloo" && backend != "shm") return testing::RunCommand(cmd, dir);
  const std::string port = std::to_string(FreePort());
  std::string script;
  for (int r = 0; r < ranks; ++r) {
    script += "RANK=" + std::to_string(r) + " LOCAL_RANK=" + std::to_string(r) + " WORLD_SIZE=" +
              std::to_string(ranks) + " MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port +
              " LADDER_RENDEZVOUS_SECRET=group-secret";  // as the coordinator gives each run one
    for (auto& a : cmd) script += " '" + a + "'";
    script += " > rank" + std::to_string(r) + ".out 2> rank" + std::to_string(r) + ".err & ";
  }
  script += "fail=0; for p in $(jobs -p); do wait $p || fail=1; done; exit $fail";
  auto r = testing::RunCommand({"/bin/bash", "-c", script}, dir);
  auto slurp = [&](const std::string& name) {
    std::ifstream in(dir / name);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  r.out = slurp("rank0.out");
  for (int rank = 0; rank < ranks; ++rank) r.err += slurp("rank" + std::to_string(rank) + ".err");
  return r;
}

// The epoch-end lines (those with val_loss) of rank 0's stdout, read by the worker's own parser (which drops
// null, i.e. non-finite, values: a field that is there is finite).
std::vector<std::map<std::string, double>> EpochLines(const std::string& out) {
  std::vector<std::map<std::string, double>> lines;
  std::istringstream in(out);
  for (std::string l; std::getline(in, l);) {
    auto parsed = ParseMetricsLine(l);
    if (parsed.metrics && parsed.metrics->values.count("val_loss")) lines.push_back(parsed.metrics->values);
  }
  return lines;
}

std::vector<std::string> RankTimeArgs() {
  return {"--optimizer", "sgd", "--lr", "0.1", "--batch-size", "16", "--epochs", "2", "--width", "64",
          "--seed", "3", "--eval-train-rows", "0"};
}

class RankStepTimes : public ::testing::TestWithParam<std::string> {};

// Each rank's seconds per step outside the allreduce waits: positive, and at most the epoch's step_time_s (rank
// 0's wall time per step, the waits included; every rank's epoch starts at the same sync point).
TEST_P(RankStepTimes, TwoRanksEachReportTheirOwn) {
  const std::string backend = GetParam();
  if (backend == "mpi" && std::system("command -v mpirun > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "mpirun is not installed";
  }
  testing::TempDir dir("rank-times");
  auto r = RunRanks(backend, 2, RankTimeArgs(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto lines = EpochLines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  for (const auto& m : lines) {
    ASSERT_TRUE(m.count("step_time_s")) << r.out;
    for (const std::string key : {"step_time_s/rank0", "step_time_s/rank1"}) {
      ASSERT_TRUE(m.count(key)) << key << " missing (or not finite) in\n" << r.out;
      EXPECT_GT(m.at(key), 0.0) << key << "\n" << r.out;
      // At most the epoch's whole time per step, as rank 0 measured it: each rank's own clock starts at the same
      // sync point but stops at its own moment, so a loaded machine shifts it a little (13% was seen under ctest -j2).
      EXPECT_LE(m.at(key), 1.5 * m.at("step_time_s")) << key << "\n" << r.out;
    }
    EXPECT_FALSE(m.count("step_time_s/rank2")) << r.out;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, RankStepTimes, ::testing::Values("mpi", "gloo", "shm"),
                         [](const auto& info) { return info.param; });

TEST(RankStepTimesOneProcess, HasNoPerRankFields) {
  testing::TempDir dir("rank-times");
  auto r = RunRanks("none", 1, RankTimeArgs(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = EpochLines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  for (const auto& m : lines) {
    EXPECT_TRUE(m.count("step_time_s")) << r.out;
    for (const auto& [key, value] : m) EXPECT_EQ(key.rfind("step_time_s/", 0), std::string::npos) << r.out;
  }
}

// --curvature-every makes rank 0 alone measure the loss curvature (10 Hessian-vector products) on every step:
// rank 0 is the straggler, and rank 1 waits for it in the allreduce.
TEST(RankStepTimesStraggler, TheSlowRankHasTheLargest) {
  testing::TempDir dir("rank-times");
  auto args = RankTimeArgs();
  args.insert(args.end(), {"--curvature-every", "1", "--curvature-rows", "256"});
  auto r = RunRanks("gloo", 2, args, dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto lines = EpochLines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  for (const auto& m : lines) {
    ASSERT_TRUE(m.count("step_time_s/rank0") && m.count("step_time_s/rank1")) << r.out;
    EXPECT_GT(m.at("step_time_s/rank0"), m.at("step_time_s/rank1")) << r.out;
  }
}

// Ranks that their worker gave a rendezvous file (all of a trial's ranks on its node) meet through it, a c10d
// FileStore: no port is opened. MASTER_PORT is a port this test holds on every interface, where rank 0's store could
// not listen.
TEST(GlooRendezvous, RanksGivenAFileMeetThroughItAndOpenNoPort) {
  testing::TempDir dir("rendezvous-file");
  const int held = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof a;
  ASSERT_EQ(bind(held, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(held, 1), 0);
  ASSERT_EQ(getsockname(held, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const std::string port = std::to_string(ntohs(a.sin_port));
  std::string script;
  for (int r = 0; r < 2; ++r) {
    script += "LADDER_RENDEZVOUS_FILE='" + (dir / "rendezvous-1").string() + "' RANK=" + std::to_string(r) +
              " LOCAL_RANK=" + std::to_string(r) + " WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port + " '" +
              Train() + "'";
    for (auto& arg : TrainArgs(16, (dir / "gloo.bin").string(), "gloo")) script += " '" + arg + "'";
    script += " > rank" + std::to_string(r) + ".out 2> rank" + std::to_string(r) + ".err & ";
  }
  script += "fail=0; for p in $(jobs -p); do wait $p || fail=1; done; exit $fail";
  auto r = testing::RunCommand({"/bin/bash", "-c", script}, dir);
  close(held);
  std::ifstream log(dir / "rank0.err");
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  ASSERT_EQ(r.exit_code, 0) << text << r.err;
  EXPECT_NE(text.find("2 rank(s) over gloo"), std::string::npos) << text;
}

// Rank 0 of a multi-node group whose MASTER_PORT another process holds exits kExitRendezvousPortInUse (75),
// naming the port: the coordinator then runs the trial again on another port; any other failure to rendezvous
// stays exit 2.
TEST(GlooRendezvous, RankZeroWhosePortIsTakenExitsWithThePortInUseCode) {
  testing::TempDir dir("rendezvous-taken");
  const int held = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(bind(held, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(held, 1), 0);
  ASSERT_EQ(getsockname(held, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const std::string port = std::to_string(ntohs(a.sin_port));
  std::string line = "RANK=0 LOCAL_RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port + " '" + Train() + "'";
  for (auto& arg : TrainArgs(16, (dir / "gloo.bin").string(), "gloo")) line += " '" + arg + "'";
  auto r = testing::RunCommand({"/bin/bash", "-c", line}, dir);
  close(held);
  EXPECT_EQ(r.exit_code, kExitRendezvousPortInUse) << r.err;
  EXPECT_NE(r.err.find("cannot listen on 127.0.0.1:" + port), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("in use"), std::string::npos) << r.err;
}

// A rank that cannot see its rendezvous file's directory (the worker's trial directory, not bound into a container)
// says so and exits 2 at once, instead of waiting out the rendezvous timeout (300 s) for a file it can never create.
TEST(GlooRendezvous, ARankThatCannotSeeItsRendezvousDirectoryFailsAtOnceNamingIt) {
  testing::TempDir dir("rendezvous-unseen");
  const std::string unseen = (dir / "trial-dir-not-bound").string();
  // `timeout` only ends the test should the rank wait after all; it answers 124 then.
  std::string line = "LADDER_RENDEZVOUS_FILE='" + unseen + "/rendezvous-1' RANK=0 LOCAL_RANK=0 WORLD_SIZE=2 " +
                     "MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 timeout 120 '" + Train() + "'";
  for (auto& arg : TrainArgs(16, (dir / "gloo.bin").string(), "gloo")) line += " '" + arg + "'";
  auto r = testing::RunCommand({"/bin/bash", "-c", line}, dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("its directory " + unseen + " is not there"), std::string::npos) << r.err;
}

// Ranks that are all on one node (LOCAL_WORLD_SIZE == WORLD_SIZE, as a worker starts a one-node trial's) get the
// shared-memory backend by default, and its segment is gone from /dev/shm as soon as every rank has mapped it.
TEST(ShmBackend, AutoPicksItForRanksOnOneNodeAndLeavesNoSegment) {
  testing::TempDir dir("shm-auto");
  auto segments = [] {
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator("/dev/shm")) {
      n += e.path().filename().string().rfind("ladder-shm-", 0) == 0;
    }
    return n;
  };
  const int before = segments();
  std::vector<std::string> args = {"--epochs", "2", "--width", "32", "--seed", "1"};
  const std::string port = std::to_string(FreePort());
  std::string script;
  for (int r = 0; r < 2; ++r) {
    script += "RANK=" + std::to_string(r) + " LOCAL_RANK=" + std::to_string(r) +
              " WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port + " '" + Train() + "'";
    for (auto& a : args) script += " '" + a + "'";
    script += " > rank" + std::to_string(r) + ".out 2> rank" + std::to_string(r) + ".err & ";
  }
  script += "fail=0; for p in $(jobs -p); do wait $p || fail=1; done; exit $fail";
  auto r = testing::RunCommand({"/bin/bash", "-c", script}, dir);
  std::ifstream log(dir / "rank0.err");
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  ASSERT_EQ(r.exit_code, 0) << text;
  EXPECT_NE(text.find("2 rank(s) over shm"), std::string::npos) << text;
  EXPECT_EQ(segments(), before);
}

// A rank that does not bring the group's rendezvous secret (a stranger on the network who found MASTER_PORT) is
// refused by rank 0's store and says why; rank 0 waits for its real peer (killed here).
TEST(GlooRendezvous, ARankWithAnotherSecretIsRefusedAndSaysWhy) {
  testing::TempDir dir("rendezvous-secret");
  const std::string port = std::to_string(FreePort());
  auto rank = [&](int r, const std::string& secret) {
    std::string line = "RANK=" + std::to_string(r) + " LOCAL_RANK=" + std::to_string(r) +
                       " WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port +
                       " LADDER_RENDEZVOUS_SECRET=" + secret + " '" + Train() + "'";
    for (auto& arg : TrainArgs(16, (dir / "gloo.bin").string(), "gloo")) line += " '" + arg + "'";
    return line + " > rank" + std::to_string(r) + ".out 2> rank" + std::to_string(r) + ".err";
  };
  const std::string script = rank(0, "right") + " & r0=$!; " + rank(1, "wrong") +
                             "; rc=$?; kill $r0; wait $r0; exit $rc";
  auto r = testing::RunCommand({"/bin/bash", "-c", script}, dir);
  std::ifstream log(dir / "rank1.err");
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(r.exit_code, 0) << text;
  EXPECT_NE(text.find("rendezvous at 127.0.0.1:" + port), std::string::npos) << text;
  EXPECT_NE(text.find("LADDER_RENDEZVOUS_SECRET"), std::string::npos) << text;
}

}  // namespace
}  // namespace ladder
