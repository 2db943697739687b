#include "trainer/zygote.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>

#include "trainer/zygote_protocol.h"

namespace ladder::trainer {

namespace {

namespace z = ::ladder::trainer::zygote;

void Say(const std::string& what) {
  const std::string line = "ladder-train --zygote: " + what + "\n";
  std::fputs(line.c_str(), stderr);
}

int ThreadCount() {
  DIR* d = ::opendir("/proc/self/task");
  if (!d) return -1;
  int n = 0;
  while (const dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
  ::closedir(d);
  return n;
}

// OpenBLAS's pthread build starts its thread pool in a library constructor, and again in each child (and the
// parent) of a fork through its pthread_atfork handler; a new pool thread spins on sched_yield for its first
// milliseconds, a core taken from the other trials for much of a short trial's life. Shut the pool down and
// size it to none (what OPENBLAS_NUM_THREADS=1 at load gives: OpenBLAS reads blas_num_threads when it starts
// the pool), so that no fork starts it; a child's SetBlasThreads(--threads) grows it to what the child asks.
void StopBlasThreads() {
  using Shutdown = int (*)();
  if (auto* f = reinterpret_cast<Shutdown>(::dlsym(RTLD_DEFAULT, "blas_thread_shutdown_"))) {
    f();
    if (auto* n = static_cast<int*>(::dlsym(RTLD_DEFAULT, "blas_num_threads"))) *n = 1;
  }
}

// The zygote's large anonymous regions (its heap holds about 40 MB, LibTorch's operator registry) made huge
// pages: fork copies, and each child's exit tears down, one page-table entry per 2 MB instead of 512
// (measured: the fork 1.9 -> 1.3 ms, a child's exit unmapping 1.4 -> 0.9 ms). A child's first write to a
// shared huge page splits it and copies 4 KB, as before. Best effort: without THP (or before Linux 6.1, which
// added MADV_COLLAPSE) nothing changes.
void CollapseIntoHugePages() {
  constexpr int kMadvCollapse = 25;  // MADV_COLLAPSE, Linux 6.1
  constexpr unsigned long kHuge = 2UL << 20;
  FILE* f = std::fopen("/proc/self/maps", "re");
  if (!f) return;
  char line[512];
  while (std::fgets(line, sizeof line, f)) {
    unsigned long lo = 0, hi = 0, offset = 0, inode = 0;
    char perms[8] = {}, dev[16] = {};
    int name_at = 0;
    if (std::sscanf(line, "%lx-%lx %7s %lx %15s %lu %n", &lo, &hi, perms, &offset, dev, &inode, &name_at) < 6) continue;
    const char* name = line + name_at;
    // Private, writable, anonymous: the heap and anonymous mappings (not the stack or the kernel's pages).
    if (inode != 0 || perms[1] != 'w' || perms[3] != 'p' || (name[0] == '[' && std::strncmp(name, "[heap]", 6) != 0)) {
      continue;
    }
    const unsigned long a = (lo + kHuge - 1) & ~(kHuge - 1), b = hi & ~(kHuge - 1);
    if (b > a) ::madvise(reinterpret_cast<void*>(a), b - a, kMadvCollapse);
  }
  std::fclose(f);
}

struct Child {
  int status_fd = -1;
};

class Zygote {
 public:
  Zygote(int sock, int sigfd, const ZygoteHooks& hooks) : sock_(sock), sigfd_(sigfd), hooks_(hooks) {}

  int Serve() {
    for (;;) {
      pollfd fds[2] = {{sock_, POLLIN, 0}, {sigfd_, POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        Say(std::string("poll: ") + std::strerror(errno));
        return 1;
      }
      if (fds[1].revents) Reap();
      if (fds[0].revents) {
        std::string bytes;
        std::vector<int> fds_in;
        const ssize_t n = z::ReceiveMessage(sock_, &bytes, &fds_in);
        if (n == 0) return 0;  // the client is gone
        if (n < 0) {
          if (errno == EMSGSIZE) {
            Reply("failed " + std::to_string(EMSGSIZE) + " request larger than " +
                  std::to_string(z::kMaxMessageBytes) + " bytes");
            continue;
          }
          Say(std::string("recvmsg: ") + std::strerror(errno));
          return 1;
        }
        Spawn(bytes, fds_in);
      }
    }
  }

 private:
  void Reply(const std::string& text) {
    // A client that went away is seen at the next receive (end of file).
    z::SendMessage(sock_, text, nullptr, 0);
  }

  void Reap() {
    signalfd_siginfo info;
    while (::read(sigfd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
    }
    int status = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
      auto it = children_.find(pid);
      if (it == children_.end()) continue;
      if (::write(it->second.status_fd, &status, sizeof status) < 0) { /* the client closed its end: nobody asks */
      }
      ::close(it->second.status_fd);
      children_.erase(it);
    }
  }

  void Spawn(const std::string& bytes, std::vector<int>& fds) {
    auto close_all = [&fds] {
      for (int fd : fds) ::close(fd);
    };
    z::SpawnRequest req;
    std::string error = z::DecodeSpawn(bytes, &req);
    if (error.empty() && fds.size() != static_cast<size_t>(z::kSpawnFds)) {
      error = "expected " + std::to_string(z::kSpawnFds) + " descriptors, got " + std::to_string(fds.size());
    }
    if (!error.empty()) {
      close_all();
      Reply("failed " + std::to_string(EINVAL) + " bad request: " + error);
      return;
    }
    std::vector<std::string> args(req.argv.begin() + 1, req.argv.end());
    Prepare(req, args);
    if (const int threads = ThreadCount(); threads != 1) {
      close_all();
      Reply("failed " + std::to_string(EAGAIN) + " the zygote runs " + std::to_string(threads) +
            " threads; it forks only single-threaded");
      return;
    }
    int ack[2];  // the child's setup result: end of file = ready to train, 4 bytes = the errno that stopped it
    if (::pipe2(ack, O_CLOEXEC) != 0) {
      const int e = errno;
      close_all();
      Reply("failed " + std::to_string(e) + " pipe: " + std::strerror(e));
      return;
    }
    // Everything the child needs, built before fork.
    std::vector<char*> env;
    for (auto& e : req.env) env.push_back(e.data());
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t zygote = ::getpid();
    const pid_t pid = ::fork();
    if (pid == 0) RunChild(req, env, args, fds, ack, zygote);  // never returns
    const int fork_errno = errno;
    ::close(ack[1]);
    if (pid < 0) {
      ::close(ack[0]);
      close_all();
      Reply("failed " + std::to_string(fork_errno) + " fork: " + std::strerror(fork_errno));
      return;
    }
    ::setpgid(pid, pid);  // also done by the child: whichever runs first, the group exists before the reply
    int child_errno = 0;
    ssize_t n;
    while ((n = ::read(ack[0], &child_errno, sizeof child_errno)) < 0 && errno == EINTR) {
    }
    ::close(ack[0]);
    ::close(fds[0]);
    ::close(fds[1]);
    if (n == static_cast<ssize_t>(sizeof child_errno)) {  // it could not set up and exits 127; reaped in Reap
      ::close(fds[2]);
      Reply("failed " + std::to_string(child_errno) + " " +
            (child_errno == ENOENT || child_errno == ENOTDIR || child_errno == EACCES
                 ? "cannot enter the working directory '" + req.cwd + "': "
                 : std::string("child setup: ")) +
            std::strerror(child_errno));
      return;
    }
    children_[pid].status_fd = fds[2];
    Reply("started " + std::to_string(pid));
  }

  // hooks_.prepare in the request's working directory (the zygote is single-threaded: nothing else sees the
  // change), then back in its own.
  void Prepare(const z::SpawnRequest& req, const std::vector<std::string>& args) {
    if (!hooks_.prepare) return;
    const int here = ::open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (here < 0) return;
    if (req.cwd.empty() || ::chdir(req.cwd.c_str()) == 0) {
      try {
        hooks_.prepare(args, req.env);
      } catch (const std::exception& e) {
        Say(std::string("preparing a run: ") + e.what());
      }
    }
    if (::fchdir(here) != 0) Say(std::string("fchdir: ") + std::strerror(errno));
    ::close(here);
  }

  // In the forked child: become the trial (see zygote.h), then train and exit.
  [[noreturn]] void RunChild(const z::SpawnRequest& req, std::vector<char*>& env, const std::vector<std::string>& args,
                             const std::vector<int>& fds, const int ack[2], pid_t zygote) {
    auto fail = [&ack](int e) {
      if (::write(ack[1], &e, sizeof e) < 0) { /* the zygote sees end of file and reaps a 127 */
      }
      ::_exit(127);
    };
    ::setpgid(0, 0);
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail(errno);
    if (::getppid() != zygote) ::_exit(128 + SIGKILL);  // the zygote died before prctl
    for (int sig = 1; sig < NSIG; ++sig) {
      if (sig != SIGKILL && sig != SIGSTOP) ::signal(sig, SIG_DFL);
    }
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd < 0 || ::dup2(null_fd, 0) < 0 || ::dup2(fds[0], 1) < 0 || ::dup2(fds[1], 2) < 0) fail(errno);
    if (!req.cwd.empty() && ::chdir(req.cwd.c_str()) != 0) fail(errno);
    // The request's environment replaces the zygote's. `env` points into `req`, which lives until exit.
    env.push_back(nullptr);
    environ = env.data();
    // No descriptor of the zygote's: its socket, its signalfd, the other children's status pipes, this one's.
    ::close(null_fd);
    ::close(sock_);
    ::close(sigfd_);
    for (const auto& [pid, c] : children_) ::close(c.status_fd);
    for (int fd : fds) ::close(fd);
    ::close(ack[0]);
    ::close(ack[1]);  // set up: the zygote answers "started"
    int code = 1;
    try {
      code = hooks_.run(args);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ladder-train: %s\n", e.what());
    }
    // Ends as returning from main would, less the libraries' static destructors: stdio and the C++ streams are
    // flushed, every file and communicator of the run was closed inside `run`; what is skipped is LibTorch
    // tearing down its operator registry and the like (about 0.1 s per process, measured), which a process that
    // is about to vanish does not need.
    std::fflush(nullptr);
    std::cout.flush();
    std::cerr.flush();
    ::_exit(code);
  }

  int sock_, sigfd_;
  const ZygoteHooks& hooks_;
  std::map<pid_t, Child> children_;
};

}  // namespace

int RunZygote(int sock, const ZygoteHooks& hooks) {
  // A reply to a client that has gone must not kill the zygote; SIGCHLD arrives through a signalfd (its
  // disposition must not be "ignore", which would reap the children before their status is read).
  ::signal(SIGPIPE, SIG_IGN);
  ::signal(SIGCHLD, SIG_DFL);
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &chld, nullptr);
  const int sigfd = ::signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sigfd < 0) {
    Say(std::string("signalfd: ") + std::strerror(errno));
    return 1;
  }
  if (::fcntl(sock, F_SETFD, FD_CLOEXEC) != 0) {
    Say("fd " + std::to_string(sock) + " is not open: start it with the client's socket there");
    return 1;
  }
  if (hooks.warm_up) {
    try {
      hooks.warm_up();
    } catch (const std::exception& e) {  // only a loss of speed: every child initialises what it needs
      Say(std::string("warm-up: ") + e.what());
    }
  }
  StopBlasThreads();
  CollapseIntoHugePages();
  if (const int threads = ThreadCount(); threads != 1) {
    Say("refusing to serve: " + std::to_string(threads) + " threads (fork needs a single-threaded zygote)");
    z::SendMessage(sock, "failed " + std::to_string(EAGAIN) + " the zygote runs " + std::to_string(threads) +
                             " threads", nullptr, 0);
    return 1;
  }
  z::SendMessage(sock, "ready " + std::to_string(::getpid()) + " " + std::to_string(z::kProtocolVersion), nullptr, 0);
  return Zygote(sock, sigfd, hooks).Serve();
}

}  // namespace ladder::trainer
