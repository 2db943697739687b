// Staging shards (shard: node; worker/stage.h): each node of a group holds exactly its share of the shard files,
// reused while they are unchanged and replaced when the node's share changes; a share larger than the node's space
// is refused with the sizes, while a dataset larger than one node stages in shares; which node a rank is on comes
// from its launcher's variables.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "tests/support/process.h"
#include "worker/stage.h"

namespace ladder::worker {
namespace {

namespace fs = std::filesystem;

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void Write(const fs::path& path, const std::string& text, time_t mtime = 1700000000) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  struct timespec t[2] = {{mtime, 0}, {mtime, 0}};
  ::utimensat(AT_FDCWD, path.c_str(), t, 0);
}

// The names of the files (not the dot files) in `dir`.
std::set<std::string> Names(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n[0] != '.') out.insert(n);
  }
  return out;
}

class StageShardsTest : public ::testing::Test {
 protected:
  testing::TempDir dir_{"stage-shards"};
  fs::path shards_ = dir_ / "shared" / "shards";
  StageOptions opt_{"n2", nullptr};
  void SetUp() override {
    fs::create_directories(shards_);
    for (int i = 0; i < 10; ++i) Write(shards_ / ("part-" + std::to_string(i) + ".bin"), std::string(1000, 'a' + i));
    Write(shards_ / ".hidden", "not a shard");
  }
  // Node `index` of `count` staging the directory into its own local directory.
  std::string Stage(int index, int count, const std::string& local, std::string* note) {
    return EnsureShardStaged({shards_.string(), {}}, local, {index, count}, opt_, note);
  }
  // The files node `index` of `count` gets: part-k with k mod count == index (the sorted names: part-0..part-9).
  std::set<std::string> Share(int index, int count) {
    std::set<std::string> out;
    for (int k = index; k < 10; k += count) out.insert("part-" + std::to_string(k) + ".bin");
    return out;
  }
};

TEST_F(StageShardsTest, EachNodeHoldsExactlyItsShareAndTogetherTheyHoldEveryFile) {
  std::set<std::string> all;
  for (int node = 0; node < 3; ++node) {
    const std::string local = (dir_ / ("node" + std::to_string(node))).string();
    std::string note;
    ASSERT_EQ(Stage(node, 3, local, &note), "");
    EXPECT_NE(note.find("node " + std::to_string(node) + " of 3's share of " + shards_.string()), std::string::npos)
        << note;
    const auto names = Names(local + "/shards");
    EXPECT_EQ(names, Share(node, 3)) << "node " << node;
    for (const auto& n : names) {
      EXPECT_EQ(Slurp(local + "/shards/" + n), Slurp(shards_ / n));
      EXPECT_TRUE(all.insert(n).second) << n << " on two nodes";
    }
  }
  EXPECT_EQ(all.size(), 10u);
}

TEST_F(StageShardsTest, ReusedWhileUnchangedAndReplacedWhenTheShareChanges) {
  const std::string local = (dir_ / "local").string();
  std::string note;
  ASSERT_EQ(Stage(0, 2, local, &note), "");
  EXPECT_NE(note.find("5 of 10 files (5000 bytes)"), std::string::npos) << note;
  EXPECT_NE(note.find(": 5 copied, 0 reused, 0 of another share removed"), std::string::npos) << note;
  ASSERT_EQ(Stage(0, 2, local, &note), "");
  EXPECT_NE(note.find(": 0 copied, 5 reused"), std::string::npos) << note;
  // One shard rewritten (its mtime moved): that one is copied again.
  Write(shards_ / "part-4.bin", std::string(1000, 'Z'), 1700000100);
  ASSERT_EQ(Stage(0, 2, local, &note), "");
  EXPECT_NE(note.find(": 1 copied, 4 reused"), std::string::npos) << note;
  EXPECT_EQ(Slurp(local + "/shards/part-4.bin"), std::string(1000, 'Z'));
  // The node is now node 1 of 3: it holds exactly that share, what it keeps reused, the rest removed.
  ASSERT_EQ(Stage(1, 3, local, &note), "");
  EXPECT_EQ(Names(local + "/shards"), Share(1, 3));
  EXPECT_NE(note.find(": 2 copied, 1 reused, 4 of another share removed"), std::string::npos) << note;
}

TEST_F(StageShardsTest, AListOfFilesLandsInTheDirectoryItself) {
  const std::string local = (dir_ / "local").string();
  fs::create_directories(local);
  Write(local + "/mine.txt", "not staged: left alone");
  const ShardSource list{"", {(shards_ / "part-7.bin").string(), (shards_ / "part-2.bin").string(),
                              (shards_ / "part-5.bin").string()}};
  std::string note;
  ASSERT_EQ(EnsureShardStaged(list, local, {1, 2}, opt_, &note), "");
  EXPECT_EQ(Names(local), (std::set<std::string>{"mine.txt", "part-2.bin"})) << "the list's order: its second file";
  ASSERT_EQ(EnsureShardStaged(list, local, {0, 2}, opt_, &note), "");
  EXPECT_EQ(Names(local), (std::set<std::string>{"mine.txt", "part-7.bin", "part-5.bin"}));
  const ShardSource missing{"", {(shards_ / "nope.bin").string()}};
  EXPECT_NE(EnsureShardStaged(missing, local, {0, 1}, opt_, &note).find("nope.bin: No such file"), std::string::npos);
  const ShardSource a_directory{"", {shards_.string()}};
  EXPECT_NE(EnsureShardStaged(a_directory, local, {0, 1}, opt_, &note).find(shards_.string() + ": not a regular file"),
            std::string::npos);
}

TEST_F(StageShardsTest, AShareLargerThanTheNodeIsRefusedWhileTheDatasetStagesInShares) {
  // 10,000 bytes in all; the node has room for 6,000: more than one node's share of two (5,000), less than the whole.
  opt_.free_bytes = [](const std::string&) { return std::optional<uint64_t>(6000); };
  std::string note;
  const std::string one = (dir_ / "one").string();
  const std::string error = Stage(0, 1, one, &note);
  EXPECT_NE(error.find("not enough space to stage node n2's share of " + shards_.string() + " (10 of 10 files, "
                       "10000 bytes; 10000 bytes to copy) into " + one + "/shards on node n2: 6000 bytes free"),
            std::string::npos)
      << error;
  EXPECT_TRUE(Names(one + "/shards").empty());
  ASSERT_EQ(Stage(0, 2, (dir_ / "a").string(), &note), "") << "half of it fits";
  ASSERT_EQ(Stage(1, 2, (dir_ / "b").string(), &note), "");
  EXPECT_EQ(Names(dir_ / "a" / "shards").size() + Names(dir_ / "b" / "shards").size(), 10u);
}

TEST(NodeShare, ComesFromTheLaunchersVariables) {
  auto from = [](std::map<std::string, std::string> env) {
    std::string error;
    auto share = NodeShareFromEnv(
        [&env](const char* name) { return env.count(name) ? env[name].c_str() : nullptr; }, &error);
    return share ? std::to_string(share->index) + "/" + std::to_string(share->count) : "error: " + error;
  };
  EXPECT_EQ(from({{"LADDER_LAUNCHER", "srun"}, {"SLURM_NODEID", "2"}, {"SLURM_NNODES", "4"}, {"LADDER_NODES", "4"}}),
            "2/4");
  // per_node under a Slurm job: the workers' step's SLURM_NODEID is not the trial's node.
  EXPECT_EQ(from({{"LADDER_LAUNCHER", "per_node"}, {"RANK", "5"}, {"LOCAL_WORLD_SIZE", "2"}, {"LADDER_NODES", "3"},
                  {"SLURM_NODEID", "0"}}),
            "2/3");
  EXPECT_EQ(from({{"LADDER_LAUNCHER", "mpirun"}, {"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                  {"LADDER_NODES", "2"}}),
            "1/2");
  EXPECT_EQ(from({}), "0/1") << "run by hand";
  EXPECT_EQ(from({{"LADDER_LAUNCHER", "srun"}, {"SLURM_NNODES", "4"}}),
            "error: cannot tell which of the trial's nodes this is (SLURM_NODEID of SLURM_NNODES)");
  EXPECT_EQ(from({{"RANK", "9"}, {"LOCAL_WORLD_SIZE", "2"}, {"LADDER_NODES", "3"}}).rfind("error: ", 0), 0u);
}

}  // namespace
}  // namespace ladder::worker
