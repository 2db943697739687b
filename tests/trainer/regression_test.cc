// Regression as a task (task.h: --loss mse|l1|huber, val_r2 and val_mae), volumes (--input-shape C,D,H,W, the 3D
// cnn of resnet3d.h) and the CosmoFlow-shaped workload (cosmo:, cosmo_data.cc).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "trainer/data_sources.h"
#include "trainer/models.h"
#include "trainer/task.h"
#include "trainer/train_loop.h"

namespace ladder::trainer {
namespace {

// Outputs its input's first K features: a network whose predictions the test chooses.
class FirstK final : public Network {
 public:
  explicit FirstK(int64_t k) : k_(k) {}
  torch::Tensor forward(torch::Tensor x) override { return x.flatten(1).narrow(1, 0, k_); }

 private:
  int64_t k_;
};

TEST(Regression, NamedLossesAreMseL1AndHuber) {
  const auto z = torch::tensor({{0.0f, 1.0f}, {3.0f, -1.0f}});
  const auto t = torch::tensor({{0.5f, 1.0f}, {0.0f, -1.0f}});  // errors 0.5, 0, 3, 0
  LossSpec spec;
  spec.task = Task::kRegress;
  EXPECT_NEAR(TaskLoss(z, t, spec).item<double>(), (0.25 + 9) / 4, 1e-6);
  spec.regression_loss = "l1";
  EXPECT_NEAR(TaskLoss(z, t, spec).item<double>(), 3.5 / 4, 1e-6);
  spec.regression_loss = "huber";  // 0.5·e² below 1, e − 0.5 above
  EXPECT_NEAR(TaskLoss(z, t, spec).item<double>(), (0.125 + 2.5) / 4, 1e-6);
}

TEST(Regression, EvaluateReportsR2AndMaeOverEveryChunk) {
  // Predictions x[:, :2], targets y: R² per target by hand, then their mean; MAE over all values.
  const int64_t n = 5000;  // more than one evaluation chunk of rows (4M elements / 1000 per row)
  auto x = torch::zeros({n, 1000});
  auto y = torch::zeros({n, 2});
  double ss_res[2] = {0, 0}, sum[2] = {0, 0}, sq[2] = {0, 0}, abs_err = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double t0 = static_cast<double>(i % 7), t1 = static_cast<double>(i % 3) - 1;
    const double p0 = t0 + ((i % 2) ? 0.5 : -0.5), p1 = 0.2;  // target 1 predicted by a constant
    x[i][0] = p0, x[i][1] = p1, y[i][0] = t0, y[i][1] = t1;
    const float f0 = static_cast<float>(p0), f1 = static_cast<float>(p1);
    ss_res[0] += std::pow(f0 - t0, 2), ss_res[1] += std::pow(f1 - t1, 2);
    abs_err += std::fabs(f0 - t0) + std::fabs(f1 - t1);
    sum[0] += t0, sum[1] += t1, sq[0] += t0 * t0, sq[1] += t1 * t1;
  }
  double r2 = 0;
  for (int k = 0; k < 2; ++k) r2 += 0.5 * (1 - ss_res[k] / (sq[k] - sum[k] * sum[k] / n));
  FirstK net(2);
  LossSpec spec;
  spec.task = Task::kRegress;
  const auto m = Evaluate(net, x, y, spec, 2, EvalOptions{});
  EXPECT_NEAR(m.at("r2"), r2, 1e-9);
  EXPECT_NEAR(m.at("mae"), abs_err / (2.0 * n), 1e-9);
  EXPECT_NEAR(m.at("loss"), (ss_res[0] + ss_res[1]) / (2.0 * n), 1e-6);
  EXPECT_EQ(m.count("accuracy"), 0u);
}

TEST(Regression, CnnTakesVolumesAndMlpAndCnnRegress) {
  std::string err;
  ModelOptions o;
  o.name = "cnn";
  o.width = 4;
  o.depth = 2;
  Dataset meta;
  meta.task = Task::kRegress;
  meta.shape = {2, 6, 8, 4};
  meta.features = 2 * 6 * 8 * 4;
  meta.classes = 3;
  auto cnn = MakeNetwork(o, meta, &err);
  ASSERT_TRUE(cnn) << err;
  EXPECT_EQ(cnn->forward(torch::randn({5, 2, 6, 8, 4})).sizes(), (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(DefaultModelFor(meta), "cnn");
  o.name = "mlp";
  auto mlp = MakeNetwork(o, meta, &err);
  ASSERT_TRUE(mlp) << err;
  EXPECT_EQ(mlp->forward(torch::randn({5, 2, 6, 8, 4})).sizes(), (std::vector<int64_t>{5, 3}));
  o.name = "unet";
  EXPECT_FALSE(MakeNetwork(o, meta, &err));
  EXPECT_NE(err.find("task regress"), std::string::npos) << err;
}

TEST(Regression, VolumesAreStandardizedPerChannel) {
  Dataset d;
  d.rows = 4;
  d.features = 2 * 8;
  d.classes = 2;
  std::string err;
  for (int r = 0; r < 4; ++r) {
    for (int j = 0; j < 16; ++j) {
      d.x.push_back(j < 8 ? 100.0f + static_cast<float>(r + j) : 0.01f * static_cast<float>(r * j));
    }
    d.y.push_back(r % 2);
  }
  ASSERT_TRUE(SetSampleShape("2,2,2,2", &d, &err)) << err;
  Dataset train = d, val = d;
  Standardize(&train, &val);
  for (int c = 0; c < 2; ++c) {  // each channel: mean 0, sd 1 over the rows and voxels
    double s = 0, s2 = 0;
    for (int r = 0; r < 4; ++r) {
      for (int j = 0; j < 8; ++j) {
        const double v = train.x[static_cast<size_t>(r * 16 + c * 8 + j)];
        s += v, s2 += v * v;
      }
    }
    EXPECT_NEAR(s / 32, 0, 1e-5) << c;
    EXPECT_NEAR(s2 / 32, 1, 1e-4) << c;
  }
}

TEST(Regression, CosmoVolumesAreDeterministicAndCarryTheirParameters) {
  const Dataset a = MakeCosmo(64, 8, 5), b = MakeCosmo(64, 8, 5);
  EXPECT_EQ(a.x, b.x);
  EXPECT_EQ(a.targets, b.targets);
  EXPECT_EQ(a.task, Task::kRegress);
  EXPECT_EQ(a.SampleShape(), (std::vector<int64_t>{1, 8, 8, 8}));
  ASSERT_EQ(a.targets.size(), 128u);
  // The amplitude sets the contrast: the log-density's variance grows with log2(A); the slope how much of it is at
  // small scales: the steeper, the smaller the neighbours' squared difference against the variance.
  std::vector<double> amp, var, slope, rough;
  for (int r = 0; r < 64; ++r) {
    double s = 0, s2 = 0, d2 = 0;
    for (int v = 0; v < 512; ++v) {
      const double l = std::log(a.x[static_cast<size_t>(r * 512 + v)]);
      s += l, s2 += l * l;
      if (v + 1 < 512) d2 += std::pow(std::log(a.x[static_cast<size_t>(r * 512 + v + 1)]) - l, 2);
    }
    amp.push_back(a.targets[static_cast<size_t>(2 * r)]);
    slope.push_back(a.targets[static_cast<size_t>(2 * r + 1)]);
    var.push_back(s2 / 512 - std::pow(s / 512, 2));
    rough.push_back(d2 / 512 / var.back());
    EXPECT_GE(amp.back(), -1.0);
    EXPECT_LE(amp.back(), 1.0);
    EXPECT_GE(a.targets[static_cast<size_t>(2 * r + 1)], -1.0);
    EXPECT_LE(a.targets[static_cast<size_t>(2 * r + 1)], 1.0);
  }
  auto kendall_tau = [](const std::vector<double>& p, const std::vector<double>& q) {
    int concordant = 0, pairs = 0;
    for (size_t i = 0; i < p.size(); ++i) {
      for (size_t j = i + 1; j < p.size(); ++j, ++pairs) concordant += ((p[i] - p[j]) * (q[i] - q[j]) > 0);
    }
    return 2.0 * concordant / pairs - 1;
  };
  EXPECT_GT(kendall_tau(amp, var), 0.45);  // 0.64 on these volumes
  EXPECT_LT(kendall_tau(slope, rough), -0.25);  // -0.40
}

TEST(Regression, TheCosmoWorkloadTrainsA3dCnnWithR2AndMaeReported) {
  Dataset all;
  std::string err;
  ASSERT_TRUE(LoadData("cosmo:320:8", &all, &err)) << err;
  Dataset train, val;
  SplitDataset(all, 0.2, 5, &train, &val);
  Standardize(&train, &val);
  TrainArgs a;  // the default model for volumes: the 3D cnn
  a.width = 8;
  a.depth = 2;
  a.optimizer = "adam";
  a.lr = 0.01;
  a.batch_size = 16;
  a.epochs = 10;
  std::FILE* f = std::tmpfile();
  MetricsWriter w(f);
  auto comm = comm::MakeSingleProcess();
  const auto result = Train(a, train, val, w, *comm);
  std::rewind(f);
  std::string metrics;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) metrics.append(buf, n);
  std::fclose(f);
  ASSERT_EQ(result.exit_code, 0) << metrics;
  EXPECT_EQ(metrics.find("val_accuracy"), std::string::npos) << metrics;
  const auto r2 = metrics.rfind("\"val_r2\": "), mae = metrics.rfind("\"val_mae\": ");
  ASSERT_NE(r2, std::string::npos) << metrics;
  ASSERT_NE(mae, std::string::npos) << metrics;
  // Predicting the targets' mean scores R² 0 and MAE 0.5 (uniform on [−1, 1]); the net reads the volumes.
  EXPECT_GT(std::stod(metrics.substr(r2 + 10)), 0.25) << metrics;  // with GroupNorm in the 3D cnn: 0.13 at epoch 6
  EXPECT_LT(std::stod(metrics.substr(mae + 11)), 0.4) << metrics;
}

}  // namespace
}  // namespace ladder::trainer
