// ladder-detach: runs a command outside the process tree of the worker that started it, and reports its exit.
//   ladder-detach COMMAND [ARGS...]      fd 3: the write end of the worker's status pipe
//
// Why: Slurm signals a step by its process tree (proctrack/linuxproc: every descendant of the step's slurmstepd).
// When Slurm preempts the job that holds ladder's workers (GraceTime), every process under the workers' step gets
// SIGTERM — and an `srun` there, a trial's launcher, answers it by SIGKILLing its own step's tasks ("forcing job
// termination"), before their checkpoint handlers end (docs/ARCHITECTURE.md, "How a multi-rank trial is stopped").
// The worker starts an srun trial through this program (TrialProcess::Launch with LaunchSpec::detach), so that
// only the trial's own step, its tasks, gets Slurm's SIGTERM.
//
// How: this process forks a keeper and exits at once (the worker reaps it). The keeper, reparented to init and in
// a session of its own, is no longer under the step. It starts COMMAND as the leader of a process group of its
// own, writes COMMAND's pid (4 bytes, native int) to fd 3, waits for it, writes its raw wait status (4 bytes), and
// exits. The worker signals COMMAND by its pid as it would a child (it is the same user's process).
// * COMMAND dies with its keeper (PR_SET_PDEATHSIG), and the keeper ends COMMAND's process group (SIGKILL) when
//   the worker is gone (nobody reads fd 3 any more: POLLERR): a trial still dies with its worker.
// * The keeper ignores the signals that end a process by default but SIGKILL's: only COMMAND's end or the
//   worker's ends it. COMMAND starts with every disposition at its default and nothing blocked.
// * COMMAND that cannot be run: its message on stderr, exit status 127 (as a shell's).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>

namespace {

constexpr int kStatusFd = 3;

bool WriteAll(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = write(kStatusFd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

[[noreturn]] void RunCommand(pid_t keeper, char** argv) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != keeper) _exit(137);  // the keeper died before prctl
  for (int sig = 1; sig < NSIG; ++sig) signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  execv(argv[0], argv);
  std::fprintf(stderr, "ladder-detach: cannot run '%s': %s\n", argv[0], std::strerror(errno));
  _exit(127);
}

// The keeper: starts the command, reports its pid and its end on fd 3.
int Keep(char** argv) {
  setsid();
  for (int sig : {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGPIPE, SIGALRM}) {
    signal(sig, SIG_IGN);
  }
  const pid_t keeper = getpid();
  const pid_t child = fork();
  if (child < 0) {
    std::fprintf(stderr, "ladder-detach: fork: %s\n", std::strerror(errno));
    return 1;
  }
  if (child == 0) RunCommand(keeper, argv);
  setpgid(child, child);  // also here: the worker may signal the group before the child has run
  // The keeper's own stdout and stderr (the trial's) are the command's alone from here: their end is its end.
  const int null_fd = open("/dev/null", O_RDWR);
  if (null_fd >= 0) {
    dup2(null_fd, 0);
    dup2(null_fd, 1);
    dup2(null_fd, 2);
    if (null_fd > 2) close(null_fd);
  }
  const int32_t pid32 = child;
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, child, 0));
  if (!WriteAll(&pid32, sizeof pid32) || pidfd < 0) {
    kill(-child, SIGKILL);
    waitpid(child, nullptr, 0);
    return 1;
  }
  for (;;) {
    pollfd fds[2] = {{pidfd, POLLIN, 0}, {kStatusFd, 0, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      kill(-child, SIGKILL);
      waitpid(child, nullptr, 0);
      return 1;
    }
    if (fds[0].revents != 0) {
      int status = 0;
      while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
      }
      const int32_t raw = status;
      return WriteAll(&raw, sizeof raw) ? 0 : 1;
    }
    if ((fds[1].revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) {  // the worker is gone
      kill(-child, SIGKILL);
      waitpid(child, nullptr, 0);
      return 0;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || fcntl(kStatusFd, F_GETFD) < 0) {
    std::fprintf(stderr,
                 "usage: ladder-detach COMMAND [ARGS...]  (fd 3: a pipe's write end, for COMMAND's pid and its exit)\n"
                 "  runs COMMAND outside the caller's process tree; ladder-worker starts srun trials with it\n");
    return 2;
  }
  fcntl(kStatusFd, F_SETFD, FD_CLOEXEC);  // not the command's
  const pid_t keeper = fork();
  if (keeper < 0) {
    std::fprintf(stderr, "ladder-detach: fork: %s\n", std::strerror(errno));
    return 1;
  }
  if (keeper > 0) return 0;  // the keeper is reparented: no longer under the caller
  _exit(Keep(argv + 1));
}
