// Slurm's --time forms and the time-limit warning that must fit in the job (cli/slurm_time.h).
#include "cli/slurm_time.h"

#include <gtest/gtest.h>

namespace ladder::cli {
namespace {

TEST(SlurmTime, ReadsEveryFormSbatchReads) {
  std::string error;
  EXPECT_EQ(ParseSlurmTime("10", &error), 600);
  EXPECT_EQ(ParseSlurmTime("1:30", &error), 90);  // MINUTES:SECONDS
  EXPECT_EQ(ParseSlurmTime("0:01:30", &error), 90);
  EXPECT_EQ(ParseSlurmTime("2:00:00", &error), 7200);
  EXPECT_EQ(ParseSlurmTime("1-0", &error), 86400);
  EXPECT_EQ(ParseSlurmTime("1-2:30", &error), 86400 + 2 * 3600 + 30 * 60);
  EXPECT_EQ(ParseSlurmTime("2-00:00:05", &error), 2 * 86400 + 5);
  EXPECT_EQ(ParseSlurmTime("UNLIMITED", &error), 0);
  EXPECT_EQ(ParseSlurmTime("infinite", &error), 0);
  for (const char* bad : {"", "1:2:3:4", "1-2:3:4:5", "ten", "1:", "-5", "1.5", "1--2", "1-"}) {
    error.clear();
    EXPECT_FALSE(ParseSlurmTime(bad, &error).has_value()) << bad;
    EXPECT_NE(error.find("is not a Slurm time limit"), std::string::npos) << bad;
  }
}

TEST(SlurmTime, LimitsAreWholeMinutesRoundedUp) {
  EXPECT_EQ(SlurmRoundedLimit(90), 120);
  EXPECT_EQ(SlurmRoundedLimit(120), 120);
  EXPECT_EQ(SlurmRoundedLimit(121), 180);
  EXPECT_EQ(FormatSlurmTime(120), "0:02:00");
  EXPECT_EQ(FormatSlurmTime(90061), "1-01:01:01");
}

TEST(SlurmTime, AWarningThatDoesNotFitIsShortenedWhenItWasTheDefaultAndRefusedWhenAsked) {
  TimeLimitCheck fits = CheckTimeLimit("0:05:00", 120, false);
  EXPECT_TRUE(fits.ok);
  EXPECT_EQ(fits.lead_s, 120);
  EXPECT_EQ(fits.notes, "");
  TimeLimitCheck halved = CheckTimeLimit("0:01:30", 120, false);
  EXPECT_TRUE(halved.ok);
  EXPECT_EQ(halved.lead_s, 60);
  EXPECT_NE(halved.notes.find("runs for 0:02:00"), std::string::npos) << halved.notes;
  TimeLimitCheck asked = CheckTimeLimit("2", 120, true);
  EXPECT_FALSE(asked.ok);
  EXPECT_NE(asked.error.find("--signal-lead 120"), std::string::npos) << asked.error;
  EXPECT_TRUE(CheckTimeLimit("UNLIMITED", 300, true).ok) << "no limit: no warning to fit";
}

}  // namespace
}  // namespace ladder::cli
