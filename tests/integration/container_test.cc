// Trials in a Charliecloud image (`container:`, server/container_command.h), end to end on the real binaries: a
// search run by uid 65534 (ladder demo: its coordinator and worker), whose two ranks run inside an image directory
// built here (a file only the image holds proves where they ran), unprivileged (ch-run in a user namespace), with
// their rank variables passed through and their output written through the bind of the checkpoint root onto the
// host. Skipped where Debian's charliecloud (ch-run) is not installed, or not as root.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "tests/integration/system_support.h"
#include "tests/support/process.h"

namespace ladder {
namespace {

namespace fs = std::filesystem;

// An image directory holding /bin/sh, cat, echo, test and the libraries they load, and /IMAGE-MARKER.
std::string BuildImage(const fs::path& image) {
  for (const char* d : {"bin", "etc", "tmp", "proc", "dev", "sys", "home", "usr"}) fs::create_directories(image / d);
  std::set<std::string> files = {"/bin/sh", "/bin/cat"};
  auto ldd = testing::RunCommand({"/usr/bin/ldd", "/bin/sh", "/bin/cat"}, image.parent_path());
  if (ldd.exit_code != 0) return "ldd failed: " + ldd.err;
  std::istringstream lines(ldd.out);
  for (std::string word; lines >> word;) {
    if (word.front() == '/' && word.find(".so") != std::string::npos) files.insert(word);
  }
  for (const auto& f : files) {
    const fs::path to = image / fs::path(f).relative_path();
    fs::create_directories(to.parent_path());
    std::error_code ec;
    fs::copy_file(fs::canonical(f), to, fs::copy_options::overwrite_existing, ec);
    if (ec) return "cannot copy " + f + ": " + ec.message();
    fs::permissions(to, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                            fs::perms::others_read | fs::perms::others_exec);
  }
  std::ofstream(image / "etc" / "passwd") << "root:x:0:0::/:/bin/sh\n";
  std::ofstream(image / "etc" / "group") << "root:x:0:\n";
  std::ofstream(image / "IMAGE-MARKER") << "inside\n";
  return "";
}

TEST(ContainerTrials, TwoRanksRunInsideACharliecloudImageAsAnUnprivilegedUserAndWriteThroughTheBind) {
  if (!fs::exists("/usr/bin/ch-run")) GTEST_SKIP() << "ch-run is not installed (Debian's charliecloud)";
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run the search as uid 65534";
  testing::TempDir dir("container");
  ASSERT_EQ(BuildImage(dir / "image"), "");
  // The search runs as uid 65534 in a directory of its own (readable above it whatever the umask).
  fs::permissions(dir.path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec);
  const auto readable = fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec;
  for (const auto& e : fs::recursive_directory_iterator(dir / "image")) {
    fs::permissions(e.path(), e.is_directory() ? readable : fs::perms::group_read | fs::perms::others_read,
                    fs::perm_options::add);
  }
  fs::permissions(dir / "image", readable, fs::perm_options::add);
  const fs::path run_dir = dir / "run";
  fs::create_directories(run_dir);
  // Each rank writes what it saw into the checkpoint directory (bound from the host), then rank 0 reports.
  const std::string script =
      "cat /IMAGE-MARKER > $LADDER_CHECKPOINT_DIR/rank-$RANK && echo $RANK of $WORLD_SIZE at $MASTER_ADDR:$MASTER_PORT "
      ">> $LADDER_CHECKPOINT_DIR/rank-$RANK && if [ $RANK = 0 ]; then echo \"{{\\\"step\\\": 1, \\\"score\\\": 1}}\"; fi";
  std::ofstream(run_dir / "spec.yaml") << "name: contained\nobjective: {metric: score, mode: max}\n"
                                          "budget: {max_trials: 1}\nresources: {ranks_per_node: 2}\n"
                                          "command: [/bin/sh, -c, '" << script << "']\n"
                                          "container: {runtime: charliecloud, image: "
                                       << (dir / "image").string() << "}\nspace:\n  x: {type: float, low: 0, high: 1}\n";
  ASSERT_EQ(::chown(run_dir.c_str(), 65534, 65534), 0);
  ASSERT_EQ(::chown((run_dir / "spec.yaml").c_str(), 65534, 65534), 0);
  ASSERT_FALSE(fs::exists("/IMAGE-MARKER")) << "the marker must be the image's alone";
  auto run = testing::RunCommand({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                  "/usr/bin/env", "-i", "HOME=" + run_dir.string(), "USER=nobody",
                                  "PATH=/usr/bin:/bin", testing::BinDir() + "/ladder", "--server", "127.0.0.1:0",
                                  "demo", "--spec", "spec.yaml", "--db", "ladder.db"},
                                 run_dir);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  std::set<std::string> ranks;
  for (const auto& e : fs::recursive_directory_iterator(run_dir / "ladder.db.checkpoints")) {
    if (e.path().filename().string().rfind("rank-", 0) != 0) continue;
    struct stat st {};
    ASSERT_EQ(::stat(e.path().c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 65534u) << e.path() << ": written by the unprivileged rank";
    std::ifstream in(e.path());
    std::string marker, rank, of, world;
    std::getline(in, marker);
    in >> rank >> of >> world;
    EXPECT_EQ(marker, "inside") << e.path();
    EXPECT_EQ(world, "2") << e.path();
    ranks.insert(rank);
  }
  EXPECT_EQ(ranks, (std::set<std::string>{"0", "1"}));
}

}  // namespace
}  // namespace ladder
