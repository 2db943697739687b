#include "worker/trial_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
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

}  // namespace

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

std::shared_ptr<TrialProcess> TrialProcess::Launch(boost::asio::io_context& loop, const LaunchSpec& spec,
                                                   LineFn on_line, ExitFn on_exit, std::string* error) {
  if (spec.argv.empty()) {
    *error = "empty command";
    return nullptr;
  }
  std::string exe = ResolveExecutable(spec.argv[0], spec.search_dirs, error);
  if (exe.empty()) return nullptr;

  // Everything the child needs is built before spawning.
  std::vector<std::string> env_strings;
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
  for (const auto& [k, v] : merged) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = spec.argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  int out_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    return nullptr;
  }
  int err_fd = open(spec.stderr_path.empty() ? "/dev/null" : spec.stderr_path.c_str(),
                    O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (err_fd < 0) {
    *error = "cannot open '" + spec.stderr_path + "': " + std::strerror(errno);
    close(out_pipe[0]);
    close(out_pipe[1]);
    return nullptr;
  }

  // fork + exec rather than posix_spawn, for the one thing posix_spawn cannot do: PR_SET_PDEATHSIG, so that the
  // process started here dies with its worker (a SIGKILLed or crashed worker left its trials running, holding
  // GPUs and ports, while the coordinator requeued them elsewhere). The signal is not inherited: what this
  // process starts in turn (a shell script's children) is not covered. The child runs only async-signal-safe calls until exec;
  // everything it needs (argv, envp, the paths) is built above. An exec failure comes back through a CLOEXEC
  // pipe. Note: the death signal follows the thread that forked — the worker's event-loop thread, which lives as
  // long as the worker.
  int exec_pipe[2];
  if (pipe2(exec_pipe, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    close(out_pipe[0]);
    close(out_pipe[1]);
    close(err_fd);
    return nullptr;
  }
  const pid_t parent = getpid();
  const char* workdir = spec.workdir.empty() ? nullptr : spec.workdir.c_str();
  pid_t pid = fork();
  if (pid == 0) {
    auto fail = [&](int err) {
      (void)!write(exec_pipe[1], &err, sizeof err);
      _exit(127);
    };
    setpgid(0, 0);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail(errno);
    if (getppid() != parent) _exit(137);  // the worker died between fork and prctl
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig) {
      if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &dfl, nullptr);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    const int in = open("/dev/null", O_RDONLY | O_CLOEXEC);  // dup2 gives fd 0 without CLOEXEC
    if (in < 0 || (in == 0 ? fcntl(0, F_SETFD, 0) : dup2(in, 0)) < 0 || dup2(out_pipe[1], 1) < 0 ||
        dup2(err_fd, 2) < 0) {
      fail(errno);
    }
    if (workdir && chdir(workdir) != 0) fail(errno);
    execve(exe.c_str(), argv.data(), envp.data());
    fail(errno);
  }
  const int fork_errno = errno;
  close(exec_pipe[1]);
  close(out_pipe[1]);
  close(err_fd);
  int rc = pid < 0 ? fork_errno : 0;
  if (pid > 0) {
    int child_errno = 0;
    ssize_t n;
    do {
      n = read(exec_pipe[0], &child_errno, sizeof child_errno);
    } while (n < 0 && errno == EINTR);
    if (n == static_cast<ssize_t>(sizeof child_errno)) {  // exec failed: the child is gone
      waitpid(pid, nullptr, 0);
      rc = child_errno;
    }
  }
  close(exec_pipe[0]);
  if (rc != 0) {
    close(out_pipe[0]);
    *error = "cannot start '" + spec.argv[0] + "' (" + exe + "): " + std::strerror(rc);
    if (!spec.workdir.empty() && rc == ENOENT) *error += " (or the working directory does not exist)";
    return nullptr;
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

TrialProcess::~TrialProcess() {
  if (!exited_) {
    kill(-pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

void TrialProcess::Start() {
  ReadMore();
  auto self = shared_from_this();
  pidfd_.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                    [self](const boost::system::error_code& ec) {
                      if (!ec) self->OnPidfdReadable();
                    });
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
    auto self = shared_from_this();
    pidfd_.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                      [self](const boost::system::error_code& ec) {
                        if (!ec) self->OnPidfdReadable();
                      });
    return;
  }
  exited_ = true;
  description_ = r < 0 ? std::string("waitpid: ") + std::strerror(errno) : DescribeWaitStatus(status, &exit_code_);
  if (r < 0) exit_code_ = -1;
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

}  // namespace ladder::worker
