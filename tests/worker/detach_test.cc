// LaunchSpec::detach (worker/detach_main.cc): a command started outside the worker's process tree — where a signal
// Slurm sends to the worker's step by its process tree does not reach it — is still read, signalled and reported
// as a child is, and still dies with its worker.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "worker/trial_process.h"

namespace ladder::worker {
namespace {

struct Outcome {
  std::vector<std::string> lines;
  bool exited = false;
  int code = -999;
  std::string desc;
};

std::shared_ptr<TrialProcess> StartDetached(boost::asio::io_context& loop, const std::string& script, Outcome* out,
                                            std::string* error) {
  LaunchSpec spec;
  spec.argv = {"/bin/sh", "-c", script};
  spec.search_dirs = {LADDER_TEST_BIN_DIR};  // ladder-detach
  spec.detach = true;
  return TrialProcess::Launch(
      loop, spec, [out](const std::string& l, bool) { out->lines.push_back(l); },
      [out](int code, const std::string& d) {
        out->exited = true;
        out->code = code;
        out->desc = d;
      },
      error);
}

// The parent of `pid`, from /proc (0 when it is gone).
int ParentOf(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(stat)), {});
  const auto close = all.rfind(')');
  if (close == std::string::npos) return 0;
  char state = 0;
  int ppid = 0;
  std::sscanf(all.c_str() + close + 1, " %c %d", &state, &ppid);
  return ppid;
}

// `pid` and its ancestors up to init.
std::set<int> Ancestry(int pid) {
  std::set<int> chain;
  for (int p = pid; p > 1 && chain.insert(p).second;) p = ParentOf(p);
  return chain;
}

// Runs `loop` until `done` or 30 s.
template <typename Done>
bool RunUntil(boost::asio::io_context& loop, Done done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!done() && std::chrono::steady_clock::now() < until) {
    loop.run_for(std::chrono::milliseconds(50));
    if (loop.stopped()) loop.restart();
  }
  return done();
}

TEST(DetachedLaunch, RunsOutsideTheWorkersProcessTreeAndIsReadSignalledAndReportedAsAChild) {
  boost::asio::io_context loop;
  Outcome out;
  std::string error;
  auto p = StartDetached(loop, "echo started; exec sleep 60", &out, &error);
  ASSERT_TRUE(p) << error;
  ASSERT_TRUE(RunUntil(loop, [&] { return !out.lines.empty(); }));
  EXPECT_EQ(out.lines[0], "started");
  const std::set<int> ancestry = Ancestry(p->pid());
  EXPECT_EQ(ancestry.count(getpid()), 0u) << "the command is under the worker";
  EXPECT_EQ(getpgid(p->pid()), p->pid()) << "the leader of a process group of its own";
  p->Signal(SIGTERM);
  ASSERT_TRUE(RunUntil(loop, [&] { return out.exited; }));
  EXPECT_EQ(out.code, 128 + SIGTERM);
  EXPECT_EQ(out.desc, "killed by SIGTERM");

  Outcome second;
  auto q = StartDetached(loop, "echo one; echo two; exit 7", &second, &error);
  ASSERT_TRUE(q) << error;
  ASSERT_TRUE(RunUntil(loop, [&] { return second.exited; }));
  EXPECT_EQ(second.code, 7);
  EXPECT_EQ(second.desc, "exited with code 7");
  EXPECT_EQ(second.lines, (std::vector<std::string>{"one", "two"}));
}

TEST(DetachedLaunch, TheCommandDiesWithItsWorker) {
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  const pid_t worker = fork();
  ASSERT_GE(worker, 0);
  if (worker == 0) {  // the worker: starts the command, says its pid, waits to be killed
    close(pipe_fds[0]);
    boost::asio::io_context loop;
    Outcome out;
    std::string error;
    auto p = StartDetached(loop, "exec sleep 60", &out, &error);
    const int pid = p ? p->pid() : -1;
    if (write(pipe_fds[1], &pid, sizeof pid) != static_cast<ssize_t>(sizeof pid)) _exit(1);
    pause();
    _exit(0);
  }
  close(pipe_fds[1]);
  int pid = -1;
  ASSERT_EQ(read(pipe_fds[0], &pid, sizeof pid), static_cast<ssize_t>(sizeof pid));
  close(pipe_fds[0]);
  ASSERT_GT(pid, 0);
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  ASSERT_GE(pidfd, 0);
  kill(worker, SIGKILL);
  waitpid(worker, nullptr, 0);
  pollfd fd{pidfd, POLLIN, 0};
  const int ready = poll(&fd, 1, 30000);
  close(pidfd);
  EXPECT_EQ(ready, 1) << "the command outlived its worker";
  if (ready != 1) kill(-pid, SIGKILL);
}

}  // namespace
}  // namespace ladder::worker
