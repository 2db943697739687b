#include "trainer/grad_reducer.h"

#include <gtest/gtest.h>

namespace ladder::trainer {
namespace {

// Pretends to be `size` ranks that all computed the same gradients, plus `offset` added by "the others".
class FakeComm : public comm::Communicator {
 public:
  explicit FakeComm(int size, float offset = 0) : size_(size), offset_(offset) {}
  std::string backend() const override { return "fake"; }
  int rank() const override { return 0; }
  int size() const override { return size_; }
  int local_rank() const override { return 0; }
  std::unique_ptr<comm::Work> AllreduceSum(torch::Tensor& t) override {
    ++allreduces;
    bytes.push_back(t.numel() * 4);
    t.mul_(size_).add_(offset_);
    struct Done : comm::Work {
      void Wait() override {}
    };
    return std::make_unique<Done>();
  }
  void Broadcast(torch::Tensor&, int) override {}
  void Barrier() override {}
  int allreduces = 0;
  std::vector<int64_t> bytes;

 private:
  int size_;
  float offset_;
};

TEST(GradientReducer, BucketsRespectTheCapAndAverageGradients) {
  torch::manual_seed(0);
  torch::nn::Sequential net(torch::nn::Linear(100, 100), torch::nn::ReLU(), torch::nn::Linear(100, 10));
  // Parameters: 100x100 (40000 B), 100 (400 B), 10x100 (4000 B), 10 (40 B). A 5000-byte cap packs the last
  // three together (reverse order) and puts the big matrix alone.
  FakeComm comm(4, /*offset=*/2.0f);
  GradientReducer reducer(net->parameters(), comm, 5000, 5000);
  EXPECT_EQ(reducer.bucket_count(), 2u);
  auto x = torch::randn({8, 100});
  auto loss = net->forward(x).pow(2).mean();
  // Reference gradients without the reducer.
  auto ref = torch::autograd::grad({loss}, net->parameters(), {}, /*retain_graph=*/true);
  reducer.ZeroGrad();
  reducer.Prepare();
  (loss / 4).backward();  // the trainer scales each rank's loss by 1/ranks
  // Both buckets were launched from the accumulator hooks during backward, none waits for Finish.
  EXPECT_EQ(comm.allreduces, 2);
  reducer.Finish();
  EXPECT_EQ(comm.allreduces, 2);
  auto params = net->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    // Each rank contributes g / 4; "4 ranks" give g, and the others' extra 2 is added as it arrives.
    EXPECT_TRUE(torch::allclose(params[i].grad(), ref[i] + 2.0, 1e-5, 1e-6)) << "parameter " << i;
  }
}

TEST(GradientReducer, GradientsAreBucketViewsAccumulatedInPlace) {
  torch::manual_seed(1);
  torch::nn::Sequential net(torch::nn::Linear(20, 30), torch::nn::ReLU(), torch::nn::Linear(30, 5));
  FakeComm comm(1);
  GradientReducer reducer(net->parameters(), comm);
  auto params = net->parameters();
  std::vector<void*> where;
  for (auto& p : params) where.push_back(p.grad().data_ptr());
  auto x1 = torch::randn({6, 20}), x2 = torch::randn({6, 20});
  auto loss = [&](const torch::Tensor& x) { return net->forward(x).pow(2).mean(); };
  auto ref = torch::autograd::grad({loss(x1) + loss(x2)}, params);
  // Two micro-batches: the first only accumulates, the allreduces start during the second.
  reducer.ZeroGrad();
  reducer.Prepare();
  reducer.SetFinalMicroBatch(false);
  loss(x1).backward();
  EXPECT_EQ(comm.allreduces, 0);
  reducer.SetFinalMicroBatch(true);
  loss(x2).backward();
  EXPECT_EQ(comm.allreduces, 1);
  reducer.Finish();
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(params[i].grad().data_ptr(), where[i]) << "autograd wrote parameter " << i << "'s gradient elsewhere";
    EXPECT_TRUE(torch::allclose(params[i].grad(), ref[i], 1e-5, 1e-6)) << "parameter " << i;
  }
  // The next step starts from zero, in the same memory.
  reducer.ZeroGrad();
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(params[i].grad().data_ptr(), where[i]);
    EXPECT_EQ(params[i].grad().abs().sum().item<float>(), 0.0f);
  }
}

TEST(GradientReducer, UnusedParametersContributeZerosAndFinishLaunchesTheirBucket) {
  torch::manual_seed(2);
  torch::nn::Linear used(4, 4), unused(4, 4);
  std::vector<torch::Tensor> params = unused->parameters();
  for (auto& p : used->parameters()) params.push_back(p);
  FakeComm comm(1);
  // A cap that puts each module's parameters (64 + 16 bytes) in a bucket of their own.
  GradientReducer reducer(params, comm, 80, 80);
  ASSERT_EQ(reducer.bucket_count(), 2u);
  reducer.ZeroGrad();
  reducer.Prepare();
  used->forward(torch::randn({3, 4})).sum().backward();
  EXPECT_EQ(comm.allreduces, 1);
  reducer.Finish();
  EXPECT_EQ(comm.allreduces, 2);
  EXPECT_EQ(unused->weight.grad().abs().sum().item<float>(), 0.0f);
  EXPECT_GT(used->weight.grad().abs().sum().item<float>(), 0.0f);
}

TEST(GradientReducer, OneBucketWhenTheCapIsLarge) {
  torch::nn::Linear lin(10, 10);
  FakeComm comm(2);
  GradientReducer reducer(lin->parameters(), comm);
  EXPECT_EQ(reducer.bucket_count(), 1u);
}

TEST(GradientReducer, FirstBucketIsSmallSoCommunicationStartsEarly) {
  // 3.5 MiB of weights: with DDP's defaults (first bucket closes at 1 MiB, others at 25 MiB) there are two.
  torch::nn::Sequential net(torch::nn::Linear(768, 512), torch::nn::Linear(512, 512), torch::nn::Linear(512, 512));
  FakeComm comm(2);
  GradientReducer reducer(net->parameters(), comm);
  EXPECT_EQ(reducer.bucket_count(), 2u);
}

}  // namespace
}  // namespace ladder::trainer
