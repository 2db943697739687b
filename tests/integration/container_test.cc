// Trials in a Charliecloud image (`container:`, server/container_command.h), end to end on the real binaries: a
// search run by uid 65534 (ladder demo: its coordinator and worker, from a copy of `ladder` in the test's own
// directory, open to that user whatever the umask), whose ranks run inside an image directory built here (a file
// only the image holds proves where they ran), unprivileged (ch-run in a user namespace), with their rank variables
// passed through and their output written through the binds: of the checkpoint root, and of the worker's trial
// directory (LADDER_TRIAL_DIR, at the image's /mnt/9), kept outside /tmp so that only its bind reaches it. Skipped
// where Debian's charliecloud (ch-run) is not installed, or not as root.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/system_support.h"
#include "tests/support/process.h"

namespace ladder {
namespace {

namespace fs = std::filesystem;

constexpr auto kOpen = fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                       fs::perms::others_read | fs::perms::others_exec;

// An image directory holding /bin/sh, cat and the libraries they load, /IMAGE-MARKER, the mount point /mnt/9 (the
// trial directory's: Charliecloud's ch-image makes /mnt/0-9 in every image) and `dirs` (binds' destinations).
std::string BuildImage(const fs::path& image, const std::vector<fs::path>& dirs = {}) {
  for (const char* d : {"bin", "etc", "tmp", "proc", "dev", "sys", "home", "usr", "mnt/9"}) {
    fs::create_directories(image / d);
  }
  for (const auto& d : dirs) fs::create_directories(image / d.relative_path());
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
    fs::permissions(to, kOpen);
  }
  std::ofstream(image / "etc" / "passwd") << "root:x:0:0::/:/bin/sh\n";
  std::ofstream(image / "etc" / "group") << "root:x:0:\n";
  std::ofstream(image / "IMAGE-MARKER") << "inside\n";
  // Readable by uid 65534 whatever the umask.
  const auto readable = fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec;
  for (const auto& e : fs::recursive_directory_iterator(image)) {
    fs::permissions(e.path(), e.is_directory() ? readable : fs::perms::group_read | fs::perms::others_read,
                    fs::perm_options::add);
  }
  fs::permissions(image, readable, fs::perm_options::add);
  return "";
}

// `ladder` copied into `dir`/bin, open to uid 65534 (the build tree may not be, under umask 077); its path.
std::string CopyLadder(const fs::path& dir) {
  fs::create_directories(dir / "bin");
  fs::permissions(dir / "bin", kOpen);
  const fs::path to = dir / "bin" / "ladder";
  fs::copy_file(testing::BinDir() + "/ladder", to, fs::copy_options::overwrite_existing);
  fs::permissions(to, kOpen);
  return to.string();
}

// `ladder demo --spec spec.yaml` run in `run_dir` by uid 65534 with a clean environment.
testing::CommandResult DemoAsNobody(const std::string& ladder, const fs::path& run_dir) {
  return testing::RunCommand({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/env",
                              "-i", "HOME=" + run_dir.string(), "USER=nobody", "PATH=/usr/bin:/bin", ladder,
                              "--server", "127.0.0.1:0", "demo", "--spec", "spec.yaml", "--db", "ladder.db"},
                             run_dir);
}

// A spec of one trial of `ranks` ranks running `script` in the image at `image`.
std::string ShSpec(const fs::path& image, int ranks, const std::string& script) {
  return "name: contained\nobjective: {metric: score, mode: max}\nbudget: {max_trials: 1}\n"
         "resources: {ranks_per_node: " + std::to_string(ranks) + "}\ncommand: [/bin/sh, -c, '" + script + "']\n"
         "container: {runtime: charliecloud, image: " + image.string() + "}\n"
         "space:\n  x: {type: float, low: 0, high: 1}\n";
}

TEST(ContainerTrials, TwoRanksRunInsideACharliecloudImageAsAnUnprivilegedUserAndWriteThroughTheBind) {
  if (!fs::exists("/usr/bin/ch-run")) GTEST_SKIP() << "ch-run is not installed (Debian's charliecloud)";
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run the search as uid 65534";
  testing::TempDir dir("container");
  ASSERT_EQ(BuildImage(dir / "image"), "");
  // The search runs as uid 65534 in a directory of its own (readable above it whatever the umask).
  fs::permissions(dir.path, kOpen);
  const std::string ladder = CopyLadder(dir);
  const fs::path run_dir = dir / "run";
  fs::create_directories(run_dir);
  // Each rank writes what it saw into the checkpoint directory (bound from the host), then rank 0 reports.
  const std::string script =
      "cat /IMAGE-MARKER > $LADDER_CHECKPOINT_DIR/rank-$RANK && echo $RANK of $WORLD_SIZE at $MASTER_ADDR:$MASTER_PORT "
      ">> $LADDER_CHECKPOINT_DIR/rank-$RANK && if [ $RANK = 0 ]; then echo \"{{\\\"step\\\": 1, \\\"score\\\": 1}}\"; fi";
  std::ofstream(run_dir / "spec.yaml") << ShSpec(dir / "image", 2, script);
  ASSERT_EQ(::chown(run_dir.c_str(), 65534, 65534), 0);
  ASSERT_EQ(::chown((run_dir / "spec.yaml").c_str(), 65534, 65534), 0);
  ASSERT_FALSE(fs::exists("/IMAGE-MARKER")) << "the marker must be the image's alone";
  auto run = DemoAsNobody(ladder, run_dir);
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

// A directory of the test's own outside /tmp (which ch-run shares with the image), uid 65534's, removed at the end
// unless the test failed.
struct DirOutsideTmp {
  fs::path path = fs::path("/var/tmp") / ("ladder-container-" + std::to_string(::getpid()));
  DirOutsideTmp() {
    fs::remove_all(path);
    fs::create_directories(path);
    fs::permissions(path, kOpen);
  }
  ~DirOutsideTmp() {
    std::error_code ec;
    if (!::testing::Test::HasFailure()) fs::remove_all(path, ec);
  }
};

// The worker's trial directory (ladder demo's: ladder-trials beside the database) is outside /tmp and outside the
// image: the rank inside reaches it only through its bind at /mnt/9, which its LADDER_TRIAL_DIR names. It reads
// what the worker put there (its stderr.log) and writes a file the test finds in the worker's trial directory.
TEST(ContainerTrials, ARankReadsAndWritesItsTrialDirectoryInsideTheImageAndTheWorkerFindsItOnTheHost) {
  if (!fs::exists("/usr/bin/ch-run")) GTEST_SKIP() << "ch-run is not installed (Debian's charliecloud)";
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run the search as uid 65534";
  testing::TempDir dir("container-trialdir");
  fs::permissions(dir.path, kOpen);
  const DirOutsideTmp outside;
  const fs::path run_dir = outside.path / "run";
  // The checkpoint root beside the database is outside /tmp too: its mount point in the image (ch-image.sh --dir).
  ASSERT_EQ(BuildImage(dir / "image", {run_dir / "ladder.db.checkpoints"}), "");
  ASSERT_FALSE(fs::exists(dir / "image" / run_dir.relative_path() / "ladder-trials"));
  const std::string ladder = CopyLadder(dir);
  fs::create_directories(run_dir);
  const std::string script =
      "cat /IMAGE-MARKER > $LADDER_TRIAL_DIR/from-rank && echo $LADDER_TRIAL_DIR >> $LADDER_TRIAL_DIR/from-rank && "
      "if [ -f $LADDER_TRIAL_DIR/stderr.log ]; then echo saw-stderr-log >> $LADDER_TRIAL_DIR/from-rank; fi && "
      "echo \"{{\\\"step\\\": 1, \\\"score\\\": 1}}\"";
  std::ofstream(run_dir / "spec.yaml") << ShSpec(dir / "image", 1, script);
  ASSERT_EQ(::chown(run_dir.c_str(), 65534, 65534), 0);
  ASSERT_EQ(::chown((run_dir / "spec.yaml").c_str(), 65534, 65534), 0);
  auto run = DemoAsNobody(ladder, run_dir);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const fs::path written = run_dir / "ladder-trials" / "trial-1" / "from-rank";
  ASSERT_TRUE(fs::exists(written)) << run.out << run.err;
  struct stat st {};
  ASSERT_EQ(::stat(written.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 65534u) << "written by the unprivileged rank";
  std::ifstream in(written);
  std::string marker, trial_dir, saw;
  std::getline(in, marker);
  std::getline(in, trial_dir);
  std::getline(in, saw);
  EXPECT_EQ(marker, "inside") << "written inside the image";
  EXPECT_EQ(trial_dir, "/mnt/9") << "the rank's LADDER_TRIAL_DIR: the bind's mount point";
  EXPECT_EQ(saw, "saw-stderr-log") << "the rank sees what the worker keeps in the trial directory";
}

}  // namespace
}  // namespace ladder
