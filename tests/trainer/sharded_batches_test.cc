// A sharded training set (Dataset::shard_world > 1, HDF5 at several ranks): each rank's batches walk its own rows,
// every one once per epoch, global/world of them per step (batch_prefetcher.h local_shard).
#include <gtest/gtest.h>

#include <set>

#include "trainer/batch_prefetcher.h"

namespace ladder::trainer {
namespace {

TEST(ShardedBatches, EachRankTakesGlobalOverWorldOfItsOwnRowsAndEachOncePerEpoch) {
  const int64_t rows = 20;
  auto x = torch::arange(rows, torch::kFloat32).reshape({rows, 1});
  auto y = torch::zeros({rows, 1}, torch::kInt64);
  PrefetchOptions o;
  o.depth = 0;
  o.rank = 1;
  o.world = 2;
  o.epochs = 2;
  o.local_shard = true;
  BatchPrefetcher batches(x, y, SampleStream(rows, 3), 0, [](int64_t) { return int64_t{8}; }, o);
  std::set<int64_t> epoch0;
  int steps = 0, ends = 0;
  while (auto b = batches.Next()) {
    EXPECT_EQ(b->global, 8);
    ASSERT_EQ(b->x.size(0), 4);  // global 8 over 2 ranks, all from this rank's rows
    if (ends == 0) {
      for (int64_t i = 0; i < 4; ++i) epoch0.insert(static_cast<int64_t>(b->x[i][0].item<float>()));
    }
    ends += b->epochs_completed;
    ++steps;
  }
  EXPECT_EQ(steps, 10);  // 2 epochs of 20 rows, 4 a step
  EXPECT_EQ(epoch0.size(), static_cast<size_t>(rows));  // every row once in the first epoch
}

}  // namespace
}  // namespace ladder::trainer
