#pragma once
// The protocol between a client (ladder-worker's WarmStarter, bench/multifidelity --live) and `ladder-train
// --zygote`, the warm process that forks trainings (trainer/zygote.h). Header-only, POSIX and the standard
// library: the worker includes it without LibTorch.
//
// Transport: an AF_UNIX SOCK_SEQPACKET socket (message boundaries kept; descriptors ride along as SCM_RIGHTS),
// the zygote's end on its fd 3. One request at a time; every message is one datagram:
//   zygote -> client, once, when it can fork:  "ready <zygote pid> <kProtocolVersion>"
//   client -> zygote:  kSpawn, then NUL-terminated fields: cwd, argc, argv..., envc, env... (KEY=VALUE), with
//                      three descriptors: the child's stdout, its stderr, and the write end of a status pipe
//   zygote -> client:  "started <pid>" (the child is the leader of its own process group, pgid == pid), or
//                      "failed <errno> <reason>" (nothing runs; the client starts the command cold)
// Exit status: when the zygote reaps the child it writes the raw wait status (an int, host byte order, as
// waitpid gives it) to the status pipe and closes it. End of file on the status pipe without those 4 bytes
// means the zygote died first: its children die with it (PR_SET_PDEATHSIG), so the child was killed.
// The client closing its socket ends the zygote (and with it any child still running).
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace ladder::trainer::zygote {

inline constexpr int kSocketFd = 3;  // the zygote's end of the socket
inline constexpr int kProtocolVersion = 1;
inline constexpr const char kSpawn[] = "spawn";
inline constexpr int kSpawnFds = 3;                      // stdout, stderr, status pipe
inline constexpr size_t kMaxMessageBytes = 192 * 1024;   // under a Unix socket's default send buffer (208 KiB)

struct SpawnRequest {
  std::string cwd;                 // empty: the zygote's (the worker's) working directory
  std::vector<std::string> argv;   // argv[0] is the program; the rest are ladder-train's arguments
  std::vector<std::string> env;    // the child's whole environment, KEY=VALUE
};

inline std::string EncodeSpawn(const SpawnRequest& r) {
  std::string out(kSpawn, sizeof kSpawn);  // with its NUL
  auto add = [&out](std::string_view s) {
    out.append(s);
    out.push_back('\0');
  };
  add(r.cwd);
  add(std::to_string(r.argv.size()));
  for (const auto& a : r.argv) add(a);
  add(std::to_string(r.env.size()));
  for (const auto& e : r.env) add(e);
  return out;
}

// "" when `bytes` is a well-formed spawn request (then *r holds it), else what is wrong with it.
inline std::string DecodeSpawn(std::string_view bytes, SpawnRequest* r) {
  std::vector<std::string_view> fields;
  for (size_t start = 0; start < bytes.size();) {
    const size_t nul = bytes.find('\0', start);
    if (nul == std::string_view::npos) return "a field is not NUL-terminated";
    fields.push_back(bytes.substr(start, nul - start));
    start = nul + 1;
  }
  size_t i = 0;
  auto next = [&](std::string_view* f) {
    if (i >= fields.size()) return false;
    *f = fields[i++];
    return true;
  };
  auto count = [&](size_t* n) {
    std::string_view f;
    if (!next(&f) || f.empty() || f.size() > 7 || f.find_first_not_of("0123456789") != std::string_view::npos) {
      return false;
    }
    *n = std::stoul(std::string(f));
    return true;
  };
  std::string_view f;
  if (!next(&f) || f != kSpawn) return "not a spawn request";
  if (!next(&f)) return "no working directory field";
  r->cwd = std::string(f);
  size_t n = 0;
  if (!count(&n) || n == 0) return "no argument count (or 0)";
  r->argv.clear();
  for (size_t k = 0; k < n; ++k) {
    if (!next(&f)) return "fewer arguments than counted";
    r->argv.emplace_back(f);
  }
  if (!count(&n)) return "no environment count";
  r->env.clear();
  for (size_t k = 0; k < n; ++k) {
    if (!next(&f)) return "fewer environment entries than counted";
    if (f.find('=') == std::string_view::npos) return "environment entry without '='";
    r->env.emplace_back(f);
  }
  if (i != fields.size()) return "trailing fields";
  return "";
}

// Sends one datagram with `fds` attached. "" on success, else the reason (EMSGSIZE: a request too large).
inline std::string SendMessage(int sock, const std::string& bytes, const int* fds, int nfds, int flags = 0) {
  iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kSpawnFds)] = {};
  if (nfds > 0) {
    if (nfds > kSpawnFds) return "too many descriptors";
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * static_cast<size_t>(nfds));
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * static_cast<size_t>(nfds));
    std::memcpy(CMSG_DATA(c), fds, sizeof(int) * static_cast<size_t>(nfds));
  }
  ssize_t n;
  while ((n = ::sendmsg(sock, &msg, flags | MSG_NOSIGNAL)) < 0 && errno == EINTR) {
  }
  if (n < 0) return std::string("sendmsg: ") + std::strerror(errno);
  if (static_cast<size_t>(n) != bytes.size()) return "sendmsg: short write";
  return "";
}

// Receives one datagram; the descriptors that came with it are appended to *fds (close-on-exec). Returns its
// size, 0 at end of file, -1 with errno set on error (EMSGSIZE: it was larger than kMaxMessageBytes; its
// descriptors are closed).
inline ssize_t ReceiveMessage(int sock, std::string* bytes, std::vector<int>* fds, int flags = 0) {
  bytes->resize(kMaxMessageBytes);
  iovec iov{bytes->data(), bytes->size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kSpawnFds)] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  while ((n = ::recvmsg(sock, &msg, flags | MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
  }
  if (n < 0) {
    bytes->clear();
    return -1;
  }
  const size_t had = fds->size();
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t j = 0; j < k; ++j) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + j * sizeof(int), sizeof fd);
      fds->push_back(fd);
    }
  }
  bytes->resize(static_cast<size_t>(n));
  if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {  // a cut message is no message: its descriptors are closed
    while (fds->size() > had) {
      ::close(fds->back());
      fds->pop_back();
    }
    errno = EMSGSIZE;
    return -1;
  }
  return n;
}

}  // namespace ladder::trainer::zygote
