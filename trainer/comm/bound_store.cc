#include "trainer/comm/bound_store.h"

#include <cerrno>
#include <thread>

#include "trainer/comm/store_server.h"
#include "trainer/comm/store_wire.h"

namespace ladder::trainer::comm {

using namespace store_wire;

BoundTcpStore::BoundTcpStore(const std::string& host, uint16_t port, bool is_server, std::string secret,
                             std::chrono::milliseconds timeout)
    : c10d::Store(timeout), host_(host), port_(port), secret_(std::move(secret)) {
  if (is_server) server_ = std::make_unique<StoreServer>(host, port, secret_);
  Connect(Clock::now() + timeout);
}

BoundTcpStore::~BoundTcpStore() {
  Disconnect();
  server_.reset();
}

std::string BoundTcpStore::ListenAddress() const { return server_ ? server_->address() : ""; }

void BoundTcpStore::Disconnect() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

namespace {

// Waits until fd is ready for `events` or the deadline passes (false).
bool PollUntil(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto now = Clock::now();
    if (now >= deadline) return false;
    // Rounded up: poll() counts whole milliseconds, and a wait must not end before its deadline.
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
    pollfd p{fd, events, 0};
    const int rc = poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1 << 30)));
    if (rc > 0) return true;
    if (rc < 0 && errno != EINTR) return false;
  }
}

// Sends all of `bytes`; false on error or deadline.
bool SendAll(int fd, const std::vector<uint8_t>& bytes, Clock::time_point deadline) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!PollUntil(fd, POLLOUT, deadline)) return false;
    } else if (!(n < 0 && errno == EINTR)) {
      return false;
    }
  }
  return true;
}

// 1: read; 0: the peer closed; -1: error; -2: deadline.
int RecvAll(int fd, uint8_t* p, size_t n, Clock::time_point deadline) {
  while (n > 0) {
    const ssize_t k = recv(fd, p, n, MSG_DONTWAIT);
    if (k > 0) {
      p += k, n -= static_cast<size_t>(k);
    } else if (k == 0) {
      return 0;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!PollUntil(fd, POLLIN, deadline)) return -2;
    } else if (errno != EINTR) {
      return -1;
    }
  }
  return 1;
}

}  // namespace

void BoundTcpStore::Connect(Clock::time_point deadline) {
  const std::string where = Where(host_, port_);
  std::string why = "timed out";
  auto backoff = std::chrono::milliseconds(10);
  while (fd_ < 0) {
    AddrInfo ai(host_, port_, SOCK_STREAM);
    for (addrinfo* a = ai.list; a && fd_ < 0; a = a->ai_next) {
      const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
      if (fd < 0) continue;
      int rc = connect(fd, a->ai_addr, a->ai_addrlen);
      if (rc != 0 && errno == EINPROGRESS && PollUntil(fd, POLLOUT, deadline)) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        rc = err ? -1 : 0;
        errno = err;
      }
      if (rc == 0) {
        NoDelay(fd);
        fd_ = fd;
      } else {
        why = errno ? std::strerror(errno) : "timed out";
        close(fd);
      }
    }
    if (fd_ >= 0) break;
    if (Clock::now() + backoff >= deadline) {
      throw std::runtime_error("rendezvous store at " + where + ": cannot connect (" + why + ")");
    }
    std::this_thread::sleep_for(backoff);  // rank 0's server may not listen yet
    backoff = std::min(backoff * 2, std::chrono::milliseconds(500));
  }
  Writer w;
  w.U8(kHello);
  w.Str(secret_);
  Exchange(w.b, deadline, timeout_);
}

std::vector<uint8_t> BoundTcpStore::Call(const std::vector<uint8_t>& request, std::chrono::milliseconds timeout) {
  if (fd_ < 0) Connect(Clock::now() + timeout_);
  const auto deadline = timeout == kNoTimeout ? Clock::time_point::max() : Clock::now() + timeout;
  return Exchange(request, deadline, timeout);
}

std::vector<uint8_t> BoundTcpStore::Exchange(const std::vector<uint8_t>& request, Clock::time_point deadline,
                                             std::chrono::milliseconds timeout) {
  const std::string where = "rendezvous store at " + Where(host_, port_);
  uint8_t head[4];
  const bool sent = SendAll(fd_, Frame(request), deadline);
  const int rc = sent ? RecvAll(fd_, head, 4, deadline) : -1;
  std::vector<uint8_t> body;
  int rc2 = rc;
  if (rc == 1) {
    const uint32_t len = FrameLength(head);
    if (len > kMaxFrame || len == 0) {
      rc2 = -1;
    } else {
      body.resize(len);
      rc2 = RecvAll(fd_, body.data(), len, deadline);
    }
  }
  if (rc2 != 1) {
    Disconnect();  // a half-read answer must not be read as the next one's
    if (rc2 == -2) {
      throw std::runtime_error(where + ": no answer in " + std::to_string(timeout.count()) +
                               " ms (timed out waiting for keys)");
    }
    throw std::runtime_error(where + ": connection " + (rc2 == 0 ? "closed by the server" : "failed"));
  }
  Reader r{body.data(), body.size()};
  if (r.U8() != kOk) {
    const std::string message = r.Str();
    Disconnect();
    throw std::runtime_error(where + ": " + message);
  }
  return std::vector<uint8_t>(body.begin() + 1, body.end());
}

void BoundTcpStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  Writer w;
  w.U8(kSet);
  w.Str(key);
  w.Vec(value);
  Call(w.b, timeout_);
}

std::vector<uint8_t> BoundTcpStore::compareSet(const std::string& key, const std::vector<uint8_t>& expected,
                                               const std::vector<uint8_t>& desired) {
  Writer w;
  w.U8(kCompareSet);
  w.Str(key);
  w.Vec(expected);
  w.Vec(desired);
  const auto a = Call(w.b, timeout_);
  Reader r{a.data(), a.size()};
  return r.Vec();
}

std::vector<uint8_t> BoundTcpStore::get(const std::string& key) {
  Writer w;
  w.U8(kGet);
  w.Str(key);
  const auto a = Call(w.b, timeout_);
  Reader r{a.data(), a.size()};
  return r.Vec();
}

int64_t BoundTcpStore::add(const std::string& key, int64_t value) {
  Writer w;
  w.U8(kAdd);
  w.Str(key);
  w.I64(value);
  const auto a = Call(w.b, timeout_);
  Reader r{a.data(), a.size()};
  return r.I64();
}

bool BoundTcpStore::deleteKey(const std::string& key) {
  Writer w;
  w.U8(kDelete);
  w.Str(key);
  const auto a = Call(w.b, timeout_);
  return !a.empty() && a[0] == 1;
}

bool BoundTcpStore::check(const std::vector<std::string>& keys) {
  Writer w;
  w.U8(kCheck);
  w.Keys(keys);
  const auto a = Call(w.b, timeout_);
  return !a.empty() && a[0] == 1;
}

int64_t BoundTcpStore::getNumKeys() {
  Writer w;
  w.U8(kNumKeys);
  const auto a = Call(w.b, timeout_);
  Reader r{a.data(), a.size()};
  return r.I64();
}

void BoundTcpStore::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void BoundTcpStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  Writer w;
  w.U8(kWait);
  w.Keys(keys);
  Call(w.b, timeout);
}

std::string LocalAddressToward(const std::string& host) {
  AddrInfo ai(host, 9, SOCK_DGRAM);  // any port: a UDP connect only picks the route
  for (addrinfo* a = ai.list; a; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    sockaddr_storage local{};
    socklen_t len = sizeof local;
    const bool ok = connect(fd, a->ai_addr, a->ai_addrlen) == 0 &&
                    getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0;
    close(fd);
    if (ok) return Numeric(reinterpret_cast<sockaddr*>(&local), len);
  }
  throw std::runtime_error("no route from this node to " + host);
}

}  // namespace ladder::trainer::comm
