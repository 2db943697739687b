// WarmStarter with the real ladder-train: a warm-started trial behaves as a cold-started one (exit code, stdout,
// stderr, environment, working directory, signals to its process group, death with its worker), and anything
// that is not ladder-train starts cold.
#include "worker/warm_start.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "trainer/zygote_protocol.h"
#include "tests/support/proc_stat.h"

namespace ladder::worker {
namespace {

namespace fs = std::filesystem;

std::string BinDir() {
  const char* d = std::getenv("LADDER_TEST_BIN_DIR");
  return d && *d ? d : LADDER_TEST_BIN_DIR;
}

struct Outcome {
  std::vector<std::string> lines;
  bool exited = false;
  int code = -999;
  std::string desc;
};

TrialProcess::LineFn Lines(Outcome* o) {
  return [o](const std::string& l, bool) { o->lines.push_back(l); };
}
TrialProcess::ExitFn Exit(Outcome* o) {
  return [o](int code, const std::string& d) {
    o->exited = true;
    o->code = code;
    o->desc = d;
  };
}

bool RunUntil(boost::asio::io_context& loop, const std::function<bool()>& done,
              std::chrono::seconds timeout = std::chrono::seconds(60)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  loop.restart();
  while (!done() && std::chrono::steady_clock::now() < deadline) loop.run_one_for(std::chrono::milliseconds(50));
  return done();
}

bool Running(int pid) {
  const char state = testing::ReadProcStat(pid).state;
  return state != '?' && state != 'Z';
}
bool GoneWithin(int pid, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (Running(pid) && std::chrono::steady_clock::now() < deadline) usleep(10000);
  return !Running(pid);
}

class WarmStartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ladder-warm-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    warm_ = std::make_unique<WarmStarter>(loop_, dir_.string());
  }
  void TearDown() override {
    warm_.reset();
    fs::remove_all(dir_);
  }
  LaunchSpec Train(std::vector<std::string> args) {
    LaunchSpec spec;
    spec.argv = {"ladder-train"};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.search_dirs = {BinDir()};
    spec.stderr_path = (dir_ / "stderr.log").string();
    return spec;
  }
  // Starts the zygote for `spec` (the first launch starts cold: its result is dropped) and waits until it is ready.
  void WarmUp(const LaunchSpec& spec) {
    std::string why;
    Outcome ignored;
    ASSERT_FALSE(warm_->Launch(spec, Lines(&ignored), Exit(&ignored), &why));
    ASSERT_EQ(why, "its warm-start process is starting");
    bool ready = false;
    ASSERT_TRUE(RunUntil(loop_, [&] {
      warm_->ZygotePid(spec, &ready);
      return ready;
    })) << "the zygote did not become ready; its log: " << dir_ / "zygote-1.log";
  }
  std::shared_ptr<TrialProcess> StartWarm(const LaunchSpec& spec, Outcome* out) {
    std::string why;
    auto p = warm_->Launch(spec, Lines(out), Exit(out), &why);
    EXPECT_TRUE(p) << why;
    return p;
  }
  std::string ReadFile(const fs::path& p) {
    std::ifstream f(p);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  }

  fs::path dir_;
  boost::asio::io_context loop_;
  std::unique_ptr<WarmStarter> warm_;
};

const std::vector<std::string> kShortRun = {"--data", "synthetic:256", "--epochs", "2", "--log-every", "1",
                                            "--batch-size", "32", "--width", "16", "--prefetch", "0"};

TEST(ZygoteProtocol, SpawnRequestRoundTripsAndMalformedOnesAreNamed) {
  namespace z = ::ladder::trainer::zygote;
  z::SpawnRequest in{"/tmp/x y", {"ladder-train", "--lr", ""}, {"A=1", "B=two=2", "EMPTY="}};
  z::SpawnRequest out;
  ASSERT_EQ(z::DecodeSpawn(z::EncodeSpawn(in), &out), "");
  EXPECT_EQ(out.cwd, in.cwd);
  EXPECT_EQ(out.argv, in.argv);
  EXPECT_EQ(out.env, in.env);
  std::string bytes = z::EncodeSpawn(in);
  EXPECT_EQ(z::DecodeSpawn(bytes.substr(0, bytes.size() - 1), &out), "a field is not NUL-terminated");
  EXPECT_EQ(z::DecodeSpawn(bytes + std::string("x\0", 2), &out), "trailing fields");
  EXPECT_EQ(z::DecodeSpawn(std::string("spawn\0/\0" "0\0" "0\0", 12), &out), "no argument count (or 0)");
  EXPECT_EQ(z::DecodeSpawn(std::string("spawn\0/\0" "1\0" "a\0" "1\0" "NOEQ\0", 20), &out),
            "environment entry without '='");
  EXPECT_EQ(z::DecodeSpawn(std::string("hello\0", 6), &out), "not a spawn request");
}

TEST(LoadTimeEnvironment, KeepsWhatLibrariesReadWhenLoaded) {
  EXPECT_EQ(LoadTimeEnvironment({"PATH=/bin", "OMP_NUM_THREADS=4", "RANK=1", "LD_PRELOAD=x.so", "MALLOC_ARENA_MAX=2",
                                 "OPENBLAS_NUM_THREADS=1", "CUDA_VISIBLE_DEVICES=0", "GLIBC_TUNABLES=a=b"}),
            (std::vector<std::string>{"OMP_NUM_THREADS=4", "LD_PRELOAD=x.so", "MALLOC_ARENA_MAX=2",
                                      "OPENBLAS_NUM_THREADS=1", "GLIBC_TUNABLES=a=b"}));
}

TEST_F(WarmStartTest, AnotherCommandIsNotWarmStarted) {
  LaunchSpec spec;
  spec.argv = {"/bin/sh", "-c", "echo cold"};
  std::string why = "unset";
  Outcome out;
  EXPECT_FALSE(warm_->Launch(spec, Lines(&out), Exit(&out), &why));
  EXPECT_EQ(why, "") << "not ladder-train: the caller starts it cold, silently";
  EXPECT_EQ(warm_->ZygotePid(spec), 0);
  spec.argv = {"no-such-ladder-train-xyz"};
  EXPECT_FALSE(warm_->Launch(spec, Lines(&out), Exit(&out), &why));
  EXPECT_EQ(why, "");
}

TEST_F(WarmStartTest, AWarmTrialReportsItsMetricsStderrAndExitCode) {
  LaunchSpec spec = Train(kShortRun);
  WarmUp(spec);
  bool ready = false;
  const int zygote = warm_->ZygotePid(spec, &ready);
  ASSERT_GT(zygote, 0);
  {
    // Who its parent and group are, read while it runs: a long run (the short one below can end, and be reaped,
    // before /proc is read).
    Outcome running;
    auto p = StartWarm(Train({"--data", "synthetic:4096", "--epochs", "1000", "--prefetch", "0"}), &running);
    ASSERT_TRUE(p);
    const testing::ProcStat st = testing::ReadProcStat(p->pid());
    EXPECT_EQ(st.ppid, zygote) << "forked by the zygote";
    EXPECT_EQ(st.pgrp, p->pid()) << "the leader of its own process group";
    p->Terminate(std::chrono::seconds(5));
    ASSERT_TRUE(RunUntil(loop_, [&] { return running.exited; }));
  }
  Outcome out;
  auto p = StartWarm(spec, &out);
  ASSERT_TRUE(p);
  ASSERT_TRUE(RunUntil(loop_, [&] { return out.exited; }));
  EXPECT_EQ(out.code, 0) << out.desc << "\n" << ReadFile(dir_ / "stderr.log");
  int metrics = 0;
  for (const auto& l : out.lines) metrics += l.find("\"train_loss\"") != std::string::npos;
  EXPECT_GE(metrics, 8) << "2 epochs of 7 steps at --log-every 1";
  EXPECT_NE(out.lines.back().find("\"val_loss\""), std::string::npos) << out.lines.back();
  EXPECT_NE(ReadFile(dir_ / "stderr.log").find("ladder-train: synthetic:256 (loaded by the zygote): "),
            std::string::npos)
      << ReadFile(dir_ / "stderr.log");

  Outcome bad;
  auto q = StartWarm(Train({"--bogus-option"}), &bad);
  ASSERT_TRUE(q);
  ASSERT_TRUE(RunUntil(loop_, [&] { return bad.exited; }));
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.desc, "exited with code 2");
  EXPECT_NE(ReadFile(dir_ / "stderr.log").find("--bogus-option"), std::string::npos);
  EXPECT_EQ(warm_->ZygotePid(spec), zygote) << "one zygote serves every trial of the same executable";
}

TEST_F(WarmStartTest, AWarmTrialGetsItsEnvironmentAndWorkingDirectory) {
  LaunchSpec first = Train(kShortRun);
  WarmUp(first);
  const fs::path data = dir_ / "data-here";
  const fs::path work = dir_ / "work";
  fs::create_directories(data);
  fs::create_directories(work);
  fs::copy_file(fs::path(LADDER_TEST_SOURCE_DIR) / "data/digits.csv.gz", data / "digits.csv.gz");
  // No --data: ladder-train reads LADDER_DATA_DIR, which the zygote's environment does not have; a relative
  // --save-params lands in the trial's working directory.
  LaunchSpec spec = Train({"--epochs", "1", "--width", "8", "--prefetch", "0", "--save-params", "out/params.bin"});
  spec.env["LADDER_DATA_DIR"] = data.string();
  spec.workdir = work.string();
  Outcome out;
  auto p = StartWarm(spec, &out);
  ASSERT_TRUE(p);
  ASSERT_TRUE(RunUntil(loop_, [&] { return out.exited; }));
  EXPECT_EQ(out.code, 0) << out.desc;
  EXPECT_NE(ReadFile(dir_ / "stderr.log")
                .find("ladder-train: " + (data / "digits.csv.gz").string() + " (loaded by the zygote): "),
            std::string::npos)
      << ReadFile(dir_ / "stderr.log");
  EXPECT_TRUE(fs::exists(work / "out/params.bin"));
  EXPECT_EQ(warm_->ZygotePid(spec), warm_->ZygotePid(first)) << "LADDER_DATA_DIR is read at run time";

  // A variable a library reads when it is loaded gets a zygote of its own.
  LaunchSpec omp = Train(kShortRun);
  omp.env["OMP_NUM_THREADS"] = "1";
  std::string why;
  Outcome ignored;
  EXPECT_FALSE(warm_->Launch(omp, Lines(&ignored), Exit(&ignored), &why));
  EXPECT_EQ(why, "its warm-start process is starting");
  EXPECT_NE(warm_->ZygotePid(omp), warm_->ZygotePid(first));
}

// The zygote loads a trial's data before forking it (trainer/data_cache.h): the trial says so, a relative --data
// is the trial's working directory's file, and a file rewritten between two trials is read again, never served
// stale.
TEST_F(WarmStartTest, AWarmTrialTrainsOnDataTheZygoteLoadedAndAChangedFileIsReadAgain) {
  LaunchSpec first = Train(kShortRun);
  WarmUp(first);
  const fs::path work = dir_ / "work";
  fs::create_directories(work);
  auto write_csv = [&](int rows) {
    std::ofstream f(work / "rows.csv");
    for (int r = 0; r < rows; ++r) f << r << "," << (r * 7) % 5 << "," << r % 3 << "\n";
  };
  auto run = [&](const std::string& expect) {
    LaunchSpec spec =
        Train({"--data", "rows.csv", "--epochs", "1", "--width", "8", "--batch-size", "8", "--prefetch", "0"});
    spec.workdir = work.string();
    fs::remove(dir_ / "stderr.log");
    Outcome out;
    auto p = StartWarm(spec, &out);
    ASSERT_TRUE(p);
    ASSERT_TRUE(RunUntil(loop_, [&] { return out.exited; }));
    const std::string err = ReadFile(dir_ / "stderr.log");
    EXPECT_EQ(out.code, 0) << out.desc << "\n" << err;
    EXPECT_NE(err.find(expect), std::string::npos) << err;
  };
  write_csv(50);
  run("ladder-train: rows.csv (loaded by the zygote): 40 train / 10 validation rows");
  usleep(20000);
  write_csv(100);
  run("ladder-train: rows.csv (loaded by the zygote): 80 train / 20 validation rows");
  fs::remove(work / "rows.csv");
  LaunchSpec gone = Train({"--data", "rows.csv", "--epochs", "1"});
  gone.workdir = work.string();
  Outcome out;
  auto p = StartWarm(gone, &out);
  ASSERT_TRUE(p);
  ASSERT_TRUE(RunUntil(loop_, [&] { return out.exited; }));
  EXPECT_EQ(out.code, 2) << "a file deleted since is the trial's own error, as in a cold start";
  EXPECT_NE(ReadFile(dir_ / "stderr.log").find("rows.csv"), std::string::npos);
}

// A trial of two local ranks, as the worker starts them (RANK, WORLD_SIZE, a FileStore rendezvous): both forked
// warm, they meet (Gloo, or the local backend the trainer picks) and train together.
TEST_F(WarmStartTest, TwoWarmRanksTrainTogether) {
  WarmUp(Train(kShortRun));
  std::vector<Outcome> out(2);
  std::vector<std::shared_ptr<TrialProcess>> ranks;
  for (int r = 0; r < 2; ++r) {
    LaunchSpec spec = Train(kShortRun);
    spec.env = {{"RANK", std::to_string(r)},          {"WORLD_SIZE", "2"},
                {"LOCAL_RANK", std::to_string(r)},    {"LOCAL_WORLD_SIZE", "2"},
                {"MASTER_ADDR", "127.0.0.1"},         {"MASTER_PORT", "1"},
                {"LADDER_RENDEZVOUS_FILE", (dir_ / "rendezvous").string()}};
    spec.stderr_path = (dir_ / ("stderr-rank" + std::to_string(r) + ".log")).string();
    ranks.push_back(StartWarm(spec, &out[r]));
    ASSERT_TRUE(ranks.back());
  }
  ASSERT_TRUE(RunUntil(loop_, [&] { return out[0].exited && out[1].exited; }));
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(out[r].code, 0) << "rank " << r << ": " << out[r].desc << "\n"
                              << ReadFile(dir_ / ("stderr-rank" + std::to_string(r) + ".log"));
  }
  EXPECT_NE(ReadFile(dir_ / "stderr-rank0.log").find("2 rank(s) over "), std::string::npos)
      << ReadFile(dir_ / "stderr-rank0.log");
  EXPECT_FALSE(out[0].lines.empty());
}

// The zygote blocks SIGCHLD (its signalfd) and ignores SIGPIPE; a trial forked from it starts with neither, as a
// cold one does (TrialProcess.ATrialStartsWithDefaultSignals).
TEST_F(WarmStartTest, AWarmTrialStartsWithDefaultSignals) {
  const LaunchSpec spec = Train({"--data", "synthetic:4096", "--epochs", "1000", "--log-every", "1", "--prefetch", "0"});
  WarmUp(spec);
  Outcome out;
  auto p = StartWarm(spec, &out);
  ASSERT_TRUE(p);
  ASSERT_TRUE(RunUntil(loop_, [&] { return !out.lines.empty() || out.exited; }));
  std::ifstream status("/proc/" + std::to_string(p->pid()) + "/status");
  std::string line;
  std::vector<std::string> masks;
  while (std::getline(status, line)) {
    if (line.rfind("SigBlk:", 0) == 0 || line.rfind("SigIgn:", 0) == 0) masks.push_back(line);
  }
  EXPECT_EQ(masks, (std::vector<std::string>{"SigBlk:\t0000000000000000", "SigIgn:\t0000000000000000"}));
  p->Terminate(std::chrono::seconds(5));
  ASSERT_TRUE(RunUntil(loop_, [&] { return out.exited; }));
}

// The zygote's warm-up trains in the zygote itself (trainer/zygote_hooks.cc) and its data cache hands the child
// rows it did not read: neither may change what a trial computes. The same arguments, warm and cold, give the
// same metrics to the last digit (the timing fields aside), with the fused SGD step and with autograd.
TEST_F(WarmStartTest, AWarmTrialComputesWhatAColdOneDoes) {
  LaunchSpec first = Train(kShortRun);
  WarmUp(first);
  auto without_timings = [](const std::vector<std::string>& lines) {
    std::vector<nlohmann::json> out;
    for (const auto& l : lines) {
      nlohmann::json j = nlohmann::json::parse(l, nullptr, false);
      if (j.is_discarded()) continue;
      for (const char* k : {"samples_per_s", "step_time_s", "allreduce_s"}) j.erase(k);
      out.push_back(j);
    }
    return out;
  };
  for (const std::vector<std::string>& config : {std::vector<std::string>{"--optimizer", "sgd", "--momentum", "0.9"},
                                                 std::vector<std::string>{"--optimizer", "adam", "--dropout", "0.2"}}) {
    std::vector<std::string> args = {"--epochs", "2", "--batch-size", "32", "--width", "32", "--seed", "5",
                                     "--threads", "1", "--prefetch", "0"};
    args.insert(args.end(), config.begin(), config.end());
    Outcome warm;
    auto p = StartWarm(Train(args), &warm);
    ASSERT_TRUE(p);
    ASSERT_TRUE(RunUntil(loop_, [&] { return warm.exited; }));
    ASSERT_EQ(warm.code, 0) << warm.desc;
    std::string command = BinDir() + "/ladder-train";
    for (const auto& a : args) command += " " + a;
    std::vector<std::string> cold;
    FILE* f = ::popen((command + " 2>/dev/null").c_str(), "r");
    ASSERT_NE(f, nullptr);
    char buf[4096];
    while (std::fgets(buf, sizeof buf, f)) cold.emplace_back(buf);
    ASSERT_EQ(::pclose(f), 0) << command;
    ASSERT_GE(cold.size(), 2u);
    EXPECT_EQ(without_timings(warm.lines), without_timings(cold)) << config[1];
  }
}

// The fork starts no thread the trial did not ask for: OpenBLAS's fork handler would start its pool again in
// every child, and a new pool thread spins on sched_yield for milliseconds, a core taken from the other trials.
// A --threads 2 trial still gets its second BLAS thread when it asks for it.
TEST_F(WarmStartTest, AOneThreadWarmTrialRunsOneThreadAndATwoThreadTrialGetsItsPool) {
  const std::vector<std::string> long_run = {"--data", "synthetic:4096", "--epochs", "1000", "--log-every", "1",
                                             "--prefetch", "0", "--width", "256"};
  WarmUp(Train(long_run));
  auto threads_of = [](int pid) {
    int n = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task")) ++n;
    return n;
  };
  for (const int threads : {1, 2}) {
    std::vector<std::string> args = long_run;
    args.insert(args.end(), {"--threads", std::to_string(threads)});
    Outcome out;
    auto p = StartWarm(Train(args), &out);
    ASSERT_TRUE(p);
    ASSERT_TRUE(RunUntil(loop_, [&] { return out.lines.size() >= 3 || out.exited; }));
    ASSERT_FALSE(out.exited) << out.desc;
    if (threads == 1) {
      EXPECT_EQ(threads_of(p->pid()), 1) << "--threads 1 --prefetch 0: the training thread alone";
    } else {
      EXPECT_GE(threads_of(p->pid()), 2) << "--threads 2: a second compute thread";
    }
    p->Terminate(std::chrono::seconds(5));
    ASSERT_TRUE(RunUntil(loop_, [&] { return out.exited; }));
  }
}

// The worker's stop and preemption: Terminate sends SIGTERM to the trial's process group. With a checkpoint
// ladder-train saves it and exits 143; without, SIGTERM kills it.
TEST_F(WarmStartTest, TerminateStopsAWarmTrialAsACold) {
  const std::vector<std::string> long_run = {"--data", "synthetic:4096", "--epochs", "1000", "--log-every", "1",
                                             "--prefetch", "0"};
  WarmUp(Train(long_run));
  for (const bool checkpoint : {true, false}) {
    std::vector<std::string> args = long_run;
    if (checkpoint) args.insert(args.end(), {"--checkpoint", (dir_ / "ckpt/run.pt").string()});
    Outcome out;
    auto p = StartWarm(Train(args), &out);
    ASSERT_TRUE(p);
    ASSERT_TRUE(RunUntil(loop_, [&] { return !out.lines.empty() || out.exited; }));
    ASSERT_FALSE(out.exited) << out.desc;
    p->Terminate(std::chrono::seconds(30));
    ASSERT_TRUE(RunUntil(loop_, [&] { return out.exited; }));
    EXPECT_EQ(out.code, 128 + SIGTERM) << out.desc;
    if (checkpoint) {
      EXPECT_EQ(out.desc, "exited with code 143");
      EXPECT_TRUE(fs::exists(dir_ / "ckpt/run.pt")) << "saved on the way out";
    } else {
      EXPECT_EQ(out.desc, "killed by SIGTERM");
    }
    EXPECT_TRUE(GoneWithin(p->pid(), std::chrono::seconds(5)));
  }
}

// The zygote dies: its running trials die with it (reported as killed, naming it), the next trial starts cold,
// and a later one warm again from a new zygote.
TEST_F(WarmStartTest, AZygoteThatDiesTakesItsTrialsAndIsStartedAgain) {
  const LaunchSpec spec = Train({"--data", "synthetic:4096", "--epochs", "1000", "--log-every", "1", "--prefetch", "0"});
  WarmUp(spec);
  const int zygote = warm_->ZygotePid(spec);
  Outcome out;
  auto p = StartWarm(spec, &out);
  ASSERT_TRUE(p);
  ASSERT_TRUE(RunUntil(loop_, [&] { return !out.lines.empty() || out.exited; }));
  kill(zygote, SIGKILL);
  ASSERT_TRUE(RunUntil(loop_, [&] { return out.exited; }));
  EXPECT_EQ(out.code, 128 + SIGKILL);
  EXPECT_NE(out.desc.find("warm-start process"), std::string::npos) << out.desc;
  EXPECT_TRUE(GoneWithin(p->pid(), std::chrono::seconds(5)));
  ASSERT_TRUE(RunUntil(loop_, [&] { return warm_->ZygotePid(spec) == 0; })) << "seen dead";
  std::string why;
  Outcome cold;
  EXPECT_FALSE(warm_->Launch(spec, Lines(&cold), Exit(&cold), &why));
  EXPECT_EQ(why, "its warm-start process is starting again");
  bool ready = false;
  ASSERT_TRUE(RunUntil(loop_, [&] {
    warm_->ZygotePid(spec, &ready);
    return ready;
  }));
  EXPECT_NE(warm_->ZygotePid(spec), zygote);
  Outcome again;
  auto q = StartWarm(Train(kShortRun), &again);
  ASSERT_TRUE(q);
  ASSERT_TRUE(RunUntil(loop_, [&] { return again.exited; }));
  EXPECT_EQ(again.code, 0) << again.desc;
}

// A worker killed with SIGKILL takes its zygote and the zygote's trials with it, as it takes cold-started ones.
TEST_F(WarmStartTest, AWarmTrialDiesWithItsWorker) {
  int pids[2];
  ASSERT_EQ(pipe(pids), 0);
  const pid_t worker = fork();
  ASSERT_GE(worker, 0);
  if (worker == 0) {  // the "worker": a WarmStarter of its own, one warm trial, then it waits to be killed
    close(pids[0]);
    boost::asio::io_context loop;
    WarmStarter warm(loop, dir_.string());
    const LaunchSpec spec = Train({"--data", "synthetic:4096", "--epochs", "1000", "--prefetch", "0"});
    std::string why;
    Outcome o;
    warm.Launch(spec, Lines(&o), Exit(&o), &why);
    bool ready = false;
    RunUntil(loop, [&] {
      warm.ZygotePid(spec, &ready);
      return ready;
    });
    auto p = warm.Launch(spec, Lines(&o), Exit(&o), &why);
    const int out[2] = {warm.ZygotePid(spec), p ? p->pid() : -1};
    (void)!write(pids[1], out, sizeof out);
    for (;;) pause();
  }
  close(pids[1]);
  int got[2] = {-1, -1};
  ASSERT_EQ(read(pids[0], got, sizeof got), static_cast<ssize_t>(sizeof got));
  close(pids[0]);
  const int zygote = got[0], trial = got[1];
  ASSERT_GT(zygote, 0);
  ASSERT_GT(trial, 0) << "the warm start failed";
  ASSERT_TRUE(Running(trial));
  kill(worker, SIGKILL);
  waitpid(worker, nullptr, 0);
  EXPECT_TRUE(GoneWithin(zygote, std::chrono::seconds(5))) << "zygote " << zygote << " outlived its worker";
  EXPECT_TRUE(GoneWithin(trial, std::chrono::seconds(5))) << "trial " << trial << " outlived its worker";
  if (Running(trial)) kill(trial, SIGKILL);
  if (Running(zygote)) kill(zygote, SIGKILL);
}

}  // namespace
}  // namespace ladder::worker
