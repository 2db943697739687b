#include "common/id_set.h"

#include <gtest/gtest.h>

namespace ladder {
namespace {
TEST(IdSet, CompactsRuns) {
  EXPECT_EQ(FormatIdSet({}), "");
  EXPECT_EQ(FormatIdSet({3}), "3");
  EXPECT_EQ(FormatIdSet({0, 1, 2, 5, 7, 8}), "0-2,5,7-8");
  EXPECT_EQ(FormatIdSet({8, 7, 2, 1, 0, 5, 5}), "0-2,5,7-8");
}
}  // namespace
}  // namespace ladder
