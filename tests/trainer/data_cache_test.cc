// The zygote's dataset cache (trainer/data_cache.h): what it hands a child, and when it must not.
#include "trainer/data_cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace ladder::trainer {
namespace {

namespace fs = std::filesystem;

class DataCache : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ladder-data-cache-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // A CSV of `rows` rows: two features and a label; `offset` makes files of the same size differ.
  std::string WriteCsv(const std::string& name, int rows, int offset = 0) {
    const std::string path = (dir_ / name).string();
    std::ofstream f(path);
    for (int r = 0; r < rows; ++r) f << r + offset << "," << r * 2 << "," << r % 2 << "\n";
    return path;
  }
  fs::path dir_;
};

TEST_F(DataCache, APreloadedFileIsFoundWithItsRowsUntilTheFileChanges) {
  const std::string path = WriteCsv("a.csv", 10);
  EXPECT_EQ(FindData(path, {}), nullptr) << "nothing before a preload";
  std::string error;
  ASSERT_TRUE(PreloadData(path, {}, &error)) << error;
  const Dataset* d = FindData(path, {});
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->rows, 10);
  EXPECT_EQ(d->features, 2);
  EXPECT_EQ(d->x[2], 1.0f) << "row 1's first feature";
  EXPECT_EQ(FindData(path, {}), d) << "the same entry again, not a reload";

  // Rewritten with the same size: the modification time (or the inode) tells it apart.
  usleep(20000);
  WriteCsv("a.csv", 10, /*offset=*/1);
  EXPECT_EQ(FindData(path, {}), nullptr) << "a rewritten file is never served from the cache";
  ASSERT_TRUE(PreloadData(path, {}, &error)) << error;
  d = FindData(path, {});
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->x[2], 2.0f) << "the new file's rows";

  // Replaced by another file (rename over it): another inode.
  const std::string other = WriteCsv("b.csv", 12);
  fs::rename(other, path);
  EXPECT_EQ(FindData(path, {}), nullptr);
  fs::remove(path);
  EXPECT_EQ(FindData(path, {}), nullptr) << "a deleted file is not served either";
}

TEST_F(DataCache, TheSpecTextAndOptionsArePartOfTheKey) {
  std::string error;
  ASSERT_TRUE(PreloadData("markov:64:8", {}, &error)) << error;
  ASSERT_NE(FindData("markov:64:8", {}), nullptr) << "generated data has no file and is cached by its text";
  DataOptions longer;
  longer.seq_len = 32;
  EXPECT_EQ(FindData("markov:64", {}), nullptr);
  ASSERT_TRUE(PreloadData("markov:64", longer, &error)) << error;
  EXPECT_EQ(FindData("markov:64", {}), nullptr) << "markov:64 reads --seq-len: another option, another entry";
  ASSERT_NE(FindData("markov:64", longer), nullptr);
  EXPECT_EQ(FindData("markov:64", longer)->y.size(), 64u * 32u);

  // A relative path is stat'ed where the caller stands: the same text in another directory is another file.
  const fs::path here = fs::current_path();
  fs::create_directories(dir_ / "x");
  fs::create_directories(dir_ / "y");
  WriteCsv("x/d.csv", 4);
  WriteCsv("y/d.csv", 6);
  fs::current_path(dir_ / "x");
  ASSERT_TRUE(PreloadData("d.csv", {}, &error)) << error;
  ASSERT_NE(FindData("d.csv", {}), nullptr);
  fs::current_path(dir_ / "y");
  EXPECT_EQ(FindData("d.csv", {}), nullptr);
  fs::current_path(here);
}

TEST_F(DataCache, ItFailsWithTheLoadersErrorAndStaysWithinItsBound) {
  std::string error;
  EXPECT_FALSE(PreloadData((dir_ / "missing.csv").string(), {}, &error));
  EXPECT_NE(error.find("missing.csv"), std::string::npos) << error;

  const std::string a = WriteCsv("a.csv", 100), b = WriteCsv("b.csv", 100), big = WriteCsv("big.csv", 1000);
  const int64_t one = 100 * (2 * sizeof(float) + sizeof(int64_t));  // 100 rows' features and labels
  const int64_t bound = 2 * one;  // whatever an earlier test left is the least recently used: it goes first
  ASSERT_TRUE(PreloadData(a, {}, &error, bound)) << error;
  ASSERT_TRUE(PreloadData(b, {}, &error, bound)) << error;
  EXPECT_EQ(DataCacheBytes(), 2 * one);
  error.clear();
  EXPECT_FALSE(PreloadData(big, {}, &error, bound)) << "larger than the bound: not kept";
  EXPECT_NE(error.find("more than the cache keeps"), std::string::npos) << error;
  error.clear();
  EXPECT_FALSE(PreloadData(big, {}, &error, /*max_bytes=*/100)) << "its file alone is over the bound";
  EXPECT_NE(error.find("bytes on disk, more than the cache keeps (100)"), std::string::npos) << error;
  EXPECT_EQ(FindData(big, {}), nullptr);
  ASSERT_NE(FindData(a, {}), nullptr);  // a is now the most recently used
  const std::string c = WriteCsv("c.csv", 100);
  ASSERT_TRUE(PreloadData(c, {}, &error, bound)) << error;
  EXPECT_LE(DataCacheBytes(), bound);
  EXPECT_NE(FindData(a, {}), nullptr);
  EXPECT_EQ(FindData(b, {}), nullptr) << "the least recently used entry made room";
  EXPECT_NE(FindData(c, {}), nullptr);
}

}  // namespace
}  // namespace ladder::trainer
