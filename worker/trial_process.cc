#include "worker/trial_process.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/executable.h"
#include "common/metrics_line.h"

extern char** environ;

namespace ladder::worker {

namespace {

int PidfdOpen(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

constexpr size_t kChildStackBytes = 64 * 1024;

// What the child of Launch needs, built before it starts; `error` is the one thing it writes back.
struct ChildArgs {
  const char* exe = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  const char* workdir = nullptr;  // null: the worker's cwd
  int stdout_fd = -1, stderr_fd = -1;
  int pass_fd = -1;  // >= 0: becomes fd 3
  pid_t parent = 0;
  volatile int error = 0;  // the errno that kept the child from exec'ing
};

// The child of clone(CLONE_VM | CLONE_VFORK), until it execs: it runs on its own small stack in the worker's
// memory while the worker's launching thread waits, so it makes raw system calls only — no allocation, no libc
// wrapper a sanitizer intercepts (their bookkeeping is the worker's), no sanitizer instrumentation — and its
// only write to shared memory is args->error. Its signals are all blocked when it starts.
#define LADDER_CHILD_CODE __attribute__((noinline, no_sanitize("address", "thread", "undefined")))

[[noreturn]] LADDER_CHILD_CODE void ChildFail(ChildArgs* args, int err) {
  args->error = err;
  syscall(SYS_exit_group, 127);
  __builtin_unreachable();
}

// `from` as fd `to`, without CLOEXEC.
LADDER_CHILD_CODE long ChildMoveFd(int from, int to) {
  return from == to ? syscall(SYS_fcntl, to, F_SETFD, 0) : syscall(SYS_dup3, from, to, 0);
}

LADDER_CHILD_CODE int ChildExec(void* arg) {
  auto* args = static_cast<ChildArgs*>(arg);
  syscall(SYS_setpgid, 0, 0);
  if (syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) ChildFail(args, errno);
  if (syscall(SYS_getppid) != args->parent) syscall(SYS_exit_group, 137);  // the worker died before prctl
  // Every disposition back to default (an ignored SIGPIPE would survive exec), then nothing blocked. A zeroed
  // kernel struct sigaction is SIG_DFL, no flags, an empty mask; the kernel's sigset is 8 bytes.
  const unsigned long dfl[4] = {0, 0, 0, 0};
  for (int sig = 1; sig <= 64; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) syscall(SYS_rt_sigaction, sig, dfl, nullptr, 8);
  }
  const unsigned long none = 0;
  syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, nullptr, 8);
  const long in = syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDONLY | O_CLOEXEC);
  if (in < 0 || ChildMoveFd(static_cast<int>(in), 0) < 0 || ChildMoveFd(args->stdout_fd, 1) < 0 ||
      ChildMoveFd(args->stderr_fd, 2) < 0 || (args->pass_fd >= 0 && ChildMoveFd(args->pass_fd, 3) < 0)) {
    ChildFail(args, errno);
  }
  if (args->workdir && syscall(SYS_chdir, args->workdir) != 0) ChildFail(args, errno);
  syscall(SYS_execve, args->exe, args->argv, args->envp);
  ChildFail(args, errno);
}

// The child's argv and environment as execve takes them: pointers into the strings beside them (fill in place;
// moving it would move short strings' bytes).
struct ExecStrings {
  std::vector<std::string> env, args;
  std::vector<char*> envp, argv;
};

void BuildExecStrings(const LaunchSpec& spec, ExecStrings* out) {
  out->env = TrialEnvironment(spec);
  for (auto& s : out->env) out->envp.push_back(s.data());
  out->envp.push_back(nullptr);
  out->args = spec.argv;
  for (auto& a : out->args) out->argv.push_back(a.data());
  out->argv.push_back(nullptr);
}

// The run's stdout pipe (both ends) and its stderr file (appended to; /dev/null without one), all CLOEXEC.
bool OpenOutputs(const LaunchSpec& spec, int out_pipe[2], int* err_fd, std::string* error) {
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  *err_fd = open(spec.stderr_path.empty() ? "/dev/null" : spec.stderr_path.c_str(),
                 O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (*err_fd < 0) {
    *error = "cannot open '" + spec.stderr_path + "': " + std::strerror(errno);
    close(out_pipe[0]);
    close(out_pipe[1]);
    return false;
  }
  return true;
}

// Starts the child (ChildExec) and waits until it has exec'd or failed to: 0 with its pid, or the errno that kept
// it from running.
//
// clone(CLONE_VM | CLONE_VFORK) + exec, as posix_spawn does inside, rather than fork: the child borrows the
// worker's memory until it execs instead of copying its page tables, so a large worker can start trials
// under strict overcommit (fork fails there with ENOMEM), and the launch costs the same at any size. Not
// posix_spawn itself, for the one thing it cannot do: PR_SET_PDEATHSIG, so that the process started here
// dies with its worker (a SIGKILLed or crashed worker left its trials running, holding GPUs and ports, while
// the coordinator requeued them elsewhere). The signal is not inherited: what this process starts in turn (a
// shell script's children) is not covered. Note: the death signal follows the thread that started the child —
// the worker's event-loop thread, which lives as long as the worker.
int SpawnChild(ChildArgs* child, pid_t* pid) {
  void* stack =
      mmap(nullptr, kChildStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) return errno;
  // Every signal blocked across the clone: a handler of the worker's must never run in the child, which
  // shares the worker's memory until it execs (the child sets every disposition to default, then unblocks).
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  *pid = clone(ChildExec, static_cast<char*>(stack) + kChildStackBytes, CLONE_VM | CLONE_VFORK | SIGCHLD, child);
  const int clone_errno = errno;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  munmap(stack, kChildStackBytes);
  if (*pid < 0) return clone_errno;
  if (child->error != 0) {  // the child could not exec and is gone (CLONE_VFORK: it has exited)
    waitpid(*pid, nullptr, 0);
    return child->error;
  }
  return 0;
}

}  // namespace

std::vector<std::string> TrialEnvironment(const LaunchSpec& spec) {
  std::map<std::string, std::string> merged;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) merged[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  // The coordinator's token stays with the worker (or the CLI that embeds one): trials are user code.
  merged.erase("LADDER_TOKEN");
  for (const auto& [k, v] : spec.env) merged[k] = v;
  // The search directories come first on the child's PATH too, so that a launcher it runs (mpirun, a shell
  // script) finds the same programs as argv[0] did.
  std::string path;
  for (const auto& d : spec.search_dirs) path += d + ":";
  if (!path.empty()) merged["PATH"] = path + (merged.count("PATH") ? merged["PATH"] : "/usr/local/bin:/usr/bin:/bin");
  std::vector<std::string> env;
  for (const auto& [k, v] : merged) env.push_back(k + "=" + v);
  return env;
}

std::string DescribeWaitStatus(int status, int* exit_code) {
  if (WIFEXITED(status)) {
    *exit_code = WEXITSTATUS(status);
    return *exit_code == 0 ? "" : "exited with code " + std::to_string(*exit_code);
  }
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    *exit_code = 128 + sig;
    const char* name = sigabbrev_np(sig);
    return std::string("killed by SIG") + (name ? name : std::to_string(sig));
  }
  *exit_code = -1;
  return "ended with unknown status " + std::to_string(status);
}

namespace {

// Started through ladder-detach (LaunchSpec::detach): the spawned helper exits at once, having forked the keeper
// that runs the command; the command's pid comes first on the status pipe. Returns the pid, or -1 with *error set
// (the helper reaped, the pipe's read end still the caller's).
int DetachedPid(pid_t helper, int status_fd, const std::string& command, std::string* error) {
  int status = 0;
  while (waitpid(helper, &status, 0) < 0 && errno == EINTR) {
  }
  int32_t pid = -1;
  pollfd p{status_fd, POLLIN, 0};
  // The keeper writes the pid right after its fork; a helper that failed has written nothing and exited.
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && poll(&p, 1, 10000) == 1 &&
      read(status_fd, &pid, sizeof pid) == static_cast<ssize_t>(sizeof pid) && pid > 0) {
    return pid;
  }
  int code = 0;
  const std::string how = DescribeWaitStatus(status, &code);
  *error = "cannot start '" + command + "' through ladder-detach" + (how.empty() ? "" : " (it " + how + ")");
  return -1;
}

// Puts `helper` (found as the command is) in front of `run`'s command, resolved as `*exe`, which becomes the
// helper's path; its status pipe (both ends CLOEXEC) in `status_pipe`, the write end passed as fd 3.
bool InFrontOfIt(const std::string& helper, LaunchSpec* run, std::string* exe, int status_pipe[2],
                 std::string* error) {
  std::string path = ResolveExecutable(helper, run->search_dirs, error);
  if (path.empty()) return false;
  if (pipe2(status_pipe, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  run->argv.front() = *exe;
  run->argv.insert(run->argv.begin(), path);
  *exe = path;
  run->pass_fd = status_pipe[1];
  return true;
}

}  // namespace

std::shared_ptr<TrialProcess> TrialProcess::Launch(boost::asio::io_context& loop, const LaunchSpec& spec,
                                                   LineFn on_line, ExitFn on_exit, std::string* error) {
  if (spec.argv.empty()) {
    *error = "empty command";
    return nullptr;
  }
  std::string exe = ResolveExecutable(spec.argv[0], spec.search_dirs, error);
  if (exe.empty()) return nullptr;
  LaunchSpec run = spec;  // what is exec'd here: the command, or ladder-detach in front of it
  int status_pipe[2] = {-1, -1};
  if (spec.detach && !InFrontOfIt("ladder-detach", &run, &exe, status_pipe, error)) return nullptr;
  auto close_status = [&status_pipe] {
    for (int& fd : status_pipe) {
      if (fd >= 0) close(fd);
      fd = -1;
    }
  };
  // Everything the child needs is built before spawning.
  ExecStrings strings;
  BuildExecStrings(run, &strings);
  int out_pipe[2];
  int err_fd = -1;
  if (!OpenOutputs(spec, out_pipe, &err_fd, error)) {
    close_status();
    return nullptr;
  }
  ChildArgs child;
  child.exe = exe.c_str();
  child.argv = strings.argv.data();
  child.envp = strings.envp.data();
  child.workdir = spec.workdir.empty() ? nullptr : spec.workdir.c_str();
  child.stdout_fd = out_pipe[1];
  child.stderr_fd = err_fd;
  child.pass_fd = run.pass_fd;
  child.parent = getpid();
  pid_t pid = -1;
  const int rc = SpawnChild(&child, &pid);
  close(out_pipe[1]);
  close(err_fd);
  if (status_pipe[1] >= 0) close(status_pipe[1]);
  status_pipe[1] = -1;
  if (rc != 0) {
    close(out_pipe[0]);
    close_status();
    *error = "cannot start '" + spec.argv[0] + "' (" + exe + "): " + std::strerror(rc);
    if (!spec.workdir.empty() && rc == ENOENT) *error += " (or the working directory does not exist)";
    return nullptr;
  }
  if (spec.detach) {
    const int detached = DetachedPid(pid, status_pipe[0], spec.argv[0], error);
    if (detached < 0) {
      close(out_pipe[0]);
      close_status();
      return nullptr;
    }
    return Adopt(loop, detached, out_pipe[0], status_pipe[0], "killed: its keeper process (ladder-detach) died",
                 std::move(on_line), std::move(on_exit));
  }
  int pidfd = PidfdOpen(pid);
  if (pidfd < 0) {
    *error = std::string("pidfd_open: ") + std::strerror(errno);
    kill(-pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    close(out_pipe[0]);
    return nullptr;
  }
  auto proc = std::shared_ptr<TrialProcess>(
      new TrialProcess(loop, pid, out_pipe[0], pidfd, std::move(on_line), std::move(on_exit)));
  proc->Start();
  return proc;
}

TrialProcess::TrialProcess(boost::asio::io_context& loop, int pid, int stdout_fd, int pidfd, LineFn on_line,
                           ExitFn on_exit)
    : loop_(loop),
      pid_(pid),
      out_(loop, stdout_fd),
      pidfd_(loop, pidfd),
      kill_timer_(loop),
      eof_timer_(loop),
      on_line_(std::move(on_line)),
      on_exit_(std::move(on_exit)),
      chunk_(64 * 1024) {}

std::shared_ptr<TrialProcess> TrialProcess::Adopt(boost::asio::io_context& loop, int pid, int stdout_fd,
                                                  int status_fd, std::string orphaned_reason, LineFn on_line,
                                                  ExitFn on_exit) {
  auto proc = std::shared_ptr<TrialProcess>(
      new TrialProcess(loop, pid, stdout_fd, status_fd, std::move(on_line), std::move(on_exit)));
  proc->adopted_ = true;
  proc->orphaned_reason_ = std::move(orphaned_reason);
  proc->Start();
  return proc;
}

TrialProcess::~TrialProcess() {
  if (!exited_) {
    kill(-pid_, SIGKILL);
    if (!adopted_) waitpid(pid_, nullptr, 0);  // an adopted process is reaped by its own parent
  }
}

void TrialProcess::Start() {
  ReadMore();
  WaitForExit();
}

void TrialProcess::WaitForExit() {
  auto self = shared_from_this();
  pidfd_.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                    [self](const boost::system::error_code& ec) {
                      if (ec) return;
                      if (self->adopted_) {
                        self->OnStatusReadable();
                      } else {
                        self->OnPidfdReadable();
                      }
                    });
}

void TrialProcess::OnStatusReadable() {
  int status = 0;
  ssize_t n;
  while ((n = read(pidfd_.native_handle(), &status, sizeof status)) < 0 && errno == EINTR) {
  }
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {  // spurious
    WaitForExit();
    return;
  }
  if (n == static_cast<ssize_t>(sizeof status)) {
    description_ = DescribeWaitStatus(status, &exit_code_);
  } else {  // end of file: the zygote died, and this process with it (PR_SET_PDEATHSIG)
    exit_code_ = 128 + SIGKILL;
    description_ = orphaned_reason_;
  }
  OnExited();
}

void TrialProcess::ReadMore() {
  if (paused_ || eof_ || reading_) return;
  reading_ = true;
  auto self = shared_from_this();
  out_.async_read_some(boost::asio::buffer(chunk_), [self](const boost::system::error_code& ec, size_t n) {
    self->reading_ = false;
    if (self->reported_) return;  // on_exit already ran (the EOF timer gave up on a leftover child)
    if (ec) {
      // EOF, or the descriptor was closed.
      if (!self->buf_.empty() && !self->skipping_long_line_) self->on_line_(self->buf_, false);
      self->buf_.clear();
      self->eof_ = true;
      self->MaybeFinish();
      return;
    }
    self->buf_.append(self->chunk_.data(), n);
    size_t start = 0;
    for (;;) {
      size_t nl = self->buf_.find('\n', start);
      if (nl == std::string::npos) break;
      if (self->skipping_long_line_) {
        self->skipping_long_line_ = false;
      } else {
        self->on_line_(self->buf_.substr(start, nl - start), false);
      }
      start = nl + 1;
    }
    self->buf_.erase(0, start);
    if (self->buf_.size() > kMaxMetricsLineBytes) {
      if (!self->skipping_long_line_) self->on_line_(self->buf_.substr(0, 200), true);
      self->skipping_long_line_ = true;
      self->buf_.clear();
    }
    self->ReadMore();
  });
}

void TrialProcess::OnPidfdReadable() {
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == 0) {  // spurious
    WaitForExit();
    return;
  }
  description_ = r < 0 ? std::string("waitpid: ") + std::strerror(errno) : DescribeWaitStatus(status, &exit_code_);
  if (r < 0) exit_code_ = -1;
  OnExited();
}

void TrialProcess::OnExited() {
  exited_ = true;
  kill_timer_.cancel();
  // The leader is gone: take the rest of its group with it.
  kill(-pid_, SIGKILL);
  ArmEofTimer();
  MaybeFinish();
}

void TrialProcess::ArmEofTimer() {
  eof_timer_.expires_after(std::chrono::seconds(2));
  auto self = shared_from_this();
  eof_timer_.async_wait([self](const boost::system::error_code& ec) {
    if (ec || self->eof_) return;
    if (self->paused_) {  // lines are waiting in the pipe: read them once resumed, don't drop them
      self->ArmEofTimer();
      return;
    }
    self->eof_ = true;
    boost::system::error_code ignored;
    self->out_.cancel(ignored);
    self->out_.close(ignored);
    self->MaybeFinish();
  });
}

void TrialProcess::ResumeReading() {
  if (!paused_) return;
  paused_ = false;
  ReadMore();
}

void TrialProcess::MaybeFinish() {
  if (!exited_ || !eof_ || reported_) return;
  reported_ = true;
  eof_timer_.cancel();
  boost::system::error_code ignored;
  pidfd_.close(ignored);
  out_.close(ignored);
  auto fn = std::move(on_exit_);
  if (fn) fn(exit_code_, description_);
}

void TrialProcess::Terminate(std::chrono::milliseconds grace) {
  if (exited_) return;
  kill(-pid_, SIGTERM);
  kill_timer_.expires_after(grace);
  auto self = shared_from_this();
  kill_timer_.async_wait([self](const boost::system::error_code& ec) {
    if (!ec && !self->exited_) kill(-self->pid_, SIGKILL);
  });
}

void TrialProcess::Signal(int sig) {
  if (!exited_) kill(pid_, sig);
}

void TrialProcess::EscalateAfter(std::chrono::milliseconds grace, std::chrono::milliseconds kill_after) {
  if (exited_) return;
  kill_timer_.expires_after(grace);
  auto self = shared_from_this();
  kill_timer_.async_wait([self, kill_after](const boost::system::error_code& ec) {
    if (ec || self->exited_) return;
    kill(self->pid_, SIGTERM);
    self->kill_timer_.expires_after(kill_after);
    self->kill_timer_.async_wait([self](const boost::system::error_code& ec2) {
      if (!ec2 && !self->exited_) kill(-self->pid_, SIGKILL);
    });
  });
}

}  // namespace ladder::worker
