// ladder-train stops cleanly on SIGTERM (trainer/stop_request.h): the ranks agree on a step, rank 0 saves the
// checkpoint there, every rank exits with 128 + 15, and --resume goes on from that very step. Run as processes:
// one rank, and two Gloo ranks of which only rank 1 gets the signal (the agreement makes rank 0 stop too).
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <string>

#include "tests/support/process.h"
#include "tests/support/trainer_runs.h"

namespace ladder {
namespace {

std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The step a "stopped by signal S at step N" or "resumed from ... at step N" line names (-1: none).
long StepIn(const std::string& text, const std::string& pattern) {
  std::smatch m;
  return std::regex_search(text, m, std::regex(pattern + " ([0-9]+)")) ? std::stol(m[1]) : -1;
}

// Runs `ranks` ladder-train processes (torchrun style over Gloo when 2) with a checkpoint, waits (on a FIFO, for
// rank 0's first metrics line) until they train, sends SIGTERM to rank `signalled`, and reports each rank's exit
// status in rankR.status; stdout/stderr in rankR.out/.err.
void RunAndSignal(const std::filesystem::path& dir, int ranks, int signalled, const std::string& extra) {
  const std::string port = std::to_string(testing::FreePort());
  std::string script = "mkfifo first; ";
  for (int r = 0; r < ranks; ++r) {
    const std::string env = ranks == 1 ? "" : "RANK=" + std::to_string(r) + " LOCAL_RANK=" + std::to_string(r) +
                                                   " WORLD_SIZE=" + std::to_string(ranks) +
                                                   " MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port + " ";
    const std::string out = r == 0 ? "first" : "rank" + std::to_string(r) + ".out";
    script += env + "'" + testing::TrainerBinary() + "' --epochs 200 --batch-size 16 --width 32 --log-every 1 " +
              "--checkpoint ckpt.pt " + extra + " > " + out + " 2> rank" + std::to_string(r) + ".err & pid" +
              std::to_string(r) + "=$!; ";
  }
  // Rank 0's stdout comes through the FIFO: its first line says the ranks train; the rest goes to rank0.out.
  script += "exec 3< first; read -r line <&3; echo \"$line\" > rank0.out; cat <&3 >> rank0.out & kill -TERM $pid" +
            std::to_string(signalled) + "; ";
  // The last rank first: rankR.saw says whether the checkpoint was on disk once rank R had exited.
  for (int r = ranks - 1; r >= 0; --r) {
    const std::string n = std::to_string(r);
    script += "wait $pid" + n + "; echo $? > rank" + n + ".status; [ -e ckpt.pt ] && echo yes > rank" + n + ".saw; ";
  }
  script += "wait";
  testing::RunCommand({"/bin/bash", "-c", script}, dir);
}

TEST(StopSignal, OneRankSavesItsCheckpointAtTheStepItStoppedAndResumesThere) {
  testing::TempDir dir("stop1");
  RunAndSignal(dir, 1, 0, "");
  const std::string err = Slurp(dir / "rank0.err");
  EXPECT_EQ(Slurp(dir / "rank0.status"), "143\n") << err;
  const long stopped = StepIn(err, "stopped by signal 15 at step");
  ASSERT_GT(stopped, 0) << err;
  ASSERT_TRUE(std::filesystem::exists(dir / "ckpt.pt"));

  auto resumed = testing::RunCommand({testing::TrainerBinary(), "--epochs", "1", "--batch-size", "16", "--width",
                                      "32", "--checkpoint", "ckpt.pt", "--resume", "--max-steps",
                                      std::to_string(stopped + 3)},
                                     dir);
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(StepIn(resumed.err, "resumed from ckpt.pt at step"), stopped) << resumed.err;
}

TEST(StopSignal, TwoGlooRanksStopAtTheSameStepWhenOnlyOneIsSignalled) {
  testing::TempDir dir("stop2");
  RunAndSignal(dir, 2, 1, "--comm gloo");
  const std::string err0 = Slurp(dir / "rank0.err"), err1 = Slurp(dir / "rank1.err");
  EXPECT_EQ(Slurp(dir / "rank1.status"), "143\n") << err1;
  EXPECT_EQ(Slurp(dir / "rank0.status"), "143\n") << "rank 0 got no signal but stops with the group: " << err0;
  const long stopped = StepIn(err0, "stopped by signal [0-9]+ at step");
  ASSERT_GT(stopped, 0) << err0;
  EXPECT_EQ(stopped % 8, 0) << "the ranks agree every 8 steps";
  ASSERT_TRUE(std::filesystem::exists(dir / "ckpt.pt"));
  // Rank 1 left only after rank 0's checkpoint was written: a launcher (srun --kill-on-bad-exit, mpirun) ends the
  // other ranks when one exits non-zero, which would cut rank 0's save short.
  EXPECT_EQ(Slurp(dir / "rank1.saw"), "yes\n") << err1;
  // The last training line rank 0 printed is the step it stopped at: no step ran past the checkpoint.
  const std::string out = Slurp(dir / "rank0.out");
  EXPECT_NE(out.find("\"step\": " + std::to_string(stopped) + ","), std::string::npos) << out.substr(out.size() > 400 ? out.size() - 400 : 0);
  EXPECT_EQ(out.find("\"step\": " + std::to_string(stopped + 1) + ","), std::string::npos);
}

}  // namespace
}  // namespace ladder
