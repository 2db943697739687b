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
  for (auto& p : net->parameters()) {
    if (p.grad().defined()) p.mutable_grad().zero_();
  }
  reducer.Prepare();
  loss.backward();
  reducer.Finish();
  EXPECT_EQ(comm.allreduces, 2);
  auto params = net->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    // Each rank contributes g / 4; "4 ranks" give g, and the others' extra 2 is added as it arrives.
    EXPECT_TRUE(torch::allclose(params[i].grad(), ref[i] + 2.0, 1e-5, 1e-6)) << "parameter " << i;
  }
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
