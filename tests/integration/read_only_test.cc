// Results read after the job: a database no coordinator serves any more, read read-only by every read command of
// the CLI (cli/read_only_view.h) and by `ladder-server --read-only` (the dashboard), with the database's file left
// exactly as it was — its bytes and its mtime — also when the file and its directory are read-only to the reader.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "tests/integration/system_support.h"
#include "tests/support/process.h"

namespace ladder {
namespace {

namespace fs = std::filesystem;

std::string Bin(const std::string& name) { return testing::BinDir() + "/" + name; }

// A file as it is now: its bytes and its modification time (ns).
struct Fingerprint {
  std::string bytes;
  long long mtime_ns = 0;
  bool operator==(const Fingerprint& o) const { return bytes == o.bytes && mtime_ns == o.mtime_ns; }
};
Fingerprint Of(const fs::path& p) {
  Fingerprint f;
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  f.bytes = ss.str();
  struct stat st {};
  if (::stat(p.c_str(), &st) == 0) f.mtime_ns = st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
  return f;
}

// The names in `dir`, but the test's own command output files.
std::set<std::string> Names(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n != "cmd.out" && n != "cmd.err") out.insert(n);
  }
  return out;
}

// Three trials of a shell command that print their score (no trainer: quick), run to the end by `ladder demo`
// into DIR/ladder.db; its coordinator has stopped when this returns.
void RunFinishedSearch(const testing::TempDir& dir) {
  std::ofstream(dir / "sweep.yaml")
      << "name: finished\nobjective: {metric: score, mode: max}\nbudget: {max_trials: 3, parallelism: 3}\n"
         "sampler: {type: random, seed: 1}\ncommand: [/bin/sh, -c, 'echo \"{{\\\"step\\\": 1, \\\"score\\\": "
         "{x}}}\"']\nspace:\n  x: {type: float, low: 0, high: 1}\n";
  auto demo = testing::RunCommand(
      {Bin("ladder"), "--server", "127.0.0.1:0", "demo", "--spec", "sweep.yaml", "--db", "ladder.db"}, dir);
  ASSERT_EQ(demo.exit_code, 0) << demo.out << demo.err;
  // Where the job's coordinator was: it left its address behind (killed jobs do), and nothing answers there now.
  std::ofstream(dir / "ladder.db.server") << "127.0.0.1:1\n";
}

// `ladder --db DB ...` in `dir`.
testing::CommandResult Ladder(const testing::TempDir& dir, std::vector<std::string> args) {
  std::vector<std::string> all = {Bin("ladder"), "--db", (dir / "ladder.db").string()};
  all.insert(all.end(), args.begin(), args.end());
  return testing::RunCommand(all, dir);
}

TEST(ReadOnly, EveryReadCommandReadsAFinishedSearchFromItsDatabaseAndLeavesTheFileAsItWas) {
  testing::TempDir dir("read-only");
  ASSERT_NO_FATAL_FAILURE(RunFinishedSearch(dir));
  const fs::path db = dir / "ladder.db";
  ASSERT_FALSE(fs::exists(db.string() + "-wal")) << "the demo's coordinator closed the database cleanly";
  fs::permissions(db, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);  // chmod 0444
  const Fingerprint before = Of(db);
  const auto names = Names(dir);

  auto list = Ladder(dir, {"search", "list"});
  ASSERT_EQ(list.exit_code, 0) << list.out << list.err;
  EXPECT_NE(list.out.find("finished"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("completed"), std::string::npos) << list.out;
  EXPECT_NE(list.err.find("no coordinator answers at 127.0.0.1:1; reading " + db.string() + " read-only"),
            std::string::npos)
      << list.err;
  auto list_json = nlohmann::json::parse(Ladder(dir, {"--json", "search", "list"}).out, nullptr, false);
  ASSERT_TRUE(list_json.is_object()) << list_json;
  ASSERT_EQ(list_json["searches"].size(), 1u) << list_json;
  EXPECT_EQ(list_json["searches"][0]["state"], "SEARCH_COMPLETED") << list_json;

  auto show = Ladder(dir, {"search", "show", "1"});
  EXPECT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("3 completed"), std::string::npos) << show.out;
  auto trials = Ladder(dir, {"trials", "1"});
  EXPECT_EQ(trials.exit_code, 0) << trials.err;
  EXPECT_NE(trials.out.find("best score = "), std::string::npos) << trials.out;
  EXPECT_EQ(trials.out.find(", id "), std::string::npos) << "a trial is named by its number: " << trials.out;
  auto trials_json = nlohmann::json::parse(Ladder(dir, {"--json", "trials", "1"}).out, nullptr, false);
  ASSERT_TRUE(trials_json.is_object());
  EXPECT_EQ(trials_json["trials"].size(), 3u) << trials_json;
  // watch --plain of an ended search: its state, then the end (nothing follows a database no one serves).
  auto watch = Ladder(dir, {"watch", "--plain", "1"});
  EXPECT_EQ(watch.exit_code, 0) << watch.err;
  EXPECT_NE(watch.out.find("finished"), std::string::npos) << watch.out;
  EXPECT_EQ(Ladder(dir, {"nodes"}).exit_code, 0);
  // A command that would change something does not read the database instead: it needs the coordinator.
  auto cancel = Ladder(dir, {"search", "cancel", "1"});
  EXPECT_EQ(cancel.exit_code, 3) << cancel.err;
  EXPECT_NE(cancel.err.find("cannot reach the coordinator"), std::string::npos) << cancel.err;

  EXPECT_TRUE(Of(db) == before) << "a read-only open changed the database's bytes or mtime";
  EXPECT_EQ(Names(dir), names) << "a read-only open left files next to the database (-wal, -shm, a token)";

  // Another user, to whom the file and its directory are read-only (root is not held back by modes).
  if (::geteuid() == 0 && fs::exists("/usr/bin/setpriv")) {
    fs::permissions(dir.path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec);  // 0755: nobody may not write
    auto nobody = testing::RunCommand({"/usr/bin/setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
                                       Bin("ladder"), "--db", db.string(), "--json", "trials", "1"},
                                      dir);
    EXPECT_EQ(nobody.exit_code, 0) << nobody.err;
    auto doc = nlohmann::json::parse(nobody.out, nullptr, false);
    EXPECT_TRUE(doc.is_object() && doc["trials"].size() == 3u) << nobody.out;
    EXPECT_TRUE(Of(db) == before);
    EXPECT_EQ(Names(dir), names);
  }
}

// A coordinator killed with its last commits still in DB-wal: a read-only reader sees them, and neither the
// database nor its WAL is changed (no checkpoint).
TEST(ReadOnly, TheCommitsInAKilledCoordinatorsWalAreReadAndNothingIsCheckpointed) {
  testing::TempDir dir("read-only-wal");
  const fs::path db = dir / "ladder.db";
  testing::Child server;
  ASSERT_NO_FATAL_FAILURE(testing::Spawn(
      &server, {Bin("ladder-server"), "--listen", "127.0.0.1:0", "--db", db.string()}, true));
  const std::string address = testing::ReadListenAddress(server);
  ASSERT_FALSE(address.empty());
  std::ofstream(dir / "wal.yaml") << "name: in-the-wal\nobjective: {metric: score, mode: max}\n"
                                     "budget: {max_trials: 2}\nresources: {nodes: 2, launcher: srun}\n"
                                     "command: [/bin/true]\nspace:\n  x: {type: float, low: 0, high: 1}\n";
  auto start = testing::RunCommand({Bin("ladder"), "--server", address, "--token-file", db.string() + ".token",
                                    "search", "start", "wal.yaml"},
                                   dir);
  ASSERT_EQ(start.exit_code, 0) << start.err;
  auto cancel = testing::RunCommand(
      {Bin("ladder"), "--server", address, "--token-file", db.string() + ".token", "search", "cancel", "1"}, dir);
  ASSERT_EQ(cancel.exit_code, 0) << cancel.err;  // an ended search: its launcher is read back from its spec
  server.Kill(SIGKILL);
  std::ofstream(db.string() + ".server") << "127.0.0.1:1\n";
  ASSERT_TRUE(fs::exists(db.string() + "-wal"));
  const Fingerprint db_before = Of(db), wal_before = Of(db.string() + "-wal");

  auto show = nlohmann::json::parse(Ladder(dir, {"--json", "search", "show", "1"}).out, nullptr, false);
  ASSERT_TRUE(show.is_object()) << show;
  EXPECT_EQ(show["name"], "in-the-wal");
  EXPECT_EQ(show["state"], "SEARCH_CANCELLED") << "the last commit, in the WAL only";
  // The launcher comes from the spec (it is not a column): srun, as the spec says, not LAUNCHER_UNSPECIFIED; the
  // trials' groups too.
  EXPECT_EQ(show["group"]["launcher"], "LAUNCHER_SRUN") << show;
  auto trials = nlohmann::json::parse(Ladder(dir, {"--json", "trials", "1"}).out, nullptr, false);
  ASSERT_TRUE(trials.is_object()) << trials;
  for (const auto& t : trials.value("trials", nlohmann::json::array())) {
    EXPECT_EQ(t["group"]["launcher"], "LAUNCHER_SRUN") << t;
  }
  EXPECT_TRUE(Of(db) == db_before) << "the read checkpointed the WAL into the database";
  EXPECT_TRUE(Of(db.string() + "-wal") == wal_before);
}

// ladder-server --read-only: the read calls and the dashboard answer from the database; every call that would change
// something, and every worker, is refused with a message that says why; the file is left as it was.
TEST(ReadOnly, LadderServerReadOnlyServesReadsAndTheDashboardAndRefusesEveryWrite) {
  testing::TempDir dir("read-only-server");
  ASSERT_NO_FATAL_FAILURE(RunFinishedSearch(dir));
  const fs::path db = dir / "ladder.db";
  const std::string token_file = db.string() + ".token";
  std::ofstream(dir / "new.yaml") << "name: new\nobjective: {metric: score, mode: max}\nbudget: {max_trials: 1}\n"
                                     "command: [/bin/true]\nspace:\n  x: {type: float, low: 0, high: 1}\n";
  const Fingerprint before = Of(db);
  const auto names = Names(dir);
  testing::Child server;
  ASSERT_NO_FATAL_FAILURE(testing::Spawn(&server,
                                         {Bin("ladder-server"), "--read-only", "--listen", "127.0.0.1:0", "--db",
                                          db.string(), "--http", "127.0.0.1:0"},
                                         true));
  const std::string address = testing::ReadListenAddress(server);
  ASSERT_FALSE(address.empty());
  char line[512] = {};
  ASSERT_TRUE(fgets(line, sizeof line, server.out));
  const std::string banner = line;  // "web dashboard: URL (log in with the token in FILE)"
  const auto at = banner.find("http://");
  ASSERT_NE(at, std::string::npos) << banner;
  const std::string url = banner.substr(at, banner.find(' ', at) - at);
  auto ladder = [&](std::vector<std::string> args) {
    std::vector<std::string> all = {Bin("ladder"), "--server", address, "--token-file", token_file};
    all.insert(all.end(), args.begin(), args.end());
    return testing::RunCommand(all, dir);
  };
  auto trials = ladder({"--json", "trials", "1"});
  EXPECT_EQ(trials.exit_code, 0) << trials.err;
  EXPECT_EQ(nlohmann::json::parse(trials.out, nullptr, false)["trials"].size(), 3u) << trials.out;
  auto create = ladder({"search", "start", "new.yaml"});
  EXPECT_EQ(create.exit_code, 2) << create.err;
  EXPECT_NE(create.err.find("CreateSearch refused: this coordinator serves " + db.string() + " read-only"),
            std::string::npos)
      << create.err;
  auto token = ladder({"tokens", "create", "--role", "viewer"});
  EXPECT_NE(token.exit_code, 0);
  EXPECT_NE(token.err.find("read-only"), std::string::npos) << token.err;
  testing::TempDir worker_dir("read-only-worker");
  auto worker = testing::RunCommand({Bin("ladder-worker"), "--server", address, "--token-file", token_file,
                                     "--slots", "1", "--trial-dir", (worker_dir / "trials").string()},
                                    worker_dir);
  EXPECT_EQ(worker.exit_code, 5) << worker.err;
  EXPECT_NE(worker.err.find("accepts no worker"), std::string::npos) << worker.err;
  if (testing::RunCommand({"/usr/bin/curl", "--version"}, dir).exit_code == 0) {
    std::string admin;
    std::getline(std::ifstream(token_file), admin);
    auto curl = [&](std::vector<std::string> extra, const std::string& path) {
      std::vector<std::string> args = {"/usr/bin/curl", "-s", "-o", "-", "-w", "\n%{http_code}", "--max-time", "5",
                                       "-H", "Authorization: Bearer " + admin};
      args.insert(args.end(), extra.begin(), extra.end());
      args.push_back(url + path);
      return testing::RunCommand(args, dir);
    };
    auto searches = curl({}, "api/searches");
    EXPECT_NE(searches.out.find("\"finished\""), std::string::npos) << searches.out;
    EXPECT_NE(searches.out.find("\n200"), std::string::npos) << searches.out;
    auto curves = curl({}, "api/searches/1/curves?metric=score");
    EXPECT_NE(curves.out.find("\n200"), std::string::npos) << curves.out;
    auto cancel = curl({"-X", "POST"}, "api/searches/1/cancel");
    EXPECT_NE(cancel.out.find("\n409"), std::string::npos) << cancel.out;
    EXPECT_NE(cancel.out.find("read-only"), std::string::npos) << cancel.out;
  }
  server.Kill(SIGTERM);
  EXPECT_TRUE(Of(db) == before) << "ladder-server --read-only changed the database";
  EXPECT_EQ(Names(dir), names);
  // Without a token file it does not make one (it writes nothing): it says what to pass.
  fs::rename(token_file, dir / "kept.token");
  auto no_token = testing::RunCommand(
      {Bin("ladder-server"), "--read-only", "--listen", "127.0.0.1:0", "--db", db.string()}, dir);
  EXPECT_EQ(no_token.exit_code, 1);
  EXPECT_NE(no_token.err.find("pass --token-file FILE, or --no-token"), std::string::npos) << no_token.err;
  EXPECT_FALSE(fs::exists(token_file));
}

}  // namespace
}  // namespace ladder
