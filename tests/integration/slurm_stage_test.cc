// Data staged on a real Slurm cluster (tests/support/local_slurm.h: every node its own node-local directory) as the
// talks learned: a 2,000-file dataset as one tar archive unpacked once per node (counted in the ranks' stage log:
// one "extracted from" per node, every other rank "reused", which reads nothing of the archive:
// tests/worker/stage_data_test.cc), and the same files as shards, each node of a 4-node trial holding exactly its
// share.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "tests/integration/slurm_fixture.h"

namespace ladder {
namespace {

namespace fs = std::filesystem;

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

constexpr int kFiles = 2000;

std::string FileName(int k) {
  char name[32];
  std::snprintf(name, sizeof name, "f-%04d.bin", k);
  return name;
}

// kFiles small files of distinct content in `dir`.
void MakeDataset(const fs::path& dir) {
  fs::create_directories(dir);
  for (int k = 0; k < kFiles; ++k) std::ofstream(dir / FileName(k)) << "sample " << k << " " << std::string(k % 97, 'x');
}

// The lines the trials' ladder-stage printed (their stderr.log: srun gathers every task's there).
std::string StageNotes(const fs::path& trial_dirs) {
  std::string out;
  for (const auto& e : fs::directory_iterator(trial_dirs)) {
    std::istringstream log(Slurp(e.path() / "stderr.log"));
    for (std::string line; std::getline(log, line);) {
      if (line.rfind("ladder-stage:", 0) == 0) out += line + "\n";
    }
  }
  return out;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Four 2-node srun trials of 2 ranks per node, two at a time on the 4 nodes, each checking the dataset unpacked
// on its node: each node unpacks the archive once (one read of it), every other rank there reuses the copy.
TEST_F(SlurmTest, ATwoThousandFileArchiveIsUnpackedOncePerNode) {
  MakeDataset(dir_ / "shared" / "dataset");
  auto tar = testing::RunCommand({"/usr/bin/tar", "-cf", "data.tar", "dataset"}, dir_ / "shared");
  ASSERT_EQ(tar.exit_code, 0) << tar.err;
  ASSERT_NO_FATAL_FAILURE(SubmitLadderUp());
  ASSERT_EQ(WaitForNodes(cli_, dir_, 4).size(), 4u);
  const std::string local = slurm_.NodeLocalDir().string();
  std::ofstream(dir_ / "spec.yaml")
      << SrunSpec("extract", "{max_trials: 4, parallelism: 2}", "{nodes: 2, ranks_per_node: 2, launcher: srun}",
                  "test $(ls " + local + "/data/dataset | wc -l) = " + std::to_string(kFiles) + " && " +
                      Rank0Scores("1"))
      << "stage:\n  - {from: " << (dir_ / "shared" / "data.tar").string() << ", to: " << local << ", extract: true}\n";
  auto run = Ladder({"search", "start", "spec.yaml", "--wait"});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err << StageNotes(dir_ / "ladder-trials");
  auto trials = nlohmann::json::parse(Ladder({"--json", "trials", "1"}).out, nullptr, false);
  ASSERT_EQ(trials["trials"].size(), 4u) << trials.dump();
  std::set<std::string> used;
  for (const auto& t : trials["trials"]) {
    EXPECT_EQ(t["state"], "TRIAL_COMPLETED") << t.dump();
    for (const auto& p : t["placement"]) used.insert(p["node_id"].get<std::string>());
  }
  const std::string notes = StageNotes(dir_ / "ladder-trials");
  for (const auto& node : used) {
    const fs::path copy = slurm_.NodeLocalDir(std::stoi(node.substr(1))) / "data" / "dataset";
    for (int k = 0; k < kFiles; ++k) {
      ASSERT_EQ(Slurp(copy / FileName(k)), Slurp(dir_ / "shared" / "dataset" / FileName(k))) << node << " " << k;
    }
    EXPECT_EQ(Count(notes, "node " + node + ": " + local + "/data/: extracted from"), 1u) << node << "\n" << notes;
  }
  EXPECT_EQ(Count(notes, ": extracted from"), used.size()) << notes;
  EXPECT_EQ(Count(notes, ": reused (" + std::to_string(kFiles) + " files"), 4 * 4 - used.size()) << notes;
  slurm_.Run({"scancel", job_id_});
}

// One 4-node srun trial staging the 2,000 files with shard: node: the node of SLURM_NODEID i holds exactly the files
// k with k mod 4 = i, and nothing else; together they hold every file.
TEST_F(SlurmTest, WithShardNodeEachNodeOfATrialHoldsExactlyItsShare) {
  MakeDataset(dir_ / "shared" / "dataset");
  ASSERT_NO_FATAL_FAILURE(SubmitLadderUp());
  ASSERT_EQ(WaitForNodes(cli_, dir_, 4).size(), 4u);
  const std::string local = slurm_.NodeLocalDir().string();
  std::ofstream(dir_ / "spec.yaml")
      << SrunSpec("shards", "{max_trials: 1}", "{nodes: 4, launcher: srun}",
                  "echo $SLURM_NODEID > " + (dir_ / "shared").string() + "/node-id.$(hostname); " + Rank0Scores("1"))
      << "stage:\n  - {from: " << (dir_ / "shared" / "dataset").string() << ", to: " << local << ", shard: node}\n";
  auto run = Ladder({"search", "start", "spec.yaml", "--wait"});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err << StageNotes(dir_ / "ladder-trials");
  std::set<std::string> all;
  for (int i = 1; i <= 4; ++i) {
    const std::string node = "n" + std::to_string(i);
    std::string id_text;
    std::getline(std::ifstream(dir_ / "shared" / ("node-id." + node)), id_text);
    ASSERT_FALSE(id_text.empty()) << node << " ran no rank";
    const int id = std::stoi(id_text);
    std::set<std::string> want, have;
    for (int k = id; k < kFiles; k += 4) want.insert(FileName(k));
    for (const auto& e : fs::directory_iterator(slurm_.NodeLocalDir(i) / "dataset")) {
      have.insert(e.path().filename().string());
      EXPECT_EQ(Slurp(e.path()), Slurp(dir_ / "shared" / "dataset" / e.path().filename())) << node;
    }
    EXPECT_EQ(have, want) << node << " (SLURM_NODEID " << id << ")";
    all.insert(have.begin(), have.end());
  }
  EXPECT_EQ(all.size(), static_cast<size_t>(kFiles));
  const std::string notes = StageNotes(dir_ / "ladder-trials");
  EXPECT_EQ(Count(notes, "500 of 2000 files"), 4u) << notes;
  slurm_.Run({"scancel", job_id_});
}

}  // namespace
}  // namespace ladder
