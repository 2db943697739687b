#pragma once
// LocalCluster: a real ladder-server (optionally with its web dashboard) and one ladder-worker of 2 slots on
// 127.0.0.1, over a database in the test's directory, and the ladder CLI pointed at them with their token.
#include <fstream>
#include <string>
#include <vector>

#include "tests/integration/system_support.h"
#include "tests/support/process.h"

namespace ladder::testing {

struct LocalCluster {
  std::string address, token;
  int http_port = 0;  // 0: no dashboard
  Child server, worker;

  static std::string Bin(const std::string& name) { return BinDir() + "/" + name; }

  // Starts both; the worker is node n1 on rack `rack`. Call with ASSERT_NO_FATAL_FAILURE.
  void Start(const std::filesystem::path& dir, bool dashboard, const std::string& rack) {
    address = "127.0.0.1:" + std::to_string(FreePort());
    const auto db = (dir / "ladder.db").string();
    std::vector<std::string> args = {Bin("ladder-server"), "--listen", address, "--db", db};
    if (dashboard) {
      http_port = FreePort();
      args.insert(args.end(), {"--http", "127.0.0.1:" + std::to_string(http_port)});
    }
    Spawn(&server, args, true);
    ASSERT_EQ(ReadListenAddress(server), address);
    std::getline(std::ifstream(db + ".token"), token);
    Spawn(&worker,
          {Bin("ladder-worker"), "--server", address, "--token-file", db + ".token", "--node-id", "n1", "--slots", "2",
           "--label", "rack=" + rack, "--trial-dir", (dir / "trials").string()},
          false);
  }

  // The ladder CLI with this coordinator's address and token.
  std::vector<std::string> Ladder(std::vector<std::string> args) const {
    std::vector<std::string> all = {Bin("ladder"), "--server", address, "--token", token};
    all.insert(all.end(), args.begin(), args.end());
    return all;
  }
};

}  // namespace ladder::testing
