#include "trainer/curvature.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace ladder::trainer {
namespace {

// A small classification problem and an MLP with few enough parameters for an explicit Hessian.
struct Fixture {
  Dataset meta;
  std::shared_ptr<Network> net;
  torch::Tensor x, y;
  LossSpec spec;
  Fixture() {
    meta.rows = 64;
    meta.features = 3;
    meta.classes = 3;
    torch::manual_seed(7);
    ModelOptions o;
    o.width = 4;
    o.depth = 1;
    std::string error;
    net = MakeNetwork(o, meta, &error);
    x = torch::randn({64, 3});
    y = torch::randint(0, 3, {64, 1}, torch::kInt64);
  }
  std::vector<torch::Tensor> params() { return net->parameters(); }
  // The loss with the parameters moved by h·v (restored afterwards).
  double LossAt(const std::vector<torch::Tensor>& v, double h) {
    torch::NoGradGuard no_grad;
    auto ps = params();
    for (size_t i = 0; i < ps.size(); ++i) ps[i].add_(v[i] * h);
    const double l = TaskLoss(net->forward(x), y, spec).item<double>();
    for (size_t i = 0; i < ps.size(); ++i) ps[i].sub_(v[i] * h);
    return l;
  }
};

TEST(CurvatureTest, AlongGradientMatchesTheSecondDifferenceOfTheLoss) {
  Fixture f;
  auto c = MeasureCurvature(*f.net, f.params(), f.x, f.y, f.spec, 0);
  ASSERT_TRUE(c.has_value());
  // The unit gradient direction, computed independently.
  auto ps = f.params();
  auto g = torch::autograd::grad({TaskLoss(f.net->forward(f.x), f.y, f.spec)}, ps);
  double norm = 0;
  for (auto& t : g) norm += t.pow(2).sum().item<double>();
  EXPECT_NEAR(c->grad_sq, norm, 1e-6 * norm);
  std::vector<torch::Tensor> u;
  for (auto& t : g) u.push_back((t / std::sqrt(norm)).to(torch::kFloat32));
  const double h = 1e-2;
  const double second = (f.LossAt(u, h) - 2 * f.LossAt(u, 0) + f.LossAt(u, -h)) / (h * h);
  EXPECT_NEAR(c->along_gradient, second, 0.02 * std::abs(second) + 1e-3);
  EXPECT_EQ(c->sharpness, 0.0) << "no power iterations asked for";
}

TEST(CurvatureTest, SharpnessIsTheLargestHessianEigenvalue) {
  Fixture f;
  auto c = MeasureCurvature(*f.net, f.params(), f.x, f.y, f.spec, 30);
  ASSERT_TRUE(c.has_value());
  // The explicit Hessian, one row per parameter, from the gradient's own graph.
  auto ps = f.params();
  auto grads = torch::autograd::grad({TaskLoss(f.net->forward(f.x), f.y, f.spec)}, ps, {}, true, true);
  auto flat = torch::cat([&] {
    std::vector<torch::Tensor> v;
    for (auto& t : grads) v.push_back(t.reshape({-1}));
    return v;
  }());
  const int64_t n = flat.size(0);
  auto hess = torch::zeros({n, n}, torch::kFloat64);
  for (int64_t i = 0; i < n; ++i) {
    auto row = torch::autograd::grad({flat[i]}, ps, {}, true, false, true);
    std::vector<torch::Tensor> parts;
    for (size_t k = 0; k < row.size(); ++k) {
      parts.push_back(row[k].defined() ? row[k].reshape({-1}) : torch::zeros({ps[k].numel()}));
    }
    hess[i] = torch::cat(parts).to(torch::kFloat64);
  }
  hess = (hess + hess.t()) / 2;
  auto eig = torch::linalg::eigvalsh(hess, "L");
  const double top = std::max(eig.max().item<double>(), -eig.min().item<double>());
  EXPECT_NEAR(std::abs(c->sharpness), top, 0.02 * top);
  // The curvature along any direction is at most the top eigenvalue.
  EXPECT_LE(c->along_gradient, top * 1.0001);
}

TEST(CurvatureTest, LeavesTheModuleModeAndParameterGradientsAlone) {
  Fixture f;
  f.net->train();
  auto ps = f.params();
  for (auto& p : ps) p.mutable_grad() = torch::full_like(p, 0.5);
  ASSERT_TRUE(MeasureCurvature(*f.net, ps, f.x, f.y, f.spec, 3).has_value());
  EXPECT_TRUE(f.net->is_training());
  for (auto& p : ps) EXPECT_TRUE(torch::equal(p.grad(), torch::full_like(p, 0.5)));
}

}  // namespace
}  // namespace ladder::trainer
