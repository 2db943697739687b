// The fused MLP step (trainer/fused_mlp.h) computes what autograd computes: the same loss and the same gradients,
// accumulated into .grad the same way, and it refuses what is not a plain MLP.
#include "trainer/fused_mlp.h"

#include <gtest/gtest.h>

#include "trainer/models.h"
#include "trainer/task.h"

namespace ladder::trainer {
namespace {

Dataset Meta(int64_t features, int64_t classes) {
  Dataset d;
  d.features = features;
  d.classes = classes;
  d.task = Task::kClassify;
  return d;
}

double MaxRelative(const torch::Tensor& a, const torch::Tensor& b) {
  return ((a - b).abs().max() / b.abs().max().clamp_min(1e-12)).item<double>();
}

struct Case {
  int64_t features, classes, width, depth, rows;
};

class FusedMlp : public ::testing::TestWithParam<Case> {};

TEST_P(FusedMlp, LossAndGradientsAreAutogradsAndAccumulate) {
  const Case c = GetParam();
  torch::manual_seed(5);
  ModelOptions o;
  o.width = static_cast<int>(c.width);
  o.depth = static_cast<int>(c.depth);
  std::string error;
  auto net = MakeNetwork(o, Meta(c.features, c.classes), &error);
  ASSERT_TRUE(net) << error;
  auto params = net->parameters();
  auto x = torch::randn({c.rows, c.features});
  auto y = torch::randint(c.classes, {c.rows}, torch::kInt64);
  const double scale = 0.5;  // a micro-batch's share times 1/ranks

  // Autograd, twice into the same .grad (accumulation), as the training loop's backward would.
  LossSpec spec;
  spec.task = Task::kClassify;
  for (auto& p : params) p.mutable_grad() = torch::Tensor();
  auto loss = TaskLoss(net->forward(x), y, spec);
  (loss * scale).backward();
  (TaskLoss(net->forward(x), y, spec) * scale).backward();
  std::vector<torch::Tensor> want;
  for (auto& p : params) want.push_back(p.grad().clone());

  for (auto& p : params) p.mutable_grad() = torch::Tensor();
  std::string why;
  auto fused = FusedMlpStep::Make(params, c.features, &why);
  ASSERT_TRUE(fused) << why;
  const double got_loss = fused->Step(x, y, scale);
  fused->Step(x, y, scale);
  EXPECT_NEAR(got_loss, loss.item<double>(), 1e-5 * std::max(1.0, std::abs(loss.item<double>())));
  ASSERT_EQ(params.size(), want.size());
  for (size_t i = 0; i < params.size(); ++i) {
    ASSERT_TRUE(params[i].grad().defined()) << "parameter " << i;
    EXPECT_LE(MaxRelative(params[i].grad(), want[i]), 1e-5) << "parameter " << i << " " << params[i].sizes();
  }
  // Without accumulate it writes over what .grad held (the training loop then zeroes nothing): one pass's
  // gradient, half of the two passes' above.
  for (auto& p : params) p.grad().fill_(123.0f);
  fused->Step(x, y, scale, /*accumulate=*/false);
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_LE(MaxRelative(params[i].grad() * 2, want[i]), 1e-5) << "parameter " << i << " overwritten";
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, FusedMlp,
                         ::testing::Values(Case{40, 7, 128, 2, 32}, Case{64, 10, 512, 2, 64}, Case{5, 3, 16, 0, 7},
                                           Case{12, 2, 33, 3, 1}),
                         [](const auto& info) {
                           const Case& c = info.param;
                           return std::to_string(c.features) + "_" + std::to_string(c.width) + "x" +
                                  std::to_string(c.depth) + "_" + std::to_string(c.classes) + "_rows" +
                                  std::to_string(c.rows);
                         });

TEST(FusedMlpRefuses, WhatIsNotALinearChainOfFp32CpuParameters) {
  std::string why;
  auto w = torch::zeros({8, 4}), b = torch::zeros({8});
  EXPECT_FALSE(FusedMlpStep::Make({w}, 4, &why));
  EXPECT_FALSE(FusedMlpStep::Make({w, b}, 5, &why));  // 5 inputs, the weight takes 4
  EXPECT_NE(why.find("5 inputs"), std::string::npos) << why;
  EXPECT_FALSE(FusedMlpStep::Make({w.to(torch::kFloat64), b.to(torch::kFloat64)}, 4, &why));
  EXPECT_FALSE(FusedMlpStep::Make({torch::zeros({2, 8, 4}), b}, 4, &why));
  EXPECT_TRUE(FusedMlpStep::Make({w, b, torch::zeros({3, 8}), torch::zeros({3})}, 4, &why)) << why;
}

TEST(FusedMlpRefuses, ALabelOutsideTheClasses) {
  std::string why;
  auto fused = FusedMlpStep::Make({torch::zeros({3, 4}), torch::zeros({3})}, 4, &why);
  ASSERT_TRUE(fused) << why;
  EXPECT_THROW(fused->Step(torch::zeros({2, 4}), torch::tensor({0, 3}, torch::kInt64), 1.0), c10::Error);
}

}  // namespace
}  // namespace ladder::trainer
