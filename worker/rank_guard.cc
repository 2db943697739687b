#include "worker/rank_guard.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ladder::worker {

namespace {

// One message each way, as one SOCK_SEQPACKET datagram.
struct Message {
  int32_t kind = 0;
  int32_t pid = 0;     // kWatch, kUnwatch: the group's leader; kFired: how many groups were killed
  int64_t value = 0;   // kBeat: the deadline, CLOCK_MONOTONIC ns (0: none); kFired: ms since the last beat
};
enum : int32_t { kBeat = 1, kWatch = 2, kUnwatch = 3, kFired = 4 };

constexpr int kMaxHeld = 4096;  // process groups the guard holds at once; more are not guarded

// The guard process runs in a copy of the worker's memory made by a raw clone (a fork without the atfork
// handlers), with other threads' locks possibly held in it: it makes raw system calls only — no allocation, no
// libc wrapper a sanitizer intercepts, no sanitizer instrumentation. Its signals are all blocked.
#define LADDER_GUARD_CODE __attribute__((noinline, no_sanitize("address", "thread", "undefined")))

struct Held {
  int pid;
  int pidfd;
};

LADDER_GUARD_CODE int64_t GuardNow() {
  struct timespec ts = {0, 0};
  syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Kills every group held whose leader is not yet reaped (its number is still its group's), then forgets them all.
LADDER_GUARD_CODE int KillHeld(Held* held, int* n) {
  int killed = 0;
  for (int i = 0; i < *n; ++i) {
    if (syscall(SYS_pidfd_send_signal, held[i].pidfd, 0, nullptr, 0) == 0) {
      syscall(SYS_kill, -held[i].pid, SIGKILL);
      ++killed;
    }
    syscall(SYS_close, held[i].pidfd);
  }
  *n = 0;
  return killed;
}

LADDER_GUARD_CODE void Forget(Held* held, int* n, int pid) {
  for (int i = 0; i < *n; ++i) {
    if (held[i].pid != pid) continue;
    syscall(SYS_close, held[i].pidfd);
    held[i] = held[--*n];
    return;
  }
}

// Reads every message waiting. Returns false at end of file (the worker is gone) or on a broken socket.
LADDER_GUARD_CODE bool Drain(int sock, Held* held, int* n, int64_t* deadline, int64_t* last_heard) {
  for (;;) {
    Message m;
    alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {&m, sizeof m};
    struct msghdr mh;  // field by field: a zeroing initializer may become a call to memset
    mh.msg_name = nullptr;
    mh.msg_namelen = 0;
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = control;
    mh.msg_controllen = sizeof control;
    mh.msg_flags = 0;
    const long got = syscall(SYS_recvmsg, sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (got < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    if (got == 0) return false;
    *last_heard = GuardNow();
    int fd = -1;
    struct cmsghdr* c = CMSG_FIRSTHDR(&mh);
    if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) fd = *reinterpret_cast<int*>(CMSG_DATA(c));
    if (got != static_cast<long>(sizeof m)) {
      if (fd >= 0) syscall(SYS_close, fd);
      continue;
    }
    if (m.kind == kBeat) {
      *deadline = m.value;
    } else if (m.kind == kWatch && fd >= 0 && *n < kMaxHeld) {
      held[(*n)++] = Held{m.pid, fd};
      fd = -1;
    } else if (m.kind == kUnwatch) {
      Forget(held, n, m.pid);
    }
    if (fd >= 0) syscall(SYS_close, fd);
  }
}

[[noreturn]] LADDER_GUARD_CODE void GuardMain(int sock) {
  // Only its socket (as fd 3) and /dev/null as 0, 1, 2: none of the worker's files stay open here.
  if (sock != 3) syscall(SYS_dup3, sock, 3, 0);
#ifdef SYS_close_range
  if (syscall(SYS_close_range, 4, ~0U, 0) != 0)
#endif
  {
    for (int fd = 4; fd < 65536; ++fd) syscall(SYS_close, fd);
  }
  const long null = syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDWR);
  for (int fd = 0; fd < 3 && null >= 0; ++fd) syscall(SYS_dup3, null, fd, 0);
  if (null > 3) syscall(SYS_close, null);
  syscall(SYS_prctl, PR_SET_NAME, "ladder-guard", 0, 0, 0);
  void* table = reinterpret_cast<void*>(syscall(SYS_mmap, nullptr, sizeof(Held) * kMaxHeld, PROT_READ | PROT_WRITE,
                                                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (table == MAP_FAILED) syscall(SYS_exit_group, 1);  // the worker sees end of file: it runs unguarded
  Held* held = static_cast<Held*>(table);
  int n = 0;
  int64_t deadline = 0, last_heard = GuardNow();
  for (;;) {
    struct pollfd p = {3, POLLIN, 0};
    struct timespec wait = {0, 0};
    struct timespec* timeout = nullptr;
    if (deadline != 0) {
      int64_t left = deadline - GuardNow();
      if (left < 0) left = 0;
      wait.tv_sec = left / 1000000000;
      wait.tv_nsec = left % 1000000000;
      timeout = &wait;
    }
    syscall(SYS_ppoll, &p, 1, timeout, nullptr, 0);
    if (!Drain(3, held, &n, &deadline, &last_heard)) {
      KillHeld(held, &n);  // the worker is gone: what it ran goes too
      syscall(SYS_exit_group, 0);
    }
    if (deadline != 0 && GuardNow() >= deadline) {
      deadline = 0;
      if (n == 0) continue;  // nothing to stop (a worker that woke sends a stale deadline first)
      // Said first, so that the worker, once it runs again, knows why its ranks died before it handles their exits.
      Message fired;
      fired.kind = kFired;
      fired.pid = n;
      fired.value = (GuardNow() - last_heard) / 1000000;
      syscall(SYS_sendto, 3, &fired, sizeof fired, MSG_DONTWAIT | MSG_NOSIGNAL, nullptr, 0);
      KillHeld(held, &n);
    }
  }
}

// Clones the guard process (the child never returns). Returns its pid, or -errno.
LADDER_GUARD_CODE long CloneGuard(int child_sock) {
  const long pid = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
  if (pid == 0) GuardMain(child_sock);
  return pid < 0 ? -errno : pid;
}

}  // namespace

RankGuard::RankGuard(boost::asio::io_context& loop, std::function<std::optional<Clock::time_point>()> until,
                     std::function<void(const std::string&)> on_warning)
    : loop_(loop), until_(std::move(until)), on_warning_(std::move(on_warning)), beat_timer_(loop) {}

RankGuard::~RankGuard() {
  *alive_ = false;
  beat_timer_.cancel();
  reader_.reset();
  if (sock_ >= 0) close(sock_);
  if (pid_ > 0) {
    // What it still holds is the worker's to stop (its trials' destructors kill them); the guard goes now.
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

bool RankGuard::Start(std::string* error) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    *error = std::string("socketpair: ") + std::strerror(errno);
    return false;
  }
  // Every signal blocked across the clone: the guard keeps them blocked (it is stopped only by SIGKILL/SIGSTOP).
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  const long pid = CloneGuard(sv[1]);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  close(sv[1]);
  if (pid < 0) {
    close(sv[0]);
    *error = std::string("fork: ") + std::strerror(static_cast<int>(-pid));
    return false;
  }
  pid_ = static_cast<int>(pid);
  sock_ = sv[0];
  const int dup_fd = fcntl(sock_, F_DUPFD_CLOEXEC, 0);
  if (dup_fd >= 0) {
    reader_ = std::make_unique<boost::asio::posix::stream_descriptor>(loop_, dup_fd);
    WaitForMessages();
  }
  Beat();
  return true;
}

void RankGuard::Send(int kind, int pid, int64_t value, int fd) {
  if (sock_ < 0) return;
  Message m;
  m.kind = kind;
  m.pid = pid;
  m.value = value;
  struct iovec iov = {&m, sizeof m};
  struct msghdr mh {};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    mh.msg_control = control;
    mh.msg_controllen = sizeof control;
    struct cmsghdr* c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  // A full buffer means a guard that does not read (stopped): a beat lost then changes nothing.
  while (sendmsg(sock_, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && errno == EINTR) {
  }
}

void RankGuard::Beat() {
  const auto until = until_();
  const auto now = Clock::now();
  Send(kBeat, 0, until ? std::max<int64_t>(1, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                  until->time_since_epoch()).count())
                       : 0);
  // Often enough that a beat's deadline never lapses while the loop runs: a quarter of what is left, 10-250 ms.
  auto period = std::chrono::milliseconds(250);
  if (until) {
    period = std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(*until - now) / 4,
                        std::chrono::milliseconds(10), std::chrono::milliseconds(250));
  }
  beat_timer_.expires_after(period);
  beat_timer_.async_wait([this, alive = alive_](const boost::system::error_code& ec) {
    if (!ec && *alive) Beat();
  });
}

void RankGuard::Watch(int pid) {
  if (sock_ < 0 || pid <= 0) return;
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) return;  // gone already: nothing to guard
  Send(kWatch, pid, 0, pidfd);
  close(pidfd);
  watched_.insert(pid);
  // A beat now: the guard holds the rank to a deadline from the start (the last one may be older than the lease).
  beat_timer_.cancel();
  Beat();
}

std::string RankGuard::Ended(int pid) {
  ReadMessages();  // a "fired" waiting is read before this exit is judged
  if (watched_.erase(pid) > 0) Send(kUnwatch, pid, 0);
  auto it = killed_.find(pid);
  if (it == killed_.end()) return "";
  std::string why = std::move(it->second);
  killed_.erase(it);
  return why;
}

void RankGuard::WaitForMessages() {
  reader_->async_wait(boost::asio::posix::stream_descriptor::wait_read,
                      [this, alive = alive_](const boost::system::error_code& ec) {
    if (ec || !*alive) return;
    ReadMessages();
    if (reader_) WaitForMessages();
  });
}

void RankGuard::ReadMessages() {
  while (sock_ >= 0) {
    Message m;
    const ssize_t n = recv(sock_, &m, sizeof m, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {  // the guard is gone (killed by someone): the ranks run unguarded from now on
      if (!gone_) on_warning_("the rank guard (pid " + std::to_string(pid_) + ") ended; this worker's ranks are no "
                            "longer stopped when it falls silent past its lease");
      gone_ = true;
      reader_.reset();
      close(sock_);
      sock_ = -1;
      return;
    }
    if (n != static_cast<ssize_t>(sizeof m) || m.kind != kFired) continue;
    const std::string why = "stopped by the worker's rank guard: the worker was silent for " +
                            std::to_string(m.value) + " ms, past its lease less the margin";
    for (int pid : watched_) killed_[pid] = why;
    watched_.clear();
    on_warning_("the worker was silent for " + std::to_string(m.value) + " ms, past its lease less the margin: " +
              "its rank guard killed " + std::to_string(m.pid) + " ranks' process groups (their runs may be on " +
              "other nodes by now)");
  }
}

}  // namespace ladder::worker
