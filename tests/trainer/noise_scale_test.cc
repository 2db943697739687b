#include "trainer/noise_scale.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>
#include <random>

#include "trainer/train_loop.h"

namespace ladder::trainer {
namespace {

// Per-example gradients g = G + ε with ε ~ N(0, σ²I) in d dimensions: tr(Σ) = dσ², |G|² known, so
// B_simple = dσ²/|G|². Feed the estimator what a trainer would see and check it recovers that.
TEST(NoiseScale, RecoversTheTrueNoiseScaleFromSmallAndBigBatches) {
  const int d = 50, b_small = 8, micro = 4, b_big = b_small * micro;
  const double sigma = 2.0;
  std::vector<double> G(d, 0.3);  // |G|² = 50 · 0.09 = 4.5; tr(Σ) = 200 → B_simple ≈ 44.4
  std::mt19937_64 rng(7);
  std::normal_distribution<double> n01(0, 1);
  NoiseScaleEstimator est(0.99);
  for (int step = 0; step < 3000; ++step) {
    std::vector<double> big(d, 0);
    double small_sq = 0;
    for (int m = 0; m < micro; ++m) {
      std::vector<double> g(d, 0);
      for (int i = 0; i < b_small; ++i) {
        for (int k = 0; k < d; ++k) g[k] += (G[k] + sigma * n01(rng)) / b_small;
      }
      for (int k = 0; k < d; ++k) {
        small_sq += g[k] * g[k] / micro;
        big[k] += g[k] / micro;
      }
    }
    double big_sq = 0;
    for (double v : big) big_sq += v * v;
    est.Add(small_sq, b_small, big_sq, b_big);
  }
  ASSERT_TRUE(est.BSimple());
  EXPECT_NEAR(*est.BSimple(), d * sigma * sigma / 4.5, 0.15 * d * sigma * sigma / 4.5);
  EXPECT_NEAR(est.trace_sigma(), d * sigma * sigma, 0.1 * d * sigma * sigma);
}

TEST(NoiseScale, NoEstimateWithoutTwoBatchSizes) {
  NoiseScaleEstimator est;
  est.Add(1.0, 32, 1.0, 32);
  EXPECT_FALSE(est.BSimple());
}

Dataset Blobs(int n) {
  Dataset d;
  d.rows = n;
  d.features = 4;
  d.classes = 2;
  std::mt19937_64 rng(3);
  std::normal_distribution<float> g(0, 1);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < 4; ++j) d.x.push_back(g(rng) + (i % 2 ? 1.0f : -1.0f));
    d.y.push_back(i % 2);
  }
  return d;
}

std::vector<float> TrainAndSave(TrainArgs a, const std::string& path, std::string* out) {
  auto tr = Blobs(256), va = Blobs(64);
  a.save_params = path;
  std::FILE* f = std::tmpfile();
  MetricsWriter w(f);
  auto comm = comm::MakeSingleProcess();
  EXPECT_EQ(Train(a, tr, va, w, *comm).exit_code, 0);
  std::rewind(f);
  char buf[1 << 16];
  size_t n = std::fread(buf, 1, sizeof buf, f);
  out->assign(buf, n);
  std::fclose(f);
  std::ifstream in(path, std::ios::binary);
  std::vector<float> v;
  float x;
  while (in.read(reinterpret_cast<char*>(&x), sizeof x)) v.push_back(x);
  return v;
}

TEST(MicroBatches, AccumulationGivesTheSameStepAsTheWholeBatchAndMeasuresTheNoiseScale) {
  TrainArgs a;
  a.batch_size = 64;
  a.epochs = 2;
  a.width = 16;
  a.lr = 0.1;
  a.log_every = 2;
  a.noise_scale_every = 1;
  auto dir = std::filesystem::temp_directory_path();
  std::string out1, out4;
  const auto path1 = dir / ("ladder-mb1-" + std::to_string(getpid()));
  const auto path4 = dir / ("ladder-mb4-" + std::to_string(getpid()));
  auto whole = TrainAndSave(a, path1.string(), &out1);
  a.micro_batches = 4;
  auto accumulated = TrainAndSave(a, path4.string(), &out4);
  std::error_code ec;  // the saved parameters were read back; nothing stays behind in $TMPDIR
  std::filesystem::remove(path1, ec);
  std::filesystem::remove(path4, ec);
  ASSERT_EQ(whole.size(), accumulated.size());
  double diff = 0;
  for (size_t i = 0; i < whole.size(); ++i) diff = std::max(diff, static_cast<double>(std::fabs(whole[i] - accumulated[i])));
  EXPECT_LT(diff, 1e-5);
  EXPECT_EQ(out1.find("noise_scale"), std::string::npos) << "one batch size: no estimate";
  EXPECT_NE(out4.find("\"noise_scale\": "), std::string::npos) << out4;
}

}  // namespace
}  // namespace ladder::trainer
