// Staging onto node-local storage (worker/stage.h): copied once and checked, reused while the source is unchanged,
// an sbcast delivery taken only when its CRC-32 matches, a directory too small named with the sizes, and the ranks
// of one node taking turns.
#include "worker/stage.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "tests/support/process.h"

namespace ladder::worker {
namespace {

std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Writes `text` to `path` and sets its mtime (so a test can rewrite a file that stat cannot tell apart).
void Write(const std::filesystem::path& path, const std::string& text, time_t mtime = 1700000000) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  struct timespec t[2] = {{mtime, 0}, {mtime, 0}};
  ::utimensat(AT_FDCWD, path.c_str(), t, 0);
}

class StageTest : public ::testing::Test {
 protected:
  testing::TempDir dir_{"stage"};
  std::string src_ = (dir_ / "shared" / "data.bin").string();
  std::string local_ = (dir_ / "local").string();
  StageOptions opt_{"n7", nullptr};
  void SetUp() override { std::filesystem::create_directories(dir_ / "shared"); }
  std::string Stage(std::string* note) { return EnsureStaged(src_, local_, opt_, note); }
};

TEST_F(StageTest, CopiesOnceAndReusesWhileTheSourceIsUnchanged) {
  const std::string data(3 << 20, 'x');
  Write(src_, data);
  std::string note;
  ASSERT_EQ(Stage(&note), "");
  EXPECT_NE(note.find("copied from " + src_), std::string::npos) << note;
  EXPECT_EQ(Slurp(local_ + "/data.bin"), data);
  ASSERT_EQ(Stage(&note), "");
  EXPECT_NE(note.find("reused"), std::string::npos) << note;
  // Rewritten in place with the same size and mtime, the source reads differently, but the node's copy is kept:
  // reuse reads nothing of the shared file (a stat).
  Write(src_, std::string(3 << 20, 'y'));
  ASSERT_EQ(Stage(&note), "");
  EXPECT_NE(note.find("reused"), std::string::npos) << note;
  // A new version (its mtime moved) is copied again.
  Write(src_, std::string(3 << 20, 'z'), 1700000100);
  ASSERT_EQ(Stage(&note), "");
  EXPECT_NE(note.find("copied"), std::string::npos) << note;
  EXPECT_EQ(Slurp(local_ + "/data.bin"), std::string(3 << 20, 'z'));
  // Nothing is left but the copy, its marker and the lock.
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(local_)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{".data.bin.ladder-stage", ".data.bin.lock", "data.bin"}));
}

TEST_F(StageTest, AnSbcastDeliveryIsTakenOnlyWhenItsCrcMatchesTheSourcesManifest) {
  const std::string data = "0123456789abcdef";
  Write(src_, data);
  uint64_t size = 0;
  int64_t mtime = 0;
  ASSERT_TRUE(StatFile(src_, &size, &mtime));
  std::string error;
  const auto crc = FileCrc32(src_, &size, &error);
  ASSERT_TRUE(crc) << error;
  std::filesystem::create_directories(local_);
  // A delivery damaged on the way: its CRC-32 does not match, so the node copies from the source.
  Write(local_ + "/.data.bin.sbcast", "0123456789abcdeX");
  Write(local_ + "/.data.bin.sbcast.json", StageManifest(src_, size, mtime, *crc));
  std::string note;
  ASSERT_EQ(Stage(&note), "");
  EXPECT_NE(note.find("copied"), std::string::npos) << note;
  EXPECT_EQ(Slurp(local_ + "/data.bin"), data);
  EXPECT_FALSE(std::filesystem::exists(local_ + "/.data.bin.sbcast")) << "the bad delivery is removed";
  // A good delivery of a new version is taken as it is.
  Write(src_, "fedcba9876543210", 1700000200);
  ASSERT_TRUE(StatFile(src_, &size, &mtime));
  const auto crc2 = FileCrc32(src_, &size, &error);
  Write(local_ + "/.data.bin.sbcast", "fedcba9876543210");
  Write(local_ + "/.data.bin.sbcast.json", StageManifest(src_, size, mtime, *crc2));
  ASSERT_EQ(Stage(&note), "");
  EXPECT_NE(note.find("taken from sbcast"), std::string::npos) << note;
  EXPECT_EQ(Slurp(local_ + "/data.bin"), "fedcba9876543210");
  ASSERT_EQ(Stage(&note), "");
  EXPECT_NE(note.find("reused"), std::string::npos) << note;
}

TEST_F(StageTest, ADirectoryTooSmallIsNamedWithTheSizes) {
  Write(src_, std::string(2 << 20, 'x'));
  opt_.free_bytes = [](const std::string&) { return std::optional<uint64_t>(1 << 20); };
  std::string note;
  const std::string error = Stage(&note);
  EXPECT_NE(error.find("not enough space to stage " + src_ + " (2.0 MiB) into " + local_ + " on node n7: 1.0 MiB free"),
            std::string::npos)
      << error;
  EXPECT_FALSE(std::filesystem::exists(local_ + "/data.bin"));
  auto missing = EnsureStaged((dir_ / "shared" / "nope.tar").string(), local_, opt_, &note);
  EXPECT_NE(missing.find("nope.tar: No such file or directory"), std::string::npos) << missing;
}

TEST_F(StageTest, TheRanksOfANodeTakeTurnsAndOneCopies) {
  Write(src_, std::string(8 << 20, 'r'));
  std::vector<std::string> notes(4), errors(4);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 4; ++r) ranks.emplace_back([&, r] { errors[r] = Stage(&notes[r]); });
  for (auto& t : ranks) t.join();
  int copied = 0, reused = 0;
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(errors[r], "") << r;
    copied += notes[r].find("copied") != std::string::npos;
    reused += notes[r].find("reused") != std::string::npos;
  }
  EXPECT_EQ(copied, 1);
  EXPECT_EQ(reused, 3);
}

}  // namespace
}  // namespace ladder::worker
