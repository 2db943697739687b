// ladder-train trials inside a Charliecloud image built from the install, end to end: the build tree installed
// (`cmake --install --strip` under umask 077, as an admin would), the image built from that prefix and its libraries
// by the installed PREFIX/share/ladder/ch-image.sh (scripts/ch-image.sh), then a search run by uid 65534 under umask
// 077 (ladder-server and ladder-worker from the installed prefix) whose trial is /usr/bin/ladder-train — a path
// only the image holds — with 2 ranks over Gloo in the image, unprivileged (ch-run in a user namespace), saving
// checkpoints through the bind of the checkpoint root. The worker is killed (kill -9) once the first run's steps up
// to its first checkpoint are stored and that checkpoint is on the host; the trial is requeued, resumes on a new
// worker from that checkpoint (not from step 0) and completes. Skipped where Debian's charliecloud (ch-run) is not
// installed, or not as root.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

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

TEST(ContainerImage, LadderTrainRanksInAnImageBuiltFromTheInstallResumeFromTheirCheckpointAfterAKill) {
  if (!fs::exists("/usr/bin/ch-run")) GTEST_SKIP() << "ch-run is not installed (Debian's charliecloud)";
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run the search as uid 65534";
  ASSERT_FALSE(fs::exists("/usr/bin/ladder-train")) << "the trial's binary must be the image's alone";
  testing::TempDir dir("chtrain");
  fs::permissions(dir.path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec);
  const fs::path prefix = dir / "prefix", image = dir / "image", run = dir / "run";
  const std::string build = fs::path(testing::BinDir()).parent_path().string();
  auto install = testing::RunCommand(
      {"/bin/sh", "-c", "umask 077 && cmake --install \"$0\" --prefix \"$1\" --strip", build, prefix.string()}, dir);
  ASSERT_EQ(install.exit_code, 0) << install.out << install.err;
  // The image builder as installed (scripts/ch-image.sh), run from the prefix as a user of the module would.
  auto built = testing::RunCommand({"/bin/sh", "-c", "umask 077 && \"$0\" \"$1\" \"$2\"",
                                    (prefix / "share/ladder/ch-image.sh").string(), prefix.string(), image.string()},
                                   dir);
  ASSERT_EQ(built.exit_code, 0) << built.out << built.err;
  ASSERT_TRUE(fs::exists(image / "usr/bin/ladder-train")) << built.out;

  fs::create_directories(run);
  ASSERT_EQ(::chown(run.c_str(), 65534, 65534), 0);
  Child server;
  Spawn(&server,
        AsNobody(run, {(prefix / "bin/ladder-server").string(), "--listen", "127.0.0.1:0", "--db",
                       (run / "ladder.db").string(), "--no-token", "--heartbeat-timeout-ms", "1500"}),
        true);
  const std::string address = testing::ReadListenAddress(server);
  ASSERT_FALSE(address.empty()) << "the server printed no address";
  // A worker's trial directory holds the ranks' rendezvous file: under /tmp, which ch-run shares with the host.
  auto worker = [&](const std::string& node) {
    return AsNobody(run, {(prefix / "bin/ladder-worker").string(), "--server", address, "--node-id", node,
                          "--slots", "2", "--trial-dir", (run / ("trials-" + node)).string()});
  };
  Child worker_a;
  Spawn(&worker_a, worker("a"), false);

  auto stub = v1::Ladder::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext cctx;
  cctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  cctx.set_wait_for_ready(true);
  v1::CreateSearchRequest req;
  req.set_spec_yaml(Spec(image));
  v1::CreateSearchResponse resp;
  auto st = stub->CreateSearch(&cctx, req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  const int64_t sid = resp.search().id();
  const fs::path trial_ckpt = run / ("ladder.db.checkpoints/search-" + std::to_string(sid) + "/trial-1");

  // Once the first run's steps up to its first checkpoint are stored (a watcher hears only durable points) and
  // that checkpoint, written inside the image by rank 0, is on the host through the bind: kill the worker.
  grpc::ClientContext wctx;
  wctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
  v1::WatchRequest wreq;
  wreq.set_search_id(sid);
  auto watch = stub->Watch(&wctx, wreq);
  v1::Event ev;
  bool stored = false;
  while (!stored && watch->Read(&ev)) {
    stored = ev.kind() == v1::Event::TRIAL_METRICS && ev.metrics().step() >= kCheckpointEvery;
  }
  wctx.TryCancel();
  watch->Finish();
  ASSERT_TRUE(stored) << Slurp(run / "trials-a/trial-1/stderr.log");
  ASSERT_TRUE(WaitForFile(trial_ckpt / "model.pt", std::chrono::seconds(60)))
      << Slurp(run / "trials-a/trial-1/stderr.log");
  worker_a.Kill(SIGKILL);
  Child worker_b;
  Spawn(&worker_b, worker("b"), false);
  auto ended = testing::WaitForSearchEnd(*stub, sid, std::chrono::seconds(240));
  const std::string logs_b = Slurp(run / "trials-b/trial-1/stderr.log");
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
  std::smatch m;
  ASSERT_TRUE(std::regex_search(logs_b, m, std::regex("resumed from (\\S+) at step ([0-9]+)"))) << logs_b;
  EXPECT_EQ(m[1].str(), (trial_ckpt / "model.pt").string());
  const int resumed = std::stoi(m[2].str());
  EXPECT_GE(resumed, kCheckpointEvery);
  EXPECT_LT(resumed, kMaxSteps);
  EXPECT_EQ(resumed % kCheckpointEvery, 0) << resumed;
  // Written through the bind by the unprivileged rank 0: the host's file is uid 65534's.
  struct stat ck {};
  ASSERT_EQ(::stat((trial_ckpt / "model.pt").c_str(), &ck), 0);
  EXPECT_EQ(ck.st_uid, 65534u);
  worker_b.Kill(SIGTERM);
  server.Kill(SIGTERM);
}

}  // namespace
}  // namespace ladder
