// The end of a trial's stderr as the worker sends it to the dashboards: whole lines only, within the byte limit.
#include "worker/log_tail.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace ladder::worker {
namespace {

class LogTailTest : public ::testing::Test {
 protected:
  void SetUp() override { std::filesystem::create_directories(dir_); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& text) {
    const auto path = (dir_ / "stderr.log").string();
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
    return path;
  }
  std::filesystem::path dir_ =
      std::filesystem::temp_directory_path() / ("ladder-log-tail-" + std::to_string(getpid()));
};

TEST_F(LogTailTest, ASmallLogIsWholeWithoutItsTrailingBlankSpace) {
  int64_t size = 0;
  EXPECT_EQ(LogTail(Write("loading\nepoch 1\n\n"), kLogTailBytes, &size), "loading\nepoch 1");
  EXPECT_EQ(size, 17);
}

TEST_F(LogTailTest, ALongLogKeepsItsLastWholeLinesWithinTheLimit) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += "line " + std::to_string(i) + "\n";
  const std::string tail = LogTail(Write(text), 64);
  EXPECT_LE(tail.size(), 64u);
  EXPECT_EQ(tail.rfind("line 999"), tail.size() - 8) << tail;
  EXPECT_EQ(tail.rfind("line ", 0), 0u) << "begins with a whole line: " << tail;
}

TEST_F(LogTailTest, AMissingOrEmptyLogIsEmpty) {
  int64_t size = 0;
  EXPECT_EQ(LogTail((dir_ / "nope.log").string(), kLogTailBytes, &size), "");
  EXPECT_EQ(size, -1);
  EXPECT_EQ(FileSize((dir_ / "nope.log").string()), -1);
  EXPECT_EQ(LogTail(Write("")), "");
  EXPECT_EQ(LastLine(Write("\n\n")), "");
}

TEST_F(LogTailTest, TheLastLineIsTheLastNonBlankOneCutAt200Characters) {
  EXPECT_EQ(LastLine(Write("first\nunknown option '--bogus'\n\n")), "unknown option '--bogus'");
  EXPECT_EQ(LastLine(Write(std::string(300, 'x') + "\n")), std::string(200, 'x') + "...");
}

// One run's part of a log that several attempts append to: from the byte it started at, whole lines.
TEST_F(LogTailTest, SinceAnOffsetOnlyThatRunsLinesCount) {
  const std::string first = "srun: Job step aborted: Waiting up to 4 seconds for job step to finish.\n";
  const auto path = Write(first + "attempt 1 ran\nand ended\n");
  EXPECT_EQ(LogTail(path, kLogTailBytes, nullptr, static_cast<int64_t>(first.size())), "attempt 1 ran\nand ended");
  EXPECT_EQ(LogTail(path, 12, nullptr, static_cast<int64_t>(first.size())), "and ended") << "the byte limit still holds";
  EXPECT_EQ(LogTail(path, kLogTailBytes, nullptr, 1 << 20), "") << "an offset past the end reads nothing";
}

// A trial's stderr may hold anything: the tail keeps its lines but escapes bytes that are not printable UTF-8 and
// terminal escapes (a proto string that is not UTF-8 made the coordinator drop the whole message), and a cut
// through a multi-byte character at the byte limit is escaped, not sent raw.
TEST_F(LogTailTest, BytesThatAreNotPrintableUtf8AreEscaped) {
  EXPECT_EQ(LogTail(Write("ok \xe2\x9c\x93\n\x1b[31mred\x1b[0m\tx\n\xff\xfe\x01" "bin\n")),
            "ok \xe2\x9c\x93\n\\x1b[31mred\\x1b[0m\tx\n\\xff\\xfe\\x01bin");
  EXPECT_EQ(LastLine(Write("first\nlast \xc3\n")), "last \\xc3");
  std::string long_line = "x" + std::string(199, 'a') + "\xc3\xa9\n";  // 'é' cut at byte 200
  EXPECT_EQ(LastLine(Write(long_line)), "x" + std::string(199, 'a') + "...");
  std::string cut = std::string(198, 'b') + "\xe2\x9c\x93tail\n";  // the check mark cut at byte 200
  EXPECT_EQ(LastLine(Write(cut)), std::string(198, 'b') + "\\xe2\\x9c...");
}

}  // namespace
}  // namespace ladder::worker
