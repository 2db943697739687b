#include "trainer/checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>

#include "trainer/checkpoint_epoch.h"
#include "trainer/train_loop.h"

namespace ladder::trainer {
namespace {

Dataset Blobs(int n, uint64_t seed) {
  Dataset d;
  d.rows = n;
  d.features = 6;
  d.classes = 3;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> g(0, 1);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < 6; ++j) d.x.push_back(g(rng) + static_cast<float>(i % 3) * (j % 2 ? 1.0f : -0.5f));
    d.y.push_back(i % 3);
  }
  return d;
}

std::vector<double> TrainLosses(TrainArgs a) {
  static const Dataset tr = Blobs(256, 1), va = Blobs(64, 2);
  std::FILE* f = std::tmpfile();
  MetricsWriter w(f);
  auto comm = comm::MakeSingleProcess();
  auto r = Train(a, tr, va, w, *comm);
  std::fclose(f);
  EXPECT_EQ(r.exit_code, 0);
  return r.train_losses;
}

TEST(Checkpoint, StoppedAndResumedRunFollowsTheUninterruptedLossCurve) {
  const auto path = std::filesystem::temp_directory_path() / ("ladder-ckpt-" + std::to_string(getpid()) + ".pt");
  std::filesystem::remove(path);
  TrainArgs a;
  a.optimizer = "adamw";  // optimizer state matters
  a.weight_decay = 0.01;
  a.lr = 0.01;
  a.dropout = 0.2;        // the RNG state matters
  a.micro_batches = 2;    // the noise-scale averages are restored too
  a.batch_size = 32;      // 8 steps per epoch: the resume crosses an epoch boundary
  a.width = 32;
  a.epochs = 3;
  a.log_every = 1;
  a.max_steps = 13;
  auto full = TrainLosses(a);
  ASSERT_EQ(full.size(), 13u);

  a.checkpoint = path.string();
  a.max_steps = 5;
  auto first = TrainLosses(a);
  ASSERT_TRUE(std::filesystem::exists(path));
  a.max_steps = 13;
  a.resume = true;
  auto second = TrainLosses(a);
  ASSERT_EQ(first.size() + second.size(), full.size());
  for (size_t i = 0; i < first.size(); ++i) EXPECT_NEAR(first[i], full[i], 1e-6) << "step " << i + 1;
  for (size_t i = 0; i < second.size(); ++i) {
    EXPECT_NEAR(second[i], full[first.size() + i], 1e-6) << "step " << first.size() + i + 1;
  }
  std::filesystem::remove(path);
}

TEST(Checkpoint, MismatchedModelIsAClearError) {
  const auto path = std::filesystem::temp_directory_path() / ("ladder-ckpt2-" + std::to_string(getpid()) + ".pt");
  torch::nn::Linear small(4, 4), big(8, 4);
  OptimizerOptions o;
  std::string err;
  auto opt_small = MakeOptimizer(o, small->parameters(), &err);
  auto opt_big = MakeOptimizer(o, big->parameters(), &err);
  NoiseScaleEstimator noise;
  ASSERT_TRUE(SaveCheckpoint(path.string(), small->parameters(), *opt_small, noise, {}, &err)) << err;
  auto params = big->parameters();
  TrainPosition pos;
  EXPECT_FALSE(LoadCheckpoint(path.string(), params, *opt_big, noise, &pos, &err));
  EXPECT_NE(err.find("has shape"), std::string::npos) << err;
  EXPECT_FALSE(LoadCheckpoint((path.string() + ".missing"), params, *opt_big, noise, &pos, &err));
  EXPECT_NE(err.find("cannot read checkpoint"), std::string::npos) << err;
  std::filesystem::remove(path);
}

// A save removes the temporary files that runs stopped mid-save left (they kept the worker from seeing an empty
// checkpoint directory, and a PBT exploit copied them along); other files stay.
TEST(Checkpoint, ASaveRemovesTemporaryFilesOfEarlierStoppedSaves) {
  const auto dir = std::filesystem::temp_directory_path() / ("ladder-ckpt3-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::FILE* f = std::fopen((dir / "model.pt.tmp.12345").c_str(), "w");
  ASSERT_TRUE(f);
  std::fputs("half a checkpoint", f);
  std::fclose(f);
  f = std::fopen((dir / "notes.txt").c_str(), "w");
  std::fclose(f);
  torch::nn::Linear m(4, 4);
  OptimizerOptions o;
  std::string err;
  auto opt = MakeOptimizer(o, m->parameters(), &err);
  NoiseScaleEstimator noise;
  ASSERT_TRUE(SaveCheckpoint((dir / "model.pt").string(), m->parameters(), *opt, noise, {}, &err)) << err;
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"model.pt", "notes.txt"}));
  std::filesystem::remove_all(dir);
}

// Two runs of one trial may be alive at once for a moment (the older one given away with its silent worker): the
// older run's save never replaces the newer run's checkpoint, and each save records its run's epoch.
TEST(Checkpoint, AnOlderRunsSaveNeverReplacesANewerRunsCheckpoint) {
  const auto dir = std::filesystem::temp_directory_path() / ("ladder-ckpt4-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "model.pt").string();
  torch::nn::Linear newer(4, 4), older(4, 4);
  OptimizerOptions o;
  std::string err;
  auto opt_newer = MakeOptimizer(o, newer->parameters(), &err);
  auto opt_older = MakeOptimizer(o, older->parameters(), &err);
  NoiseScaleEstimator noise;
  ASSERT_TRUE(SaveCheckpoint(path, newer->parameters(), *opt_newer, noise, {}, &err, 7)) << err;
  EXPECT_EQ(RecordedCheckpointEpoch(path, &err), 7);

  EXPECT_FALSE(SaveCheckpoint(path, older->parameters(), *opt_older, noise, {}, &err, 5));
  EXPECT_NE(err.find("checkpoint '" + path + "' was saved by a newer run of this trial (assignment epoch 7; this "
                     "run's is 5"),
            std::string::npos)
      << err;
  EXPECT_EQ(RecordedCheckpointEpoch(path, &err), 7);
  // What is on disk is still the newer run's, and no temporary file is left behind.
  torch::nn::Linear back(4, 4);
  auto opt_back = MakeOptimizer(o, back->parameters(), &err);
  auto params = back->parameters();
  TrainPosition pos;
  ASSERT_TRUE(LoadCheckpoint(path, params, *opt_back, noise, &pos, &err)) << err;
  EXPECT_TRUE(torch::equal(params[0], newer->parameters()[0]));
  EXPECT_FALSE(torch::equal(params[0], older->parameters()[0]));
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"model.pt", "model.pt.epoch"}));

  // The same run saves again, a later one replaces it and records its own epoch.
  EXPECT_TRUE(SaveCheckpoint(path, newer->parameters(), *opt_newer, noise, {}, &err, 7)) << err;
  EXPECT_TRUE(SaveCheckpoint(path, older->parameters(), *opt_older, noise, {}, &err, 8)) << err;
  EXPECT_EQ(RecordedCheckpointEpoch(path, &err), 8);
  std::filesystem::remove_all(dir);
}

TEST(Checkpoint, AnUnreadableRunEpochIsAnErrorNamingTheFileAndItsContent) {
  const auto dir = std::filesystem::temp_directory_path() / ("ladder-ckpt5-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "model.pt").string();
  std::string err;
  EXPECT_EQ(RecordedCheckpointEpoch(path, &err), 0) << "none recorded";
  std::FILE* f = std::fopen(CheckpointEpochPath(path).c_str(), "w");
  ASSERT_TRUE(f);
  std::fputs("seven\n", f);
  std::fclose(f);
  torch::nn::Linear m(4, 4);
  OptimizerOptions o;
  auto opt = MakeOptimizer(o, m->parameters(), &err);
  NoiseScaleEstimator noise;
  EXPECT_FALSE(SaveCheckpoint(path, m->parameters(), *opt, noise, {}, &err, 3));
  EXPECT_EQ(err, "cannot read the run epoch in '" + CheckpointEpochPath(path) + "': 'seven' is not an epoch");
  EXPECT_FALSE(std::filesystem::exists(path));
  // Not run by ladder (epoch 0): no epoch is read or written.
  EXPECT_TRUE(SaveCheckpoint(path, m->parameters(), *opt, noise, {}, &err, 0)) << err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ladder::trainer
