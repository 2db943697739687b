#include "trainer/optim.h"

#include <gtest/gtest.h>

#include "trainer/schedule.h"

namespace ladder::trainer {
namespace {

// Runs `steps` updates of ours and of LibTorch's optimizer on the same problem; returns the max difference.
template <typename TorchOpt, typename TorchOptions>
double CompareWithTorch(const OptimizerOptions& ours, TorchOptions theirs, int steps, double lr) {
  torch::manual_seed(0);
  torch::nn::Linear a(8, 4), b(8, 4);
  {
    torch::NoGradGuard g;
    for (size_t i = 0; i < a->parameters().size(); ++i) b->parameters()[i].copy_(a->parameters()[i]);
  }
  std::string err;
  auto mine = MakeOptimizer(ours, a->parameters(), &err);
  TorchOpt ref(b->parameters(), theirs);
  for (int s = 0; s < steps; ++s) {
    auto x = torch::randn({16, 8});
    mine->ZeroGrad();
    a->forward(x).pow(2).mean().backward();
    mine->Step(lr);
    ref.zero_grad();
    b->forward(x).pow(2).mean().backward();
    ref.step();
  }
  double diff = 0;
  for (size_t i = 0; i < a->parameters().size(); ++i) {
    diff = std::max(diff, (a->parameters()[i] - b->parameters()[i]).abs().max().item<double>());
  }
  return diff;
}

TEST(Optimizers, SgdAdamAdamWMatchLibTorchWithoutWeightDecay) {
  OptimizerOptions o;
  o.name = "sgd";
  EXPECT_LT((CompareWithTorch<torch::optim::SGD>(o, torch::optim::SGDOptions(0.1).momentum(0.9), 20, 0.1)), 1e-6);
  o.nesterov = true;
  EXPECT_LT((CompareWithTorch<torch::optim::SGD>(o, torch::optim::SGDOptions(0.1).momentum(0.9).nesterov(true), 20,
                                                 0.1)),
            1e-6);
  o = OptimizerOptions{};
  o.name = "adam";
  EXPECT_LT((CompareWithTorch<torch::optim::Adam>(o, torch::optim::AdamOptions(0.01), 20, 0.01)), 1e-6);
  o.name = "adamw";
  EXPECT_LT((CompareWithTorch<torch::optim::AdamW>(o, torch::optim::AdamWOptions(0.01).weight_decay(0), 20, 0.01)),
            1e-6);
}

// SGD with momentum and weight decay (its in-place loop over raw memory) against LibTorch's, on weights only (ours
// does not decay biases, LibTorch's does).
TEST(Optimizers, SgdMomentumWithWeightDecayMatchesLibTorchOnWeights) {
  for (bool nesterov : {false, true}) {
    torch::manual_seed(2);
    torch::nn::Linear a(torch::nn::LinearOptions(8, 4).bias(false)), b(torch::nn::LinearOptions(8, 4).bias(false));
    {
      torch::NoGradGuard g;
      b->weight.copy_(a->weight);
    }
    OptimizerOptions o;
    o.name = "sgd";
    o.momentum = 0.9;
    o.weight_decay = 0.01;
    o.nesterov = nesterov;
    std::string err;
    auto mine = MakeOptimizer(o, a->parameters(), &err);
    torch::optim::SGD ref(b->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9).weight_decay(0.01).nesterov(nesterov));
    for (int s = 0; s < 20; ++s) {
      auto x = torch::randn({16, 8});
      mine->ZeroGrad();
      a->forward(x).pow(2).mean().backward();
      mine->Step(0.1);
      ref.zero_grad();
      b->forward(x).pow(2).mean().backward();
      ref.step();
    }
    EXPECT_LT((a->weight - b->weight).abs().max().item<double>(), 1e-6) << "nesterov " << nesterov;
  }
}

TEST(Optimizers, WeightDecaySkipsBiases) {
  torch::nn::Linear lin(4, 4);
  OptimizerOptions o;
  o.name = "sgd";
  o.momentum = 0;
  o.weight_decay = 0.5;
  std::string err;
  auto opt = MakeOptimizer(o, lin->parameters(), &err);
  auto w0 = lin->weight.detach().clone(), b0 = lin->bias.detach().clone();
  for (auto& p : lin->parameters()) p.mutable_grad() = torch::zeros_like(p);
  opt->Step(0.1);
  EXPECT_TRUE(torch::allclose(lin->weight, w0 * (1 - 0.05)));
  EXPECT_TRUE(torch::equal(lin->bias, b0));
}

TEST(Optimizers, LayerwiseTrustRatios) {
  torch::manual_seed(1);
  std::string err;
  for (const std::string name : {"lars", "larc", "lamb"}) {
    torch::nn::Linear lin(16, 16);
    OptimizerOptions o;
    o.name = name;
    o.momentum = 0;
    o.trust_coefficient = 0.01;
    auto opt = MakeOptimizer(o, lin->parameters(), &err);
    ASSERT_TRUE(opt) << err;
    auto w0 = lin->weight.detach().clone();
    // A huge gradient: the layer-wise step stays bounded by the weight norm.
    lin->weight.mutable_grad() = torch::full_like(lin->weight, 1e6);
    lin->bias.mutable_grad() = torch::zeros_like(lin->bias);
    const double lr = name == "lamb" ? 0.1 : 1.0;
    opt->Step(lr);
    double step = (lin->weight - w0).norm().item<double>(), wn = w0.norm().item<double>();
    if (name == "lamb") {
      EXPECT_NEAR(step, lr * wn, 1e-3 * wn) << name;  // ‖Δw‖ = lr·‖w‖
    } else {
      EXPECT_NEAR(step, lr * 0.01 * wn, 1e-4 * wn) << name;  // ‖Δw‖ = lr·η·‖w‖ (clip mode: trust/lr < 1)
    }
  }
  OptimizerOptions bad;
  bad.name = "larc";
  bad.larc_mode = "sideways";
  torch::nn::Linear lin(2, 2);
  EXPECT_FALSE(MakeOptimizer(bad, lin->parameters(), &err));
  EXPECT_NE(err.find("clip or scale"), std::string::npos);
  bad.name = "rmsprop";
  EXPECT_FALSE(MakeOptimizer(bad, lin->parameters(), &err));
}

TEST(Optimizers, LarcClipNeverExceedsTheGlobalRate) {
  torch::nn::Linear lin(16, 16);
  OptimizerOptions o;
  o.name = "larc";
  o.momentum = 0;
  o.trust_coefficient = 100.0;  // trust/lr ≫ 1: clipped to plain SGD
  std::string err;
  auto opt = MakeOptimizer(o, lin->parameters(), &err);
  auto w0 = lin->weight.detach().clone();
  lin->weight.mutable_grad() = torch::full_like(lin->weight, 1e-3);
  lin->bias.mutable_grad() = torch::zeros_like(lin->bias);
  opt->Step(0.5);
  EXPECT_TRUE(torch::allclose(lin->weight, w0 - 0.5 * 1e-3));
}

TEST(Optimizers, ClipGradNorm) {
  auto p = torch::zeros({4}, torch::requires_grad());
  p.mutable_grad() = torch::tensor({3.0f, 4.0f, 0.0f, 0.0f});
  EXPECT_NEAR(ClipGradNorm({p}, 1.0), 5.0, 1e-6);
  EXPECT_NEAR(p.grad().norm().item<double>(), 1.0, 1e-5);
}

TEST(Schedules, WarmupStepCosineWsdAndScaling) {
  ScheduleOptions o;
  o.warmup_steps = 4;
  EXPECT_DOUBLE_EQ(LearningRate(1.0, o, 0), 0.25);
  EXPECT_DOUBLE_EQ(LearningRate(1.0, o, 3), 1.0);
  EXPECT_DOUBLE_EQ(LearningRate(1.0, o, 100), 1.0);
  o.decay = "step";
  o.milestones = {10, 20};
  EXPECT_DOUBLE_EQ(LearningRate(1.0, o, 9), 1.0);
  EXPECT_NEAR(LearningRate(1.0, o, 10), 0.1, 1e-12);
  EXPECT_NEAR(LearningRate(1.0, o, 25), 0.01, 1e-12);
  o.decay = "cosine";
  o.total_steps = 104;
  EXPECT_NEAR(LearningRate(1.0, o, 4), 1.0, 1e-12);
  EXPECT_NEAR(LearningRate(1.0, o, 54), 0.5, 1e-12);
  EXPECT_NEAR(LearningRate(1.0, o, 104), 0.0, 1e-12);
  o.decay = "wsd";
  o.total_steps = 100;
  o.decay_fraction = 0.1;
  o.final_lr_fraction = 0.1;
  EXPECT_DOUBLE_EQ(LearningRate(1.0, o, 89), 1.0);
  EXPECT_NEAR(LearningRate(1.0, o, 99), 0.1, 1e-12);
  EXPECT_DOUBLE_EQ(ScaledPeakLr(0.1, 1024, 256, "linear"), 0.4);
  EXPECT_DOUBLE_EQ(ScaledPeakLr(0.1, 1024, 256, "sqrt"), 0.2);
  EXPECT_DOUBLE_EQ(ScaledPeakLr(0.1, 1024, 256, "none"), 0.1);
}

}  // namespace
}  // namespace ladder::trainer
