// LoadHdf5ForRank at two ranks (trainer/hdf5_shard.h), without processes: each rank runs on a communicator that
// replays the other rank's contributions to every allreduce. A first pass records what each rank sends (what a
// rank sends never depends on what it got back), a second gives each rank the other's: the ranks then agree on a
// failure, on the class count, and standardize with the statistics of both ranks' training rows.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/support/process.h"
#include "trainer/data_sources.h"
#include "trainer/hdf5_dataset.h"
#include "trainer/hdf5_shard.h"
#include "trainer/task.h"

namespace ladder::trainer {
namespace {

class ReplayCommunicator final : public comm::Communicator {
 public:
  ReplayCommunicator(int rank, std::vector<torch::Tensor> other) : rank_(rank), other_(std::move(other)) {}
  std::string backend() const override { return "replay"; }
  int rank() const override { return rank_; }
  int size() const override { return 2; }
  int local_rank() const override { return rank_; }
  std::unique_ptr<comm::Work> AllreduceSum(torch::Tensor& t) override {
    sent.push_back(t.clone());
    if (sent.size() <= other_.size()) t.add_(other_[sent.size() - 1]);
    return std::make_unique<Done>();
  }
  void Broadcast(torch::Tensor&, int) override {}
  void Barrier() override {}
  std::vector<torch::Tensor> sent;

 private:
  struct Done final : comm::Work {
    void Wait() override {}
  };
  int rank_;
  std::vector<torch::Tensor> other_;
};

struct RankOut {
  bool ok = false;
  Dataset train, val;
  std::string error, class_weights;
};

// Both ranks, each with its own arguments: the recording pass, then the replaying one.
std::array<RankOut, 2> LoadAtTwoRanks(const std::array<TrainArgs, 2>& args) {
  std::array<std::vector<torch::Tensor>, 2> sent;
  std::array<RankOut, 2> out;
  for (int pass = 0; pass < 2; ++pass) {
    for (int r = 0; r < 2; ++r) {
      ReplayCommunicator comm(r, pass == 0 ? std::vector<torch::Tensor>{} : sent[1 - r]);
      out[r] = RankOut{};
      out[r].ok = LoadHdf5ForRank(args[r], comm, &out[r].train, &out[r].val, &out[r].error, &out[r].class_weights);
      if (pass == 0) sent[r] = comm.sent;
    }
  }
  return out;
}

TEST(Hdf5Shard, TwoRanksAgreeOnClassesAndStandardizeWithBothRanksRows) {
  testing::TempDir dir("hdf5shard");
  Dataset all = MakeSynthetic(1000, 3, 4, 2);
  for (int64_t i = 995; i < 1000; ++i) all.y[static_cast<size_t>(i)] = 4;  // a class only rank 1's block has
  for (auto& v : all.x) v = v * 3 + 7;  // far from standardized
  std::string err;
  const std::string path = (dir / "d.h5").string();
  ASSERT_TRUE(WriteHdf5(path, all, "x", "y", 50, &err)) << err;
  TrainArgs a;
  a.data = "hdf5:" + path;
  a.val_fraction = 0.01;
  // The raw shards, and the statistics of both ranks' training rows per feature.
  Dataset raw_train[2], raw_val[2];
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(ReadHdf5Shard(Hdf5Spec{path}, 0.01, 20261122, r, 2, &raw_train[r], &raw_val[r], nullptr, &err));
  }
  ASSERT_EQ(raw_train[0].classes, 4);  // rank 0 alone sees classes 0..3 (none of the last rows is a validation row)
  ASSERT_EQ(raw_train[1].classes, 5);
  double sum[3] = {0, 0, 0}, sq[3] = {0, 0, 0}, n = 0;
  for (const auto& d : raw_train) {
    for (int64_t i = 0; i < d.rows; ++i) {
      for (int j = 0; j < 3; ++j) {
        const double v = d.x[static_cast<size_t>(i * 3 + j)];
        sum[j] += v, sq[j] += v * v;
      }
    }
    n += static_cast<double>(d.rows);
  }
  const auto out = LoadAtTwoRanks({a, a});
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(out[r].ok) << out[r].error;
    EXPECT_EQ(out[r].train.classes, 5) << r;
    EXPECT_EQ(out[r].val.classes, 5) << r;
    for (const auto& [got, raw] : {std::pair{&out[r].train, &raw_train[r]}, std::pair{&out[r].val, &raw_val[r]}}) {
      ASSERT_EQ(got->x.size(), raw->x.size());
      for (size_t k = 0; k < got->x.size(); ++k) {
        const double mean = sum[k % 3] / n, sd = std::sqrt(sq[k % 3] / n - mean * mean);
        ASSERT_NEAR(got->x[k], (raw->x[k] - mean) / sd, 1e-4) << "rank " << r << " element " << k;
      }
    }
  }
}

TEST(Hdf5Shard, SegmentationsAutoClassWeightsComeFromBothRanksLabels) {
  testing::TempDir dir("hdf5shardseg");
  std::string err;
  const std::string path = (dir / "c.h5").string();
  ASSERT_TRUE(WriteHdf5(path, MakeClimate(40, 8, 3), "x", "y", 4, &err)) << err;
  TrainArgs a;
  a.data = "hdf5:" + path;
  Dataset raw_train[2], raw_val, both;
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(ReadHdf5Shard(Hdf5Spec{path}, 0.2, 20261122, r, 2, &raw_train[r], &raw_val, nullptr, &err)) << err;
    both.y.insert(both.y.end(), raw_train[r].y.begin(), raw_train[r].y.end());
  }
  both.task = Task::kSegment;
  both.classes = 3;
  torch::Tensor want;
  ASSERT_TRUE(ClassWeights("auto", both, &want, &err)) << err;
  torch::Tensor rank0_alone;
  ASSERT_TRUE(ClassWeights("auto", raw_train[0], &rank0_alone, &err)) << err;
  ASSERT_FALSE(torch::allclose(want, rank0_alone, 1e-4, 0));  // the ranks' own labels would give other weights
  const auto out = LoadAtTwoRanks({a, a});
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(out[r].ok) << out[r].error;
    EXPECT_EQ(out[r].class_weights, out[0].class_weights);
    torch::Tensor got;  // as the training loop reads the option: against this rank's own rows
    ASSERT_TRUE(ClassWeights(out[r].class_weights, out[r].train, &got, &err)) << err << " " << out[r].class_weights;
    EXPECT_TRUE(torch::equal(got, want)) << out[r].class_weights << "\n" << want;
  }
}

TEST(Hdf5Shard, WhenOneRankCannotReadBothFail) {
  testing::TempDir dir("hdf5shardfail");
  std::string err;
  const std::string path = (dir / "d.h5").string();
  ASSERT_TRUE(WriteHdf5(path, MakeSynthetic(100, 3, 2, 2), "x", "y", 10, &err)) << err;
  std::array<TrainArgs, 2> args;
  args[0].data = "hdf5:" + path;
  args[1].data = "hdf5:" + (dir / "missing.h5").string();  // as on a node the file was not staged to
  const auto out = LoadAtTwoRanks(args);
  EXPECT_FALSE(out[0].ok);
  EXPECT_NE(out[0].error.find("another rank could not read"), std::string::npos) << out[0].error;
  EXPECT_FALSE(out[1].ok);
  EXPECT_NE(out[1].error.find("missing.h5"), std::string::npos) << out[1].error;
}

}  // namespace
}  // namespace ladder::trainer
