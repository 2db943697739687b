#include "common/duration_text.h"

#include <gtest/gtest.h>

namespace ladder {
namespace {

TEST(DurationText, ParsesAWholeNumberWithOneUnit) {
  EXPECT_EQ(ParseDurationSeconds("90s"), 90);
  EXPECT_EQ(ParseDurationSeconds("15m"), 900);
  EXPECT_EQ(ParseDurationSeconds("8h"), 28800);
  EXPECT_EQ(ParseDurationSeconds("30d"), 2592000);
  for (const char* bad : {"", "d", "30", "30x", "-1d", "1.5h", "0s", "30 d", "36501d", "99999999999999999999s"}) {
    EXPECT_FALSE(ParseDurationSeconds(bad).has_value()) << bad;
    EXPECT_NE(DurationTextError(bad), "") << bad;
  }
  EXPECT_EQ(DurationTextError("30x"), "'30x': the unit must be s, m, h or d (e.g. 30d)");
  EXPECT_EQ(DurationTextError("30d"), "");
}

TEST(DurationText, FormatsWithTheLargestExactUnitAndUtc) {
  EXPECT_EQ(FormatDurationSeconds(86400), "1d");
  EXPECT_EQ(FormatDurationSeconds(28800), "8h");
  EXPECT_EQ(FormatDurationSeconds(5400), "90m");
  EXPECT_EQ(FormatDurationSeconds(61), "61s");
  EXPECT_EQ(FormatUtc(0), "1970-01-01 00:00:00 UTC");
  EXPECT_EQ(FormatUtc(1798675200.7), "2026-12-31 00:00:00 UTC");
}

}  // namespace
}  // namespace ladder
