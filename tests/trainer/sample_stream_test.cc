#include "trainer/sample_stream.h"

#include <gtest/gtest.h>

#include <set>

namespace ladder::trainer {
namespace {

TEST(SampleStream, EveryEpochIsAPermutationAndBatchesCrossEpochBoundaries) {
  SampleStream s(10, 1);
  int ends = 0;
  auto a = s.Next(7, &ends);
  EXPECT_EQ(ends, 0);
  auto b = s.Next(7, &ends);  // 3 from epoch 0, 4 from epoch 1
  EXPECT_EQ(ends, 1);
  EXPECT_EQ(s.epoch(), 1);
  EXPECT_EQ(s.offset(), 4);
  std::set<int64_t> epoch0(a.begin(), a.end());
  epoch0.insert(b.begin(), b.begin() + 3);
  EXPECT_EQ(epoch0.size(), 10u);
  EXPECT_EQ(s.Remaining(2), 6);
}

TEST(SampleStream, OrderIsTheSameWhateverTheBatchSizes) {
  // A ramp (4, 4, 8, 16) and constant batches of 4 see the same sample sequence.
  SampleStream ramp(50, 9), flat(50, 9);
  std::vector<int64_t> r, f;
  int ends;
  for (int64_t g : {4, 4, 8, 16}) {
    auto v = ramp.Next(g, &ends);
    r.insert(r.end(), v.begin(), v.end());
  }
  for (int i = 0; i < 8; ++i) {
    auto v = flat.Next(4, &ends);
    f.insert(f.end(), v.begin(), v.end());
  }
  EXPECT_EQ(r, f);
}

TEST(SampleStream, SeekResumesExactly) {
  SampleStream a(20, 3);
  int ends;
  a.Next(27, &ends);
  auto expected = a.Next(9, &ends);
  SampleStream b(20, 3);
  b.Seek(1, 7);
  EXPECT_EQ(b.Next(9, &ends), expected);
}

TEST(SampleStream, RampMultipliers) {
  std::vector<RampPoint> ramp = {{10, 2}, {20, 4}};
  EXPECT_EQ(GlobalBatchAt(32, ramp, 0), 32);
  EXPECT_EQ(GlobalBatchAt(32, ramp, 10), 64);
  EXPECT_EQ(GlobalBatchAt(32, ramp, 25), 128);
  EXPECT_EQ(GlobalBatchAt(32, {}, 25), 32);
}

}  // namespace
}  // namespace ladder::trainer
