// The coordinator's lease on its database (server/store/store_lease.cc) where file locks do nothing, as on a
// parallel filesystem whose locks are node-local: ladder-server runs under a test-only LD_PRELOAD shim
// (tests/support/no_file_locks.c) that makes flock(2) (and, for the frozen coordinator, fcntl(2)'s locks) succeed
// without locking, and a coordinator "on another login node" runs in a UTS namespace of its own hostname.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/integration/system_support.h"
#include "tests/support/process.h"

namespace ladder {
namespace {

using Steady = std::chrono::steady_clock;

constexpr const char* kOtherHost = "ladder-test-login1";
constexpr int kLeaseMs = 4000;

std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string ThisHost() {
  char name[HOST_NAME_MAX + 1] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

struct Launch {
  std::string host;            // "": this host's name; else a UTS namespace of that name (needs root)
  bool no_fcntl_locks = false;  // the shim's fcntl part too
  std::string flags;            // more of ladder-server's flags
};

// Starts ladder-server over `db` without working file locks, its stderr into `err`; the pid stays the server's
// (every wrapper execs). Returns its address, or "" when it exited instead of serving (then it is reaped).
std::string Start(testing::Child* c, const std::filesystem::path& db, const std::filesystem::path& err,
                  const Launch& how) {
  std::string cmd = "exec env LD_PRELOAD=" LADDER_NO_FILE_LOCKS " LADDER_NO_FCNTL_LOCKS=" +
                    std::string(how.no_fcntl_locks ? "1" : "0") + " " + testing::BinDir() +
                    "/ladder-server --listen 127.0.0.1:0 --no-token --db-lease-timeout-ms " +
                    std::to_string(kLeaseMs) + " --db " + db.string() + " " + how.flags + " 2>" + err.string();
  if (!how.host.empty()) cmd = "hostname " + how.host + " && " + cmd;
  std::vector<std::string> args = {"/bin/sh", "-c", cmd};
  if (!how.host.empty()) args.insert(args.begin(), {"/usr/bin/unshare", "--uts"});
  testing::Spawn(c, args, /*capture_stdout=*/true);
  std::string address = testing::ReadListenAddress(*c);
  if (address.empty()) {
    int status = 0;
    ::waitpid(c->pid, &status, 0);
    c->pid = -1;
  }
  return address;
}

// Starts a coordinator until one serves (each refusal must name the holder), within a generous deadline.
std::string StartOnceTheLeaseExpires(testing::Child* c, const std::filesystem::path& db,
                                     const std::filesystem::path& err, const Launch& how, int* refusals) {
  const auto deadline = Steady::now() + std::chrono::seconds(90);
  while (Steady::now() < deadline) {
    if (std::string address = Start(c, db, err, how); !address.empty()) return address;
    ++*refusals;
    const std::string said = Slurp(err);
    EXPECT_NE(said.find("is held by the coordinator on host"), std::string::npos) << said;
    if (::testing::Test::HasFailure()) return "";
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  ADD_FAILURE() << "no coordinator took the lease over within 90 s";
  return "";
}

bool CanUnshareUts() {
  return testing::RunCommand({"/usr/bin/unshare", "--uts", "/bin/true"}, std::filesystem::temp_directory_path())
             .exit_code == 0;
}

TEST(DbLease, ASecondCoordinatorWithoutWorkingFileLocksIsRefusedNamingTheHolder) {
  testing::TempDir dir("db-lease-second");
  const auto db = dir / "ladder.db";
  testing::Child first, second;
  ASSERT_NE(Start(&first, db, dir / "first.err", {}), "") << Slurp(dir / "first.err");

  EXPECT_EQ(Start(&second, db, dir / "second.err", {}), "") << "a second coordinator served the same database";
  const std::string said = Slurp(dir / "second.err");
  EXPECT_NE(said.find("the database " + db.string() + " is held by the coordinator on host " + ThisHost() +
                      ", pid " + std::to_string(first.pid) + ", since "),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("stop it first, or wait "), std::string::npos) << said;
  EXPECT_NE(said.find(" s for its lease to expire if it crashed"), std::string::npos) << said;

  // The first still holds it, and a clean stop releases it: the next start need not wait.
  first.Kill(SIGTERM);
  EXPECT_TRUE(testing::Query(db, "SELECT holder FROM coordinator_lease").empty());
  testing::Child third;
  EXPECT_NE(Start(&third, db, dir / "third.err", {}), "") << Slurp(dir / "third.err");
  EXPECT_EQ(Slurp(dir / "third.err").find("took over"), std::string::npos) << "a released lease is not taken over";
}

TEST(DbLease, AfterKill9OfACoordinatorOnAnotherHostTheNextTakesOverOnlyAfterTheTimeoutAndSaysSo) {
  if (!CanUnshareUts()) GTEST_SKIP() << "needs unshare --uts (root) for a coordinator on another host name";
  testing::TempDir dir("db-lease-crash");
  const auto db = dir / "ladder.db";
  testing::Child first, second;
  ASSERT_NE(Start(&first, db, dir / "first.err", {kOtherHost}), "") << Slurp(dir / "first.err");
  const pid_t first_pid = first.pid;
  first.Kill(SIGKILL);

  int refusals = 0;
  ASSERT_NE(StartOnceTheLeaseExpires(&second, db, dir / "second.err", {}, &refusals), "");
  EXPECT_GE(refusals, 1) << "the crashed coordinator's lease was taken before its timeout";
  const std::string said = Slurp(dir / "second.err");
  EXPECT_NE(said.find("took over the lease on " + db.string() + " from the coordinator on host " +
                      std::string(kOtherHost) + ", pid " + std::to_string(first_pid) + ", since "),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("past its timeout of 4.0 s"), std::string::npos) << said;
  auto rows = testing::Query(db, "SELECT host, pid FROM coordinator_lease");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{ThisHost(), std::to_string(second.pid)}));
}

// ladder up --slurm's coordinator (a requeued job, maybe on another node) waits for the lease instead of failing.
TEST(DbLease, ACoordinatorToldToWaitForTheLeaseTakesItOverOnceItExpires) {
  if (!CanUnshareUts()) GTEST_SKIP() << "needs unshare --uts (root) for a coordinator on another host name";
  testing::TempDir dir("db-lease-wait");
  const auto db = dir / "ladder.db";
  testing::Child first, second;
  ASSERT_NE(Start(&first, db, dir / "first.err", {kOtherHost}), "") << Slurp(dir / "first.err");
  const pid_t first_pid = first.pid;
  first.Kill(SIGKILL);
  ASSERT_NE(Start(&second, db, dir / "second.err", {"", false, "--db-lease-wait-ms 60000"}), "")
      << Slurp(dir / "second.err");
  const std::string said = Slurp(dir / "second.err");
  const std::string holder = "the coordinator on host " + std::string(kOtherHost) + ", pid " + std::to_string(first_pid);
  const auto waited = said.find("waiting for the lease: the database " + db.string() + " is held by " + holder);
  const auto took = said.find("took over the lease on " + db.string() + " from " + holder);
  EXPECT_NE(waited, std::string::npos) << said;
  EXPECT_NE(took, std::string::npos) << said;
  EXPECT_LT(waited, took) << said;
}

// Waits (a generous deadline) for `pid` to exit; its exit code, or -1.
int WaitExit(pid_t pid) {
  for (auto deadline = Steady::now() + std::chrono::seconds(60); Steady::now() < deadline;) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return -1;
}

TEST(DbLease, AFrozenCoordinatorWhoseLeaseWasTakenStopsWritingAndExits) {
  if (!CanUnshareUts()) GTEST_SKIP() << "needs unshare --uts (root) for a coordinator on another host name";
  testing::TempDir dir("db-lease-frozen");
  const auto db = dir / "ladder.db";
  testing::Child first, second;
  ASSERT_NE(Start(&first, db, dir / "first.err", {kOtherHost, true}), "") << Slurp(dir / "first.err");
  ASSERT_EQ(::kill(first.pid, SIGSTOP), 0);

  int refusals = 0;
  ASSERT_NE(StartOnceTheLeaseExpires(&second, db, dir / "second.err", {"", true}, &refusals), "");
  ASSERT_EQ(::kill(first.pid, SIGCONT), 0);
  const int code = WaitExit(first.pid);
  if (code >= 0) first.pid = -1;
  EXPECT_EQ(code, 1) << "the coordinator whose lease was taken went on";
  // It names the new holder when it sees its row (its next batch's check), or says why it stops when it was frozen
  // inside a batch (a commit past half the lease): with SQLite's locks doing nothing it may not see the other's
  // commits at all, as on another host.
  const std::string said = Slurp(dir / "first.err");
  EXPECT_TRUE(said.find("is held by the coordinator on host " + ThisHost() + ", pid " + std::to_string(second.pid) +
                        ", since ") != std::string::npos ||
              said.find("past half its timeout (4.0 s): it was held up") != std::string::npos)
      << said;
  EXPECT_NE(said.find("ladder-server: the database " + db.string() + " failed: "), std::string::npos) << said;
  // The second one's lease stands, and it still serves.
  auto rows = testing::Query(db, "SELECT host, pid FROM coordinator_lease");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{ThisHost(), std::to_string(second.pid)}));
  EXPECT_EQ(::waitpid(second.pid, nullptr, WNOHANG), 0) << "the coordinator holding the lease stopped";
}

}  // namespace
}  // namespace ladder
