#include "trainer/train_loop.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <regex>
#include <string>
#include <vector>

namespace ladder::trainer {
namespace {

// Two well-separated Gaussian blobs in 4 dimensions.
Dataset Blobs(int n, uint64_t seed) {
  Dataset d;
  d.rows = n;
  d.features = 4;
  d.classes = 2;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> g(0, 1);
  for (int i = 0; i < n; ++i) {
    int label = i % 2;
    for (int j = 0; j < 4; ++j) d.x.push_back(g(rng) + (label ? 3.0f : -3.0f));
    d.y.push_back(label);
  }
  return d;
}

std::string RunCaptured(const TrainArgs& a, const Dataset& tr, const Dataset& va, TrainResult* r) {
  std::FILE* f = std::tmpfile();
  MetricsWriter w(f);
  auto comm = comm::MakeSingleProcess();
  *r = Train(a, tr, va, w, *comm);
  std::rewind(f);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  std::fclose(f);
  return out;
}

TEST(TrainLoop, LearnsASeparableProblemAndPrintsMetricsLines) {
  auto tr = Blobs(400, 1), va = Blobs(100, 2);
  TrainArgs a;
  a.epochs = 3;
  a.lr = 0.05;
  a.width = 16;
  a.batch_size = 32;
  TrainResult r;
  auto out = RunCaptured(a, tr, va, &r);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_GE(r.final_val_accuracy, 0.98);
  // Every line is a JSON object with an integer step; epoch lines carry the validation metrics.
  std::regex line(R"(^\{"step": \d+(, "[a-z_]+": (-?[0-9.e+-]+|null))+\}$)");
  int epoch_lines = 0, lines = 0;
  size_t start = 0;
  while (start < out.size()) {
    size_t nl = out.find('\n', start);
    std::string l = out.substr(start, nl - start);
    start = nl + 1;
    ++lines;
    EXPECT_TRUE(std::regex_match(l, line)) << l;
    epoch_lines += l.find("\"val_accuracy\"") != std::string::npos;
  }
  EXPECT_EQ(epoch_lines, 3);
  EXPECT_GT(lines, 3);
}

TEST(TrainLoop, SameSeedSameLosses) {
  auto tr = Blobs(200, 1), va = Blobs(50, 2);
  TrainArgs a;
  a.epochs = 2;
  a.log_every = 1;
  a.optimizer = "adam";
  a.lr = 0.01;
  TrainResult r1, r2, r3;
  RunCaptured(a, tr, va, &r1);
  RunCaptured(a, tr, va, &r2);
  EXPECT_EQ(r1.train_losses, r2.train_losses);
  a.seed = 1;
  RunCaptured(a, tr, va, &r3);
  EXPECT_NE(r1.train_losses, r3.train_losses);
}

TEST(TrainLoop, PhaseTimesAccountForEveryStep) {
  auto tr = Blobs(200, 1), va = Blobs(50, 2);
  TrainArgs a;
  a.epochs = 2;
  a.batch_size = 20;
  a.phase_times = true;
  TrainResult r;
  testing::internal::CaptureStderr();
  RunCaptured(a, tr, va, &r);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(r.exit_code, 0);
  // 2 epochs x 200 rows / 20 per step = 20 steps; every phase is named with a non-negative time.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(err, m, std::regex(R"(rank 0 phase times over (\d+) steps \(ms per step\):(.*); step ([0-9.]+); eval ([0-9.]+) ms)")))
      << err;
  EXPECT_EQ(m[1].str(), "20");
  for (const char* phase : {"data", "forward", "backward", "allreduce_wait", "noise_scale", "optimizer", "rest"}) {
    EXPECT_TRUE(std::regex_search(m[2].str(), std::regex(std::string(" ") + phase + " [0-9.]+"))) << phase << ": " << err;
  }
  EXPECT_GT(std::stod(m[3].str()), 0.0);
  // Without the flag nothing is printed.
  a.phase_times = false;
  testing::internal::CaptureStderr();
  RunCaptured(a, tr, va, &r);
  EXPECT_EQ(testing::internal::GetCapturedStderr().find("phase times"), std::string::npos);
}

TEST(TrainLoop, DivergenceExitsWithCode3) {
  auto tr = Blobs(200, 1), va = Blobs(50, 2);
  TrainArgs a;
  a.lr = 1e30;
  a.momentum = 0;
  a.epochs = 5;
  TrainResult r;
  auto out = RunCaptured(a, tr, va, &r);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(out.find("null"), std::string::npos) << "non-finite values are written as null";
}

TEST(TrainLoop, CurvatureIsMeasuredOnItsCadenceWithoutChangingTraining) {
  auto tr = Blobs(200, 1), va = Blobs(50, 2);
  TrainArgs a;
  a.epochs = 2;
  a.batch_size = 20;  // 20 steps
  a.log_every = 1;
  TrainResult plain, measured;
  const auto out_plain = RunCaptured(a, tr, va, &plain);
  a.curvature_every = 5;
  const auto out = RunCaptured(a, tr, va, &measured);
  EXPECT_EQ(plain.train_losses, measured.train_losses) << "measuring must not move the parameters";
  std::regex line(R"(\{"step": (\d+), "grad_curvature": ([0-9.e+-]+), "sharpness": ([0-9.e+-]+)\})");
  std::vector<int> steps;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), line); it != std::sregex_iterator(); ++it) {
    steps.push_back(std::stoi((*it)[1].str()));
    EXPECT_GT(std::stod((*it)[3].str()), 0.0) << (*it)[0].str();
  }
  EXPECT_EQ(steps, (std::vector<int>{0, 5, 10, 15}));
  EXPECT_EQ(out_plain.find("grad_curvature"), std::string::npos);
}

TEST(TrainLoop, EvalEveryAddsValidationLinesBetweenEpochEnds) {
  auto tr = Blobs(200, 1), va = Blobs(50, 2);
  TrainArgs a;
  a.epochs = 2;
  a.batch_size = 20;  // 10 steps per epoch
  a.eval_every = 4;   // steps 4, 8, (10: epoch end), 12, 16, (20: the end)
  TrainResult r;
  const auto out = RunCaptured(a, tr, va, &r);
  std::regex line(R"(\{"step": (\d+), "epoch": ([0-9.]+),[^\n]*"val_loss")");
  std::vector<std::pair<int, double>> evals;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), line); it != std::sregex_iterator(); ++it) {
    evals.emplace_back(std::stoi((*it)[1].str()), std::stod((*it)[2].str()));
  }
  ASSERT_EQ(evals.size(), 6u) << out;
  const std::vector<int> steps = {4, 8, 10, 12, 16, 20};
  const std::vector<double> epochs = {0.4, 0.8, 1, 1.2, 1.6, 2};
  for (size_t i = 0; i < evals.size(); ++i) {
    EXPECT_EQ(evals[i].first, steps[i]);
    EXPECT_NEAR(evals[i].second, epochs[i], 1e-9) << "at step " << steps[i];
  }
}

// --warmup-fraction scales the warmup with the run: a quarter of 24 steps (400 rows, whole batches of 32, 2 epochs)
// is 6, so the LR climbs by peak/6 a step to the peak at step 6; the same fraction of a run with half the steps
// (batch 64) warms up over 3.
TEST(TrainLoop, AWarmupFractionScalesWithTheRunsSteps) {
  auto tr = Blobs(400, 1), va = Blobs(100, 2);
  auto lrs = [&](int64_t batch) {
    TrainArgs a;
    a.epochs = 2, a.lr = 0.7, a.width = 8, a.batch_size = batch, a.log_every = 1, a.warmup_fraction = 0.25;
    TrainResult r;
    const std::string out = RunCaptured(a, tr, va, &r);
    EXPECT_EQ(r.exit_code, 0);
    std::vector<double> v;
    std::regex lr(R"re("lr": ([0-9.e+-]+))re");
    for (auto it = std::sregex_iterator(out.begin(), out.end(), lr); it != std::sregex_iterator(); ++it) {
      v.push_back(std::stod((*it)[1]));
    }
    return v;
  };
  const std::vector<double> small = lrs(32);
  ASSERT_GE(small.size(), 8u);
  EXPECT_NEAR(small[0], 0.7 / 6, 1e-8);
  EXPECT_NEAR(small[4], 0.7 * 5 / 6, 1e-8);
  EXPECT_NEAR(small[5], 0.7, 1e-8);
  const std::vector<double> large = lrs(64);
  ASSERT_GE(large.size(), 4u);
  EXPECT_NEAR(large[0], 0.7 / 3, 1e-8);
  EXPECT_NEAR(large[2], 0.7, 1e-8);
}

}  // namespace
}  // namespace ladder::trainer
