// ladder-train trials inside a Charliecloud image built from the install, end to end. Once for the suite: the
// build tree installed (`cmake --install --strip` under umask 077, as an admin would) and the image built from that
// prefix and its libraries by the installed PREFIX/share/ladder/ch-image.sh (scripts/ch-image.sh). Then each test
// has uid 65534, under umask 077 with a clean environment, run ladder-server and ladder-worker from the installed
// prefix and a search whose trial is /usr/bin/ladder-train — a path only the image holds — with 2 ranks over Gloo
// in the image, unprivileged (ch-run in a user namespace), saving checkpoints through the bind of the checkpoint
// root. Once the first run's steps up to its first checkpoint are stored and that checkpoint is on the host, its
// worker is killed (kill -9) or shut down (SIGTERM); the trial resumes on a new worker from the checkpoint (not
// from step 0) and completes. Skipped where Debian's charliecloud (ch-run) is not installed, or not as root.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <thread>
#include <vector>

#include "tests/integration/system_support.h"
#include "tests/integration/test_support.h"

namespace ladder {
namespace {

namespace fs = std::filesystem;
using testing::Child;
using testing::Spawn;

constexpr int kMaxSteps = 3000;
constexpr int kCheckpointEvery = 10;

// `args` run as uid 65534 (nobody) with a clean environment and umask 077, as a user's hardened shell would.
std::vector<std::string> AsNobody(const fs::path& home, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                   "/usr/bin/env",     "-i",            "HOME=" + home.string(),
                                   "USER=nobody",      "PATH=/usr/bin:/bin",
                                   "/bin/sh",          "-c",            "umask 077 && exec \"$@\"",
                                   "sh"};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// Waits for `path` to exist (the deadline generous: the machine may be loaded); true when it does.
bool WaitForFile(const fs::path& path, std::chrono::seconds deadline) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  while (!fs::exists(path)) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Spec(const fs::path& image) {
  return "name: contained-train\nobjective: {metric: val_accuracy, mode: max}\n"
         "budget: {max_trials: 1, max_retries: 2}\nresources: {ranks_per_node: 2}\n"
         "command: [/usr/bin/ladder-train, --comm, gloo, --data, 'synthetic:512:8:4', --width, '16',\n"
         "          --batch-size, '8', --epochs, '1000', --max-steps, '" + std::to_string(kMaxSteps) + "',\n"
         "          --log-every, '1', --prefetch, '0', --lr, '{lr}', --checkpoint, '{checkpoint_dir}/model.pt',\n"
         "          --checkpoint-every, '" + std::to_string(kCheckpointEvery) + "', --resume]\n"
         "env: {OMP_NUM_THREADS: '1'}\n"
         "container: {runtime: charliecloud, image: " + image.string() + "}\n"
         "space:\n  lr: {type: categorical, values: ['0.05']}\n";
}

// The install and its image, built once for the suite (an install and 0.5 GB of libraries), in a directory of
// its own under /tmp (open to uid 65534 above its run directories), removed at the end unless a test failed.
class ContainerImage : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fs::exists("/usr/bin/ch-run") || ::geteuid() != 0) return;
    root_ = new fs::path(fs::temp_directory_path() / ("ladder-chimage-" + std::to_string(::getpid())));
    fs::remove_all(*root_);
    fs::create_directories(*root_);
    fs::permissions(*root_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                fs::perms::others_read | fs::perms::others_exec);
    const std::string build = fs::path(testing::BinDir()).parent_path().string();
    auto install = testing::RunCommand({"/bin/sh", "-c", "umask 077 && cmake --install \"$0\" --prefix \"$1\" --strip",
                                        build, Prefix().string()},
                                       *root_);
    if (install.exit_code != 0) {
      *error_ = "cmake --install: " + install.out + install.err;
      return;
    }
    // The image builder as installed (scripts/ch-image.sh), run from the prefix as a user of the module would.
    auto built = testing::RunCommand({"/bin/sh", "-c", "umask 077 && \"$0\" \"$1\" \"$2\"",
                                      (Prefix() / "share/ladder/ch-image.sh").string(), Prefix().string(),
                                      Image().string()},
                                     *root_);
    if (built.exit_code != 0) *error_ = "ch-image.sh: exit " + std::to_string(built.exit_code) + ": " + built.err;
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    if (root_ && ::testing::UnitTest::GetInstance()->failed_test_count() == 0) fs::remove_all(*root_, ec);
    delete root_;
    root_ = nullptr;
  }
  void SetUp() override {
    if (!fs::exists("/usr/bin/ch-run")) GTEST_SKIP() << "ch-run is not installed (Debian's charliecloud)";
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to run the search as uid 65534";
    ASSERT_EQ(*error_, "");
    ASSERT_TRUE(fs::exists(Image() / "usr/bin/ladder-train"));
    ASSERT_FALSE(fs::exists("/usr/bin/ladder-train")) << "the trial's binary must be the image's alone";
  }
  static fs::path Prefix() { return *root_ / "prefix"; }
  static fs::path Image() { return *root_ / "image"; }

  // A coordinator in `run` (its database, checkpoint root and the workers' trial directories there), run by
  // uid 65534 from the installed prefix, and a search of Spec() on it; its id.
  int64_t StartSearch(const fs::path& run) {
    run_ = run;
    fs::create_directories(run);
    fs::permissions(run.parent_path(), fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                                           fs::perms::others_exec, fs::perm_options::add);
    EXPECT_EQ(::chown(run.c_str(), 65534, 65534), 0);
    Spawn(&server_,
          AsNobody(run, {(Prefix() / "bin/ladder-server").string(), "--listen", "127.0.0.1:0", "--db",
                         (run / "ladder.db").string(), "--no-token", "--heartbeat-timeout-ms", "1500"}),
          true);
    address_ = testing::ReadListenAddress(server_);
    EXPECT_FALSE(address_.empty()) << "the server printed no address";
    stub_ = v1::Ladder::NewStub(grpc::CreateChannel(address_, grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    ctx.set_wait_for_ready(true);
    v1::CreateSearchRequest req;
    req.set_spec_yaml(Spec(Image()));
    v1::CreateSearchResponse resp;
    auto st = stub_->CreateSearch(&ctx, req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return resp.search().id();
  }
  // A worker as uid 65534, its trial directory under /var/tmp: outside /tmp, so not inside the image (ch-run
  // shares only /tmp with the host). The ranks still meet: their rendezvous file is in the worker's user's
  // directory under /tmp (worker/rendezvous_dir.h), not in the trial's directory.
  void StartWorker(Child* worker, const std::string& node) {
    Spawn(worker,
          AsNobody(run_, {(Prefix() / "bin/ladder-worker").string(), "--server", address_, "--node-id", node,
                          "--slots", "2", "--trial-dir", Trials(node).string()}),
          false);
    // setpriv, env and sh exec: the child's pid is the worker's.
    rendezvous_dirs_.push_back(fs::temp_directory_path() /
                               ("ladder-rendezvous-65534-" + node + "-" + std::to_string(worker->pid)));
  }
  // Once the first run's steps up to its first checkpoint are stored (a watcher hears only durable points) and
  // that checkpoint, written inside the image by rank 0, is on the host through the bind.
  bool WaitForCheckpoint(int64_t sid, const fs::path& checkpoint) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
    v1::WatchRequest req;
    req.set_search_id(sid);
    auto watch = stub_->Watch(&ctx, req);
    v1::Event ev;
    bool stored = false;
    while (!stored && watch->Read(&ev)) {
      stored = ev.kind() == v1::Event::TRIAL_METRICS && ev.metrics().step() >= kCheckpointEvery;
    }
    ctx.TryCancel();
    watch->Finish();
    return stored && WaitForFile(checkpoint, std::chrono::seconds(60));
  }
  // The step the second run's stderr says it resumed from (checked against the checkpoint's path), or -1.
  static int ResumedStep(const std::string& log, const fs::path& checkpoint) {
    std::smatch m;
    if (!std::regex_search(log, m, std::regex("resumed from (\\S+) at step ([0-9]+)"))) return -1;
    EXPECT_EQ(m[1].str(), checkpoint.string());
    return std::stoi(m[2].str());
  }

  static fs::path* root_;
  static std::string* error_;
  // A worker's trial directory: /var/tmp/ladder-chtrain-PID-NODE, uid 65534's, removed at the end unless a test
  // failed.
  fs::path Trials(const std::string& node) {
    const fs::path dir = "/var/tmp/ladder-chtrain-" + std::to_string(::getpid()) + "-" + node;
    if (!fs::exists(dir)) {
      fs::create_directories(dir);
      EXPECT_EQ(::chown(dir.c_str(), 65534, 65534), 0);
      trial_dirs_.push_back(dir);
    }
    return dir;
  }
  void TearDown() override {
    std::error_code ec;
    for (const auto& d : trial_dirs_) {
      if (!HasFailure()) fs::remove_all(d, ec);
    }
    // A worker killed with SIGKILL leaves its rendezvous directory (worker/rendezvous_dir.h) to a successor on its
    // node: this test's workers are stopped, so their directories go here (another test's, still running, stay).
    for (const auto& d : rendezvous_dirs_) fs::remove_all(d, ec);
  }
  fs::path run_;
  std::vector<fs::path> trial_dirs_, rendezvous_dirs_;
  Child server_;
  std::string address_;
  std::unique_ptr<v1::Ladder::Stub> stub_;
};
fs::path* ContainerImage::root_ = nullptr;
std::string* ContainerImage::error_ = new std::string;

// kill -9 of the worker: its run is lost (an attempt), and the next resumes from the last checkpoint saved.
TEST_F(ContainerImage, LadderTrainRanksResumeFromTheirCheckpointAfterTheirWorkerIsKilled) {
  testing::TempDir dir("chtrain-kill");
  const fs::path run = dir / "run";
  const int64_t sid = StartSearch(run);
  ASSERT_FALSE(HasFailure());
  Child worker_a;
  StartWorker(&worker_a, "a");
  const fs::path ckpt = run / ("ladder.db.checkpoints/search-" + std::to_string(sid) + "/trial-1/model.pt");
  ASSERT_TRUE(WaitForCheckpoint(sid, ckpt)) << Slurp(Trials("a") / "trial-1/stderr.log");
  worker_a.Kill(SIGKILL);
  Child worker_b;
  StartWorker(&worker_b, "b");
  auto ended = testing::WaitForSearchEnd(*stub_, sid, std::chrono::seconds(240));
  const std::string logs_b = Slurp(Trials("b") / "trial-1/stderr.log");
  ASSERT_TRUE(ended) << "the search did not end\n" << logs_b;
  EXPECT_EQ(ended->state(), v1::SEARCH_COMPLETED) << ended->error() << "\n" << logs_b;

  const auto db = run / "ladder.db";
  const auto trial = testing::Query(db, "SELECT attempt FROM trials");
  ASSERT_EQ(trial.size(), 1u);
  EXPECT_EQ(trial[0][0], "1") << "the killed worker's run counts as an attempt";
  const auto runs = testing::Query(db, "SELECT outcome FROM allocations ORDER BY id");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_NE(runs[0][0], "exited") << "the first run was killed before its end";
  EXPECT_EQ(runs[1][0], "exited");
  // The second run resumed from a checkpoint the first saved (never from step 0), and trained to the last step.
  const auto steps = testing::Query(db, "SELECT MAX(step), SUM(step = 1) FROM metrics WHERE name = 'lr'");
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0][0], std::to_string(kMaxSteps));
  EXPECT_EQ(steps[0][1], "1") << "step 1 stored once, by the first run: the second did not start over";
  const int resumed = ResumedStep(logs_b, ckpt);
  EXPECT_GE(resumed, kCheckpointEvery) << logs_b;
  EXPECT_LT(resumed, kMaxSteps);
  EXPECT_EQ(resumed % kCheckpointEvery, 0) << resumed;
  // Written through the bind by the unprivileged rank 0: the host's file is uid 65534's.
  struct stat ck {};
  ASSERT_EQ(::stat(ckpt.c_str(), &ck), 0);
  EXPECT_EQ(ck.st_uid, 65534u);
  worker_b.Kill(SIGTERM);
  server_.Kill(SIGTERM);
}

// A worker's shutdown (SIGTERM): the worker signals its ranks' process groups, which reaches ladder-train inside
// ch-run (it execs: no runtime process between); the ranks agree on a step, rank 0 saves it through the bind, and
// the trial, preempted with no attempt counted, resumes on another worker from exactly that step: every step once.
TEST_F(ContainerImage, LadderTrainRanksStopThroughTheirCheckpointWhenTheirWorkerShutsDownAndResume) {
  testing::TempDir dir("chtrain-term");
  const fs::path run = dir / "run";
  const int64_t sid = StartSearch(run);
  ASSERT_FALSE(HasFailure());
  Child worker_a;
  StartWorker(&worker_a, "a");
  const fs::path ckpt = run / ("ladder.db.checkpoints/search-" + std::to_string(sid) + "/trial-1/model.pt");
  ASSERT_TRUE(WaitForCheckpoint(sid, ckpt)) << Slurp(Trials("a") / "trial-1/stderr.log");
  worker_a.Kill(SIGTERM);  // returns once the worker has exited: its ranks stopped and reported first
  Child worker_b;
  StartWorker(&worker_b, "b");
  auto ended = testing::WaitForSearchEnd(*stub_, sid, std::chrono::seconds(240));
  const std::string logs_a = Slurp(Trials("a") / "trial-1/stderr.log");
  const std::string logs_b = Slurp(Trials("b") / "trial-1/stderr.log");
  ASSERT_TRUE(ended) << "the search did not end\n" << logs_b;
  EXPECT_EQ(ended->state(), v1::SEARCH_COMPLETED) << ended->error() << "\n" << logs_b;

  const auto db = run / "ladder.db";
  const auto trial = testing::Query(db, "SELECT attempt FROM trials");
  ASSERT_EQ(trial.size(), 1u);
  EXPECT_EQ(trial[0][0], "0") << "a worker's shutdown costs no attempt";
  const auto runs = testing::Query(db, "SELECT outcome FROM allocations ORDER BY id");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0][0], "preempted");
  EXPECT_EQ(runs[1][0], "exited");
  EXPECT_NE(logs_a.find("stopped by signal"), std::string::npos) << logs_a;
  // Training lines carry lr: one per step, 1 to the last, each stored once (the second run began after the step
  // the first saved at its stop, which was its last).
  const auto steps = testing::Query(db, "SELECT COUNT(*), COUNT(DISTINCT step), MIN(step), MAX(step) FROM metrics "
                                        "WHERE name = 'lr'");
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0][0], steps[0][1]) << "a step stored twice";
  EXPECT_EQ(steps[0][2], "1");
  EXPECT_EQ(steps[0][3], std::to_string(kMaxSteps));
  EXPECT_EQ(steps[0][0], std::to_string(kMaxSteps)) << "a step missing";
  const int resumed = ResumedStep(logs_b, ckpt);
  EXPECT_GT(resumed, 0) << logs_b;
  EXPECT_LT(resumed, kMaxSteps);
  worker_b.Kill(SIGTERM);
  server_.Kill(SIGTERM);
}

}  // namespace
}  // namespace ladder
