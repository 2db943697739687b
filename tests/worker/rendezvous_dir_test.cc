// One-node trials' rendezvous files (worker/rendezvous_dir.h): in this worker's directory in TMPDIR, used only
// while it is a real directory of this user's closed to others; dead workers' removed at a worker's start, another
// node's kept.
#include "worker/rendezvous_dir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/process.h"

namespace ladder::worker {
namespace {

namespace fs = std::filesystem;

// TMPDIR pointed at a fresh directory for one test.
class RendezvousDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* old = std::getenv("TMPDIR");
    old_ = old ? old : "";
    had_ = old != nullptr;
    ::setenv("TMPDIR", tmp_.path.c_str(), 1);
    mine_ = (tmp_.path / ("ladder-rendezvous-" + std::to_string(::geteuid()))).string();
  }
  void TearDown() override {
    if (had_) {
      ::setenv("TMPDIR", old_.c_str(), 1);
    } else {
      ::unsetenv("TMPDIR");
    }
  }
  testing::TempDir tmp_{"rendezvous-dir"};
  std::string old_, mine_;
  bool had_ = false;
};

TEST_F(RendezvousDirTest, IsMadeClosedToOthersAndNamesEachRunsFileByTrialAndEpoch) {
  std::string why;
  const auto dir = RendezvousDir("gpu/7", &why);
  ASSERT_TRUE(dir) << why;
  const std::string me = mine_ + "-gpu_7-" + std::to_string(::getpid());
  EXPECT_EQ(*dir, me);
  struct stat st {};
  ASSERT_EQ(::lstat(dir->c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(RendezvousFile(*dir, 12, 3), me + "/trial-12-3");
  EXPECT_TRUE(RendezvousDir("gpu/7", &why)) << "an existing one is used again: " << why;
}

TEST_F(RendezvousDirTest, ALinkOrADirectoryOpenToOthersIsNotUsed) {
  const std::string mine = mine_ + "-n1-" + std::to_string(::getpid());
  fs::create_directory(tmp_.path / "elsewhere");
  fs::create_directory_symlink(tmp_.path / "elsewhere", mine);
  std::string why;
  EXPECT_FALSE(RendezvousDir("n1", &why));
  EXPECT_NE(why.find(mine), std::string::npos) << why;
  fs::remove(mine);
  fs::create_directory(mine);
  fs::permissions(mine, fs::perms::all);
  EXPECT_FALSE(RendezvousDir("n1", &why)) << "mode 0777";
  fs::permissions(mine, fs::perms::owner_all);
  EXPECT_TRUE(RendezvousDir("n1", &why)) << why;
}

TEST_F(RendezvousDirTest, AWorkersStartRemovesItsNodesDirectoriesOfDeadProcessesOnly) {
  // A process that is gone: a child that exited and was reaped.
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ASSERT_GT(dead, 0);
  ::waitpid(dead, nullptr, 0);
  const std::string stale = mine_ + "-n1-" + std::to_string(dead), live = mine_ + "-n1-1";  // pid 1 lives
  const std::string other = mine_ + "-n2-" + std::to_string(dead);
  for (const auto& d : {stale, live, other}) {
    fs::create_directory(d);
    std::ofstream(d + "/trial-4-1") << "x";
  }
  RemoveDeadRendezvousDirs("n1");
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(live + "/trial-4-1"));
  EXPECT_TRUE(fs::exists(other + "/trial-4-1"));
  // A worker's start makes no directory of its own: that waits for its first trial of several ranks.
  EXPECT_FALSE(fs::exists(mine_ + "-n1-" + std::to_string(::getpid())));
  // Making one also clears the dead (another predecessor killed since).
  fs::create_directory(stale);
  std::string why;
  ASSERT_TRUE(RendezvousDir("n1", &why)) << why;
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(mine_ + "-n1-" + std::to_string(::getpid())));
}

}  // namespace
}  // namespace ladder::worker
