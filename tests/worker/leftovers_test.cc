// Leftover trial processes of an earlier worker (worker/leftovers.h): found by the LADDER_TRIAL_DIR in their
// environment (with this node's LADDER_NODE_ID) and killed; processes of another trial directory or node are left alone.
#include "worker/leftovers.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

namespace ladder::worker {
namespace {

// `sleep 60` with LADDER_TRIAL_DIR=trial_dir/trial-7 and LADDER_NODE_ID=node as its environment; in Charliecloud
// (`contained`), LADDER_TRIAL_DIR is the guest's /mnt/9 and LADDER_HOST_TRIAL_DIR=trial_dir/trial-7.
pid_t SleepUnder(const std::filesystem::path& trial_dir, const std::string& node = "n1", bool contained = false) {
  std::string var = "LADDER_TRIAL_DIR=" + (trial_dir / "trial-7").string(), id = "LADDER_NODE_ID=" + node;
  std::string host = "LADDER_HOST_TRIAL_DIR=" + (trial_dir / "trial-7").string();
  if (contained) var = "LADDER_TRIAL_DIR=/mnt/9";
  char* envp[] = {var.data(), id.data(), contained ? host.data() : nullptr, nullptr};
  std::string sleep = "/bin/sleep", secs = "60";
  char* argv[] = {sleep.data(), secs.data(), nullptr};
  pid_t pid = -1;
  EXPECT_EQ(posix_spawn(&pid, argv[0], nullptr, nullptr, argv, envp), 0);
  // posix_spawn returns once exec has switched to the new program, whose environment /proc shows a moment later
  // (the kernel sets it up after it lets the parent go): wait for it, within a deadline.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
    const std::string env((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (env.find(id) != std::string::npos) break;
    if (std::chrono::steady_clock::now() > until) {
      ADD_FAILURE() << "pid " << pid << ": no environment after 10 s";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return pid;
}

// `killed` names `ours` (trial 7) alone, which died of SIGKILL, while each of `others` runs on (then is ended).
void ExpectOnlyKilled(const std::vector<std::string>& killed, pid_t ours, const std::vector<pid_t>& others) {
  ASSERT_EQ(killed.size(), 1u);
  EXPECT_EQ(killed[0], "pid " + std::to_string(ours) + " (trial-7)");
  int status = 0;
  ASSERT_EQ(waitpid(ours, &status, 0), ours);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  for (pid_t p : others) {
    EXPECT_EQ(waitpid(p, &status, WNOHANG), 0) << "pid " << p << " (another directory's or node's) runs on";
    kill(p, SIGKILL);
    waitpid(p, &status, 0);
  }
}

TEST(LeftoversTest, KillsTheProcessesLeftUnderThisTrialDirectoryAndNodeOnly) {
  const auto dir = std::filesystem::temp_directory_path() / ("ladder-leftovers-" + std::to_string(getpid()));
  const pid_t ours = SleepUnder(dir / "trials");
  const pid_t other = SleepUnder(dir / "trials-of-another-worker");
  const pid_t other_node = SleepUnder(dir / "trials", "n2");  // another node's worker on this process table
  ASSERT_GT(ours, 0);
  ASSERT_GT(other, 0);
  ASSERT_GT(other_node, 0);
  ExpectOnlyKilled(KillLeftoverTrialProcesses((dir / "trials").string(), "n1"), ours, {other, other_node});
}

// A rank inside Charliecloud, whose LADDER_TRIAL_DIR is the guest's path: found by its LADDER_HOST_TRIAL_DIR.
TEST(LeftoversTest, KillsARankLeftInAContainerByItsHostTrialDirectory) {
  const auto dir = std::filesystem::temp_directory_path() / ("ladder-leftovers-ct-" + std::to_string(getpid()));
  const pid_t ours = SleepUnder(dir / "trials", "n1", /*contained=*/true);
  const pid_t other = SleepUnder(dir / "trials-of-another-worker", "n1", /*contained=*/true);
  ASSERT_GT(ours, 0);
  ASSERT_GT(other, 0);
  ExpectOnlyKilled(KillLeftoverTrialProcesses((dir / "trials").string(), "n1"), ours, {other});
}

}  // namespace
}  // namespace ladder::worker
