#include "worker/trial_process.h"

#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace ladder::worker {
namespace {

struct Outcome {
  std::vector<std::string> lines;
  int truncated = 0;
  bool exited = false;
  int code = -999;
  std::string desc;
};

std::shared_ptr<TrialProcess> StartTrial(boost::asio::io_context& loop, LaunchSpec spec, Outcome* out,
                                  std::string* error) {
  return TrialProcess::Launch(
      loop, spec,
      [out](const std::string& l, bool t) {
        if (t) ++out->truncated;
        else out->lines.push_back(l);
      },
      [out](int code, const std::string& d) {
        out->exited = true;
        out->code = code;
        out->desc = d;
      },
      error);
}

TEST(TrialProcess, ReadsEveryLineBeforeReportingExit) {
  boost::asio::io_context loop;
  Outcome out;
  std::string error;
  LaunchSpec spec;
  spec.argv = {"/bin/sh", "-c", "for i in 1 2 3 4 5; do echo line$i; done; printf 'no-newline'; exit 3"};
  auto p = StartTrial(loop, spec, &out, &error);
  ASSERT_TRUE(p) << error;
  loop.run();
  ASSERT_TRUE(out.exited);
  EXPECT_EQ(out.code, 3);
  EXPECT_EQ(out.desc, "exited with code 3");
  ASSERT_EQ(out.lines.size(), 6u);
  EXPECT_EQ(out.lines[0], "line1");
  EXPECT_EQ(out.lines[5], "no-newline");
}

TEST(TrialProcess, PassesEnvironmentAndWorkdirAndCapturesStderr) {
  auto dir = std::filesystem::temp_directory_path() / ("ladder-tp-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  boost::asio::io_context loop;
  Outcome out;
  std::string error;
  LaunchSpec spec;
  spec.argv = {"/bin/sh", "-c", "echo $LADDER_X; pwd; echo oops >&2"};
  spec.env = {{"LADDER_X", "forty two"}};
  spec.workdir = dir.string();
  spec.stderr_path = (dir / "stderr.log").string();
  ASSERT_TRUE(StartTrial(loop, spec, &out, &error)) << error;
  loop.run();
  ASSERT_EQ(out.lines.size(), 2u);
  EXPECT_EQ(out.lines[0], "forty two");
  EXPECT_EQ(std::filesystem::canonical(out.lines[1]), std::filesystem::canonical(dir));
  std::ifstream err(spec.stderr_path);
  std::string s;
  std::getline(err, s);
  EXPECT_EQ(s, "oops");
  std::filesystem::remove_all(dir);
}

// The worker's (or the embedding CLI's) LADDER_TOKEN is not handed to trials, which run user code; the rest of
// the environment is.
TEST(TrialProcess, TheCoordinatorsTokenIsNotPassedToTrials) {
  ::setenv("LADDER_TOKEN", "do-not-leak", 1);
  ::setenv("LADDER_TP_KEEP", "kept", 1);
  boost::asio::io_context loop;
  Outcome out;
  std::string error;
  LaunchSpec spec;
  spec.argv = {"/bin/sh", "-c", "echo ${LADDER_TOKEN-unset}; echo $LADDER_TP_KEEP"};
  ASSERT_TRUE(StartTrial(loop, spec, &out, &error)) << error;
  loop.run();
  ::unsetenv("LADDER_TOKEN");
  ::unsetenv("LADDER_TP_KEEP");
  ASSERT_EQ(out.lines.size(), 2u);
  EXPECT_EQ(out.lines[0], "unset");
  EXPECT_EQ(out.lines[1], "kept");
}

// A trial dies with the process that started it: a worker killed by SIGKILL (or crashed) must not leave its
// trials running — holding GPUs and rendezvous ports while the coordinator requeues them elsewhere.
TEST(TrialProcess, ATrialDiesWithItsWorker) {
  int pid_pipe[2];
  ASSERT_EQ(pipe(pid_pipe), 0);
  const pid_t worker = fork();
  ASSERT_GE(worker, 0);
  if (worker == 0) {  // the "worker": starts a long trial, reports its pid, waits to be killed
    close(pid_pipe[0]);
    boost::asio::io_context loop;
    Outcome out;
    std::string error;
    LaunchSpec spec;
    spec.argv = {"/bin/sleep", "60"};
    auto p = StartTrial(loop, spec, &out, &error);
    const int trial = p ? p->pid() : -1;
    (void)!write(pid_pipe[1], &trial, sizeof trial);
    for (;;) pause();
  }
  close(pid_pipe[1]);
  int trial = -1;
  ASSERT_EQ(read(pid_pipe[0], &trial, sizeof trial), static_cast<ssize_t>(sizeof trial));
  close(pid_pipe[0]);
  ASSERT_GT(trial, 0);
  ASSERT_EQ(kill(trial, 0), 0) << "the trial runs";
  kill(worker, SIGKILL);
  waitpid(worker, nullptr, 0);
  // Gone, or a zombie waiting for init to reap it: either way no longer running.
  auto running = [trial] {
    std::ifstream stat("/proc/" + std::to_string(trial) + "/stat");
    std::string pid, comm, state;
    return static_cast<bool>(stat >> pid >> comm >> state) && state != "Z";
  };
  for (int i = 0; i < 200 && running(); ++i) usleep(10000);
  EXPECT_FALSE(running()) << "trial " << trial << " outlived its worker";
  if (running()) kill(trial, SIGKILL);
}

// Strict overcommit (vm.overcommit_memory=2) as a large worker meets it: every way of copying its address
// space (fork, vfork, clone without CLONE_VM) fails with ENOMEM. clone3, whose flags a filter cannot read, is
// ENOSYS, as on an older kernel (glibc then uses clone). A seccomp filter in this process only.
bool RefuseToCopyTheAddressSpace() {
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "args[0]'s low word is read at its offset");
  const unsigned kDeny = SECCOMP_RET_ERRNO | ENOMEM;
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
#ifdef __NR_fork
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_fork, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, kDeny),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_vfork, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, kDeny),
#endif
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0])),
      BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_VM, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_RET | BPF_K, kDeny),
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

// In a child of the test (EXPECT_EXIT): under strict overcommit, the launch of a trial. The exit code says
// what failed.
int LaunchWhereForkFails() {
  if (!RefuseToCopyTheAddressSpace()) {
    std::perror("seccomp");
    return 2;
  }
  const pid_t copy = fork();
  if (copy == 0) _exit(0);
  if (copy != -1 || errno != ENOMEM) {
    std::fprintf(stderr, "fork was not refused with ENOMEM\n");
    return 3;
  }
  boost::asio::io_context loop;
  Outcome out;
  std::string error;
  LaunchSpec spec;
  spec.argv = {"/bin/sh", "-c", "echo started"};
  if (!StartTrial(loop, spec, &out, &error)) {
    std::fprintf(stderr, "launch failed: %s\n", error.c_str());
    return 4;
  }
  loop.run();
  if (out.exited && out.code == 0 && out.lines == std::vector<std::string>{"started"}) return 0;
  std::fprintf(stderr, "the trial did not run: exit %d %s\n", out.code, out.desc.c_str());
  return 5;
}

// A worker that could not be copied (fork fails with ENOMEM) still starts its trials: the launch borrows the
// worker's memory until exec (clone with CLONE_VM | CLONE_VFORK) instead of copying it.
TEST(TrialProcess, StartsATrialWhereForkFailsForLackOfMemory) {
  EXPECT_EXIT(_exit(LaunchWhereForkFails()), ::testing::ExitedWithCode(0), "");
}

// In a child of the test: a trial started by a process that ignores SIGPIPE and SIGTERM and blocks SIGUSR1
// prints its signal masks.
int LaunchWithSignalsIgnoredAndBlocked() {
  signal(SIGPIPE, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  sigprocmask(SIG_BLOCK, &usr1, nullptr);
  boost::asio::io_context loop;
  Outcome out;
  std::string error;
  LaunchSpec spec;
  spec.argv = {"/bin/grep", "-E", "^Sig(Ign|Blk)", "/proc/self/status"};
  if (!StartTrial(loop, spec, &out, &error)) return 4;
  loop.run();
  const std::vector<std::string> want = {"SigBlk:\t0000000000000000", "SigIgn:\t0000000000000000"};
  if (out.lines == want) return 0;
  for (const auto& l : out.lines) std::fprintf(stderr, "%s\n", l.c_str());
  return 5;
}

// A trial starts with every signal at its default and none blocked, whatever the worker ignores or blocks
// (gRPC ignores SIGPIPE).
TEST(TrialProcess, ATrialStartsWithDefaultSignals) {
  EXPECT_EXIT(_exit(LaunchWithSignalsIgnoredAndBlocked()), ::testing::ExitedWithCode(0), "");
}

TEST(TrialProcess, MissingCommandIsAClearError) {
  boost::asio::io_context loop;
  Outcome out;
  std::string error;
  LaunchSpec spec;
  spec.argv = {"definitely-not-a-command-xyz", "--flag"};
  EXPECT_FALSE(StartTrial(loop, spec, &out, &error));
  EXPECT_NE(error.find("'definitely-not-a-command-xyz' not found"), std::string::npos) << error;
  spec.argv = {"/nonexistent/dir/prog"};
  EXPECT_FALSE(StartTrial(loop, spec, &out, &error));
  EXPECT_NE(error.find("does not exist"), std::string::npos) << error;
}

TEST(TrialProcess, FindsCommandInSearchDirsBeforePath) {
  auto dir = std::filesystem::temp_directory_path() / ("ladder-tp-bin-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream f(dir / "ladder-fake-prog");
    f << "#!/bin/sh\necho found-me\n";
  }
  std::filesystem::permissions(dir / "ladder-fake-prog", std::filesystem::perms::owner_all);
  boost::asio::io_context loop;
  Outcome out;
  std::string error;
  LaunchSpec spec;
  spec.argv = {"ladder-fake-prog"};
  spec.search_dirs = {dir.string()};
  ASSERT_TRUE(StartTrial(loop, spec, &out, &error)) << error;
  loop.run();
  ASSERT_EQ(out.lines.size(), 1u);
  EXPECT_EQ(out.lines[0], "found-me");
  std::filesystem::remove_all(dir);
}

TEST(TrialProcess, TerminateKillsTheWholeProcessGroup) {
  boost::asio::io_context loop;
  Outcome out;
  std::string error;
  LaunchSpec spec;
  // A child that ignores SIGTERM, plus a grandchild: both must go.
  spec.argv = {"/bin/sh", "-c", "trap '' TERM; sleep 300 & echo $!; echo ready; wait"};
  auto p = StartTrial(loop, spec, &out, &error);
  ASSERT_TRUE(p) << error;
  // Wait for the "ready" line, then terminate with a short grace.
  while (out.lines.size() < 2) loop.run_one();
  pid_t grandchild = std::stoi(out.lines[0]);
  p->Terminate(std::chrono::milliseconds(100));
  loop.run();
  ASSERT_TRUE(out.exited);
  EXPECT_EQ(out.code, 128 + SIGKILL);
  EXPECT_EQ(out.desc, "killed by SIGKILL");
  // The grandchild was in the group: it must exit (SIGKILL is delivered asynchronously, so wait for its
  // pidfd to become readable, with a deadline).
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, grandchild, 0));
  bool gone = pidfd < 0;  // already gone and reaped
  if (pidfd >= 0) {
    pollfd pfd{pidfd, POLLIN, 0};
    gone = poll(&pfd, 1, 5000) == 1;
    close(pidfd);
  }
  EXPECT_TRUE(gone);
}

TEST(TrialProcess, OverlongLineIsFlaggedNotBuffered) {
  boost::asio::io_context loop;
  Outcome out;
  std::string error;
  LaunchSpec spec;
  spec.argv = {"/bin/sh", "-c", "head -c 200000 /dev/zero | tr '\\0' x; echo; echo after"};
  ASSERT_TRUE(StartTrial(loop, spec, &out, &error)) << error;
  loop.run();
  EXPECT_EQ(out.truncated, 1);
  ASSERT_FALSE(out.lines.empty());
  EXPECT_EQ(out.lines.back(), "after");
}

}  // namespace
}  // namespace ladder::worker
