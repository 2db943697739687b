// ladder search enqueue on a running search, as a user runs it against a real ladder-server: the point is taken
// and shown, a point the space refuses is exit 2 with the coordinator's words, PARAMS that do not read are exit 2
// before any call.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/integration/system_support.h"
#include "tests/integration/test_support.h"

namespace ladder {
namespace {

std::string Bin(const std::string& name) {
  const char* d = std::getenv("LADDER_BIN_DIR");
  return std::string(d ? d : LADDER_TEST_BIN_DIR) + "/" + name;
}

TEST(CliEnqueue, APointIsTakenShownAndARefusalSaysWhy) {
  testing::TempDir dir("cli-enqueue");
  const std::string address = "127.0.0.1:" + std::to_string(testing::FreePort());
  const auto db = (dir / "ladder.db").string();
  testing::Child server;
  testing::Spawn(&server, {Bin("ladder-server"), "--listen", address, "--db", db}, true);
  ASSERT_EQ(testing::ReadListenAddress(server), address);
  std::ofstream(dir / "s.yaml") << "name: s\nobjective: {metric: score, mode: max}\nbudget: {max_trials: 5}\n"
                                   "command: [/bin/true]\nspace:\n  x: {type: float, low: 0, high: 1}\n"
                                   "  opt: {type: categorical, values: [sgd, adam]}\n";
  auto ladder = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {Bin("ladder"), "--server", address});
    return testing::RunCommand(args, dir);
  };
  auto start = ladder({"search", "start", "s.yaml"});  // no worker: its trials wait
  ASSERT_EQ(start.exit_code, 0) << start.out << start.err;
  auto ok = ladder({"search", "enqueue", "1", "x=0.5,opt=adam"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("enqueued on search 1: x=0.5,opt=adam (runs next)"), std::string::npos) << ok.out;
  auto show = ladder({"search", "show", "1"});
  EXPECT_NE(show.out.find("enqueued: 1 known point to run before the next sampled trial"), std::string::npos)
      << show.out;
  auto out_of_range = ladder({"search", "enqueue", "1", "x=5,opt=adam"});
  EXPECT_EQ(out_of_range.exit_code, 2);
  EXPECT_NE(out_of_range.err.find("search 1: x: 5 is out of range [0, 1]"), std::string::npos) << out_of_range.err;
  auto missing = ladder({"search", "enqueue", "1", "x=0.5"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("search 1: opt: missing: 'opt' is active and needs a value"), std::string::npos)
      << missing.err;
  auto malformed = ladder({"search", "enqueue", "1", "x0.5,opt=adam"});
  EXPECT_EQ(malformed.exit_code, 2);
  EXPECT_NE(malformed.err.find("'x0.5' is not NAME=VALUE"), std::string::npos) << malformed.err;
  auto no_search = ladder({"search", "enqueue", "7", "x=0.5,opt=adam"});
  EXPECT_EQ(no_search.exit_code, 4) << no_search.err;
  auto help = ladder({"search", "enqueue", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("NAME=VALUE[,NAME=VALUE...]"), std::string::npos) << help.out;
}

}  // namespace
}  // namespace ladder
