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

TEST(GradientReducer, BucketsAreExactCapRangesAndAverageGradients) {
  torch::manual_seed(0);
  torch::nn::Sequential net(torch::nn::Linear(100, 100), torch::nn::ReLU(), torch::nn::Linear(100, 10));
  // Parameters: 100x100 (40000 B), 100 (400 B), 10x100 (4000 B), 10 (40 B): 44440 B in reverse order. With a
  // 1000-byte first bucket and a 10000-byte cap the buckets are 1000, 4 x 10000 and 3440 bytes: the first cuts
  // the 10x100 weight, the others the 100x100 one.
  FakeComm comm(4, /*offset=*/2.0f);
  GradientReducer reducer(net->parameters(), comm, 10000, 1000);
  EXPECT_EQ(reducer.bucket_bytes(), (std::vector<int64_t>{1000, 10000, 10000, 10000, 10000, 3440}));
  auto x = torch::randn({8, 100});
  auto loss = net->forward(x).pow(2).mean();
  // Reference gradients without the reducer.
  auto ref = torch::autograd::grad({loss}, net->parameters(), {}, /*retain_graph=*/true);
  reducer.ZeroGrad();
  reducer.Prepare();
  (loss / 4).backward();  // the trainer scales each rank's loss by 1/ranks
  // Every bucket was launched from the accumulator hooks during backward, none waits for Finish, and each
  // element was reduced exactly once.
  EXPECT_EQ(comm.allreduces, 6);
  reducer.Finish();
  EXPECT_EQ(comm.allreduces, 6);
  EXPECT_EQ(comm.bytes, reducer.bucket_bytes());
  auto params = net->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    // Each rank contributes g / 4; "4 ranks" give g, and the others' extra 2 is added as it arrives.
    EXPECT_TRUE(torch::allclose(params[i].grad(), ref[i] + 2.0, 1e-5, 1e-6)) << "parameter " << i;
  }
}

TEST(GradientReducer, ABucketCuttingATensorWaitsForIt) {
  // Reverse order: b (16 B), then w (64 B). A 32-byte first bucket holds b and w's first 4 elements, so it may
  // not start before w is ready; then w's other 12 elements fill 48 bytes of the 64-byte cap.
  torch::nn::Linear lin(4, 4);
  FakeComm comm(1);
  GradientReducer reducer(lin->parameters(), comm, 64, 32);
  EXPECT_EQ(reducer.bucket_bytes(), (std::vector<int64_t>{32, 48}));
  reducer.Prepare();
  reducer.MarkReady(1);  // the bias
  EXPECT_EQ(comm.allreduces, 0);
  reducer.MarkReady(0);  // the weight completes both buckets
  EXPECT_EQ(comm.allreduces, 2);
  EXPECT_EQ(comm.bytes, (std::vector<int64_t>{32, 48}));
  reducer.MarkReady(0);  // marking twice changes nothing
  reducer.Finish();
  EXPECT_EQ(comm.allreduces, 2);
}

TEST(GradientReducer, MostOfAnMlpsGradientIsReducedBeforeItsFirstLayersBackward) {
  // The benchmark MLP (64 -> 512 -> 512 -> 10): 1.2 MB of gradients, 1 MiB of them in the middle layer. With
  // the default caps the first bucket (1 MiB) is complete once the middle layer's gradient is, so its allreduce
  // overlaps the first layer's backward; only the rest (~150 KB) waits for the end of the backward pass.
  torch::manual_seed(3);
  torch::nn::Sequential net(torch::nn::Linear(64, 512), torch::nn::ReLU(), torch::nn::Linear(512, 512),
                            torch::nn::ReLU(), torch::nn::Linear(512, 10));
  FakeComm comm(1);
  GradientReducer reducer(net->parameters(), comm);
  ASSERT_EQ(reducer.bucket_count(), 2u);
  EXPECT_EQ(reducer.bucket_bytes()[0], kDefaultFirstBucketCapBytes);
  int64_t launched_before_first_layer = -1;
  // A tensor hook on the first layer's weight runs before that gradient is accumulated.
  auto params = net->parameters();
  params[0].register_hook([&](torch::Tensor) {
    launched_before_first_layer = 0;
    for (int64_t b : comm.bytes) launched_before_first_layer += b;
  });
  reducer.ZeroGrad();
  reducer.Prepare();
  net->forward(torch::randn({64, 64})).pow(2).mean().backward();
  reducer.Finish();
  EXPECT_EQ(launched_before_first_layer, kDefaultFirstBucketCapBytes);
  EXPECT_EQ(comm.allreduces, 2);
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
