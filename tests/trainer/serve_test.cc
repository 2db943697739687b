// ladder-train --serve (trainer/serve.h): one forked child per request line, its output in files of its own,
// its exit status answered in order; and served runs train exactly as the same runs started one by one.
#include "trainer/serve.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <sstream>

#include "tests/support/process.h"
#include "tests/support/trainer_runs.h"

namespace ladder::trainer {
namespace {

std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Serve over `requests` with `run`; returns the replies.
std::string ServeText(const std::string& requests, const std::function<int(const std::vector<std::string>&)>& run) {
  std::FILE* in = std::tmpfile();
  std::FILE* reply = std::tmpfile();
  std::fputs(requests.c_str(), in);
  std::rewind(in);
  EXPECT_EQ(Serve(in, reply, run), 0);
  std::rewind(reply);
  std::string out;
  for (int c; (c = std::fgetc(reply)) != EOF;) out.push_back(static_cast<char>(c));
  std::fclose(in);
  std::fclose(reply);
  return out;
}

TEST(SplitRequest, SplitsAtTabsAndDropsTheLineEnd) {
  EXPECT_EQ(SplitRequest("out\t--lr\t0.1\n"), (std::vector<std::string>{"out", "--lr", "0.1"}));
  EXPECT_EQ(SplitRequest("out\t--data\ta b.csv\r\n"), (std::vector<std::string>{"out", "--data", "a b.csv"}));
  EXPECT_EQ(SplitRequest("out"), (std::vector<std::string>{"out"}));
  EXPECT_EQ(SplitRequest("out\t\tx"), (std::vector<std::string>{"out", "", "x"})) << "an empty argument stays";
  EXPECT_TRUE(SplitRequest(" \t\n").empty());
}

TEST(Serve, RunsEachRequestInAChildWithItsOwnOutputFilesAndAnswersItsExitStatusInOrder) {
  testing::TempDir dir("serve");
  auto a = (dir / "a").string(), b = (dir / "b").string(), c = (dir / "c").string();
  const pid_t server = ::getpid();
  auto run = [&](const std::vector<std::string>& args) {
    // In the child: a process of its own, whose stdout and stderr are the request's files.
    std::printf("pid-differs=%d args=%zu first=%s\n", ::getpid() != server, args.size(),
                args.empty() ? "" : args[0].c_str());
    std::fprintf(stderr, "to stderr\n");
    std::fflush(stdout);  // (the trainer flushes each metrics line the same way)
    if (!args.empty() && args[0] == "--crash") ::raise(SIGKILL);
    return args.empty() ? 0 : std::atoi(args.back().c_str());
  };
  std::string replies = ServeText(a + "\t--x\t3\n\n" + b + "\n" + c + "\t--crash\n", run);
  EXPECT_EQ(replies, "3\n0\n" + std::to_string(128 + SIGKILL) + "\n") << "one answer per request, blank lines skipped";
  EXPECT_EQ(Slurp(a + ".out"), "pid-differs=1 args=2 first=--x\n");
  EXPECT_EQ(Slurp(a + ".err"), "to stderr\n");
  EXPECT_EQ(Slurp(b + ".out"), "pid-differs=1 args=0 first=\n");
  EXPECT_EQ(Slurp(c + ".out"), "pid-differs=1 args=1 first=--crash\n") << "what it printed before it died";
}

TEST(Serve, ARequestItCannotCarryOutIsAnsweredTwoAndTheNextOneStillRuns) {
  testing::TempDir dir("serve-bad");
  int runs = 0;
  auto run = [&](const std::vector<std::string>&) {
    ++runs;  // in the child: the server's count stays 0
    return 0;
  };
  auto ok = (dir / "ok").string();
  std::string replies = ServeText("\t--lr\t1\n" + (dir / "no-such-dir" / "x").string() + "\n" + ok, run);
  EXPECT_EQ(replies, "2\n2\n0\n") << "empty output path; unopenable output; then a good request (no final newline)";
  EXPECT_EQ(runs, 0) << "runs happen in children";
  EXPECT_TRUE(std::filesystem::exists(ok + ".out"));
}

TEST(Serve, ARunThatThrowsIsAnsweredOneAndAnIgnoredSigchldDoesNotHideExitCodes) {
  testing::TempDir dir("serve-throw");
  auto run = [](const std::vector<std::string>& args) -> int {
    if (!args.empty() && args[0] == "--throw") throw std::runtime_error("no such tensor");
    return args.empty() ? 0 : std::atoi(args[0].c_str());
  };
  auto previous = std::signal(SIGCHLD, SIG_IGN);  // as a parent that ignores SIGCHLD would leave it
  auto a = (dir / "a").string(), b = (dir / "b").string();
  EXPECT_EQ(ServeText(a + "\t--throw\n" + b + "\t7\n", run), "1\n7\n");
  std::signal(SIGCHLD, previous);
  EXPECT_NE(Slurp(a + ".err").find("the run threw: no such tensor"), std::string::npos) << Slurp(a + ".err");
}

TEST(ServeTrainer, AServedRunTrainsBitForBitLikeTheSameRunStartedAlone) {
  testing::TempDir dir("serve-train");
  auto bin = testing::TrainerBinary();
  std::vector<std::string> common = {"--batch-size", "64", "--epochs", "2", "--lr", "0.05", "--seed", "7"};
  auto alone = common;
  alone.insert(alone.begin(), bin);
  alone.push_back("--save-params");
  alone.push_back((dir / "alone.bin").string());
  auto direct = testing::RunCommand(alone, dir.path);
  ASSERT_EQ(direct.exit_code, 0) << direct.err;

  std::ofstream req(dir / "requests");
  for (const char* name : {"served1", "served2"}) {
    req << (dir / name).string();
    for (const auto& arg : common) req << '\t' << arg;
    req << "\t--save-params\t" << (dir / (std::string(name) + ".bin")).string() << '\n';
  }
  req << (dir / "bad").string() << "\t--epochs\tzero\n";
  req.close();
  auto served = testing::RunCommand({"/bin/sh", "-c", "exec '" + bin + "' --serve < requests"}, dir.path);
  ASSERT_EQ(served.exit_code, 0) << served.err;
  EXPECT_EQ(served.out, "0\n0\n2\n") << "two runs done, the third refused (bad --epochs)";
  auto want = testing::ReadParams(dir / "alone.bin");
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(testing::ReadParams(dir / "served1.bin"), want);
  EXPECT_EQ(testing::ReadParams(dir / "served2.bin"), want) << "the second child starts as fresh as the first";
  EXPECT_NE(Slurp(dir / "served1.out").find("\"val_loss\""), std::string::npos) << "metrics lines in OUT.out";
  EXPECT_NE(Slurp(dir / "bad.err").find("--epochs"), std::string::npos) << Slurp(dir / "bad.err");
}

}  // namespace
}  // namespace ladder::trainer
