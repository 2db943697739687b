// One-node trials' rendezvous files (worker/rendezvous_dir.h): under this user's directory in TMPDIR, used only
// while it is a real directory of this user's closed to others; one node's leftovers removed, another's kept.
#include "worker/rendezvous_dir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
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

TEST_F(RendezvousDirTest, IsMadeClosedToOthersAndNamesEachRunsFileByNodeTrialAndEpoch) {
  std::string why;
  const auto dir = RendezvousDir(&why);
  ASSERT_TRUE(dir) << why;
  EXPECT_EQ(*dir, mine_);
  struct stat st {};
  ASSERT_EQ(::lstat(dir->c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(RendezvousFile(*dir, "gpu/7", 12, 3), mine_ + "/gpu_7-trial-12-3");
  EXPECT_TRUE(RendezvousDir(&why)) << "an existing one is used again: " << why;
}

TEST_F(RendezvousDirTest, ALinkOrADirectoryOpenToOthersIsNotUsed) {
  fs::create_directory(tmp_.path / "elsewhere");
  fs::create_directory_symlink(tmp_.path / "elsewhere", mine_);
  std::string why;
  EXPECT_FALSE(RendezvousDir(&why));
  EXPECT_NE(why.find(mine_), std::string::npos) << why;
  fs::remove(mine_);
  fs::create_directory(mine_);
  fs::permissions(mine_, fs::perms::all);
  EXPECT_FALSE(RendezvousDir(&why)) << "mode 0777";
  fs::permissions(mine_, fs::perms::owner_all);
  EXPECT_TRUE(RendezvousDir(&why)) << why;
}

TEST_F(RendezvousDirTest, AWorkersStartRemovesItsNodesLeftoversOnly) {
  std::string why;
  const auto dir = RendezvousDir(&why);
  ASSERT_TRUE(dir) << why;
  for (const char* name : {"n1-trial-4-1", "n1-trial-9-2", "n12-trial-4-1", "n2-trial-4-1"}) {
    std::ofstream(*dir + "/" + name) << "x";
  }
  EXPECT_EQ(RemoveNodeRendezvousFiles(*dir, "n1"), 2);
  EXPECT_FALSE(fs::exists(*dir + "/n1-trial-4-1"));
  EXPECT_TRUE(fs::exists(*dir + "/n12-trial-4-1"));
  EXPECT_TRUE(fs::exists(*dir + "/n2-trial-4-1"));
}

}  // namespace
}  // namespace ladder::worker
