#include "trainer/comm/bound_store.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <stdexcept>
#include <thread>

namespace ladder::trainer::comm {

namespace {

using Clock = std::chrono::steady_clock;

enum Op : uint8_t { kHello = 1, kSet, kCompareSet, kGet, kAdd, kDelete, kCheck, kNumKeys, kWait };
enum Status : uint8_t { kOk = 0, kError = 1 };

// A frame's payload may hold Gloo's peer addresses or NCCL's unique id, a few hundred bytes; 64 MiB bounds what a
// stray client can make the server buffer.
constexpr uint32_t kMaxFrame = 64u << 20;
constexpr size_t kMaxConnections = 4096;

struct Writer {
  std::vector<uint8_t> b;
  void U8(uint8_t v) { b.push_back(v); }
  void I64(int64_t v) {
    for (int i = 0; i < 8; ++i) b.push_back(static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * i)));
  }
  void Bytes(const void* p, size_t n) {
    const auto len = static_cast<uint32_t>(n);
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(len >> (8 * i)));
    const auto* c = static_cast<const uint8_t*>(p);
    b.insert(b.end(), c, c + n);
  }
  void Str(const std::string& s) { Bytes(s.data(), s.size()); }
  void Vec(const std::vector<uint8_t>& v) { Bytes(v.data(), v.size()); }
  void Keys(const std::vector<std::string>& keys) {
    I64(static_cast<int64_t>(keys.size()));
    for (const auto& k : keys) Str(k);
  }
};

struct Reader {
  const uint8_t* p;
  size_t n;
  bool ok = true;
  bool Need(size_t k) {
    if (n < k) ok = false;
    return ok;
  }
  uint8_t U8() {
    if (!Need(1)) return 0;
    --n;
    return *p++;
  }
  int64_t I64() {
    if (!Need(8)) return 0;
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
    p += 8, n -= 8;
    return static_cast<int64_t>(v);
  }
  std::vector<uint8_t> Vec() {
    if (!Need(4)) return {};
    uint32_t len = 0;
    for (int i = 0; i < 4; ++i) len |= static_cast<uint32_t>(p[i]) << (8 * i);
    p += 4, n -= 4;
    if (!Need(len)) return {};
    std::vector<uint8_t> v(p, p + len);
    p += len, n -= len;
    return v;
  }
  std::string Str() {
    const auto v = Vec();
    return std::string(v.begin(), v.end());
  }
  std::vector<std::string> Keys() {
    const int64_t count = I64();
    std::vector<std::string> keys;
    for (int64_t i = 0; ok && i < count; ++i) {
      if (!Need(4)) break;  // also bounds count by what the frame can hold
      keys.push_back(Str());
    }
    return keys;
  }
};

std::vector<uint8_t> Frame(const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> f(4 + payload.size());
  const auto len = static_cast<uint32_t>(payload.size());
  for (int i = 0; i < 4; ++i) f[i] = static_cast<uint8_t>(len >> (8 * i));
  std::memcpy(f.data() + 4, payload.data(), payload.size());
  return f;
}

uint32_t FrameLength(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

std::string Where(const std::string& host, uint16_t port) {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

struct AddrInfo {
  addrinfo* list = nullptr;
  AddrInfo(const std::string& host, uint16_t port, int socktype) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = socktype;
    const std::string service = std::to_string(port);
    if (const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &list); rc != 0) {
      throw std::runtime_error("cannot resolve " + host + ": " + gai_strerror(rc));
    }
  }
  ~AddrInfo() { freeaddrinfo(list); }
};

std::string Numeric(const sockaddr* sa, socklen_t len) {
  char host[NI_MAXHOST];
  if (getnameinfo(sa, len, host, sizeof host, nullptr, 0, NI_NUMERICHOST) != 0) return "?";
  return host;
}

void NoDelay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

bool ConstantTimeEqual(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char d = 0;
  for (size_t i = 0; i < a.size(); ++i) d |= static_cast<unsigned char>(a[i] ^ b[i]);
  return d == 0;
}

}  // namespace

// The server: one thread, poll() over the listening socket, the connections and a pipe that stops it.
class StoreServer {
 public:
  StoreServer(const std::string& host, uint16_t port, std::string secret) : secret_(std::move(secret)) {
    AddrInfo ai(host, port, SOCK_STREAM);
    std::string why;
    for (addrinfo* a = ai.list; a && listen_fd_ < 0; a = a->ai_next) {
      const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
      if (fd < 0) continue;
      const int one = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 1024) == 0) {
        listen_fd_ = fd;
        address_ = Numeric(a->ai_addr, a->ai_addrlen);
      } else {
        why = std::strerror(errno);
        close(fd);
      }
    }
    if (listen_fd_ < 0) throw std::runtime_error("cannot listen on " + Where(host, port) + ": " + why);
    if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
      close(listen_fd_);
      throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    }
    thread_ = std::thread([this] { Loop(); });
  }

  ~StoreServer() {
    const char c = 0;
    (void)!write(wake_[1], &c, 1);
    thread_.join();
    for (auto& [fd, conn] : conns_) close(fd);
    close(listen_fd_);
    close(wake_[0]);
    close(wake_[1]);
  }

  const std::string& address() const { return address_; }

 private:
  struct Conn {
    std::vector<uint8_t> in, out;
    bool hello = false;
    bool closing = false;  // close once `out` is written
    uint8_t waiting = 0;   // kGet or kWait while its keys are missing
    std::vector<std::string> keys;
  };

  void Loop() {
    std::vector<pollfd> fds;
    for (;;) {
      fds.clear();
      fds.push_back({wake_[0], POLLIN, 0});
      fds.push_back({listen_fd_, POLLIN, 0});
      for (auto& [fd, c] : conns_) {
        fds.push_back({fd, static_cast<short>((c.closing ? 0 : POLLIN) | (c.out.empty() ? 0 : POLLOUT)), 0});
      }
      if (poll(fds.data(), fds.size(), -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (fds[0].revents) return;
      if (fds[1].revents & POLLIN) Accept();
      for (size_t i = 2; i < fds.size(); ++i) {
        if (!fds[i].revents) continue;
        auto it = conns_.find(fds[i].fd);
        if (it == conns_.end()) continue;
        if (!Service(it->first, it->second)) {
          close(it->first);
          conns_.erase(it);
        }
      }
    }
  }

  void Accept() {
    for (;;) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) return;
      if (conns_.size() >= kMaxConnections) {
        close(fd);
        continue;
      }
      NoDelay(fd);
      conns_[fd];
    }
  }

  // false: close the connection.
  bool Service(int fd, Conn& c) {
    uint8_t buf[65536];
    for (;;) {
      const ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n > 0) {
        if (!c.closing) c.in.insert(c.in.end(), buf, buf + n);
        continue;
      }
      if (n == 0) return false;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      if (errno == EINTR) continue;
      return false;
    }
    // One request at a time: a client sends the next only after the answer, so the next waits for the current.
    while (!c.waiting && !c.closing && c.in.size() >= 4) {
      const uint32_t len = FrameLength(c.in.data());
      if (len > kMaxFrame) return false;
      if (c.in.size() < 4 + size_t{len}) break;
      Reader r{c.in.data() + 4, len};
      Handle(c, r);
      c.in.erase(c.in.begin(), c.in.begin() + 4 + len);
    }
    while (!c.out.empty()) {
      const ssize_t n = send(fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
      if (n > 0) {
        c.out.erase(c.out.begin(), c.out.begin() + n);
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
      if (n < 0 && errno == EINTR) continue;
      return false;
    }
    return !c.closing;
  }

  static void Reply(Conn& c, const Writer& w) {
    const auto f = Frame(w.b);
    c.out.insert(c.out.end(), f.begin(), f.end());
  }
  static void Fail(Conn& c, const std::string& message, bool close_after = false) {
    Writer w;
    w.U8(kError);
    w.Str(message);
    Reply(c, w);
    c.closing = close_after;
  }
  bool Have(const std::vector<std::string>& keys) const {
    for (const auto& k : keys) {
      if (!kv_.count(k)) return false;
    }
    return true;
  }
  void Answer(Conn& c) {  // a get or wait whose keys exist
    Writer w;
    w.U8(kOk);
    if (c.waiting == kGet) w.Vec(kv_.at(c.keys.front()));
    Reply(c, w);
    c.waiting = 0;
    c.keys.clear();
  }
  void WakeWaiters() {
    for (auto& [fd, other] : conns_) {
      if (other.waiting && Have(other.keys)) Answer(other);
      // Sent on this loop pass when fd polls writable; nothing else reads `out` meanwhile.
    }
  }

  void Handle(Conn& c, Reader& r) {
    const uint8_t op = r.U8();
    if (!c.hello) {
      const std::string secret = r.Str();
      if (op != kHello || !r.ok) return Fail(c, "expected a hello", true);
      if (!secret_.empty() && !ConstantTimeEqual(secret, secret_)) {
        return Fail(c, "the rendezvous secret does not match this group's (LADDER_RENDEZVOUS_SECRET)", true);
      }
      c.hello = true;
      Writer w;
      w.U8(kOk);
      return Reply(c, w);
    }
    Writer w;
    w.U8(kOk);
    switch (op) {
      case kSet: {
        std::string key = r.Str();
        auto value = r.Vec();
        if (!r.ok) break;
        kv_[std::move(key)] = std::move(value);
        Reply(c, w);
        return WakeWaiters();
      }
      case kCompareSet: {
        std::string key = r.Str();
        auto expected = r.Vec(), desired = r.Vec();
        if (!r.ok) break;
        // c10d's TCPStore semantics: a missing key is created only when `expected` is empty; the answer is the
        // value the key holds afterwards (or `expected` when it is still missing).
        auto it = kv_.find(key);
        if (it == kv_.end()) {
          if (expected.empty()) {
            w.Vec(desired);
            kv_[std::move(key)] = std::move(desired);
            Reply(c, w);
            return WakeWaiters();
          }
          w.Vec(expected);
        } else {
          if (it->second == expected) it->second = std::move(desired);
          w.Vec(it->second);
        }
        return Reply(c, w);
      }
      case kGet:
      case kWait: {
        c.keys = op == kGet ? std::vector<std::string>{r.Str()} : r.Keys();
        if (!r.ok) break;
        c.waiting = op;
        if (Have(c.keys)) Answer(c);
        return;
      }
      case kAdd: {
        std::string key = r.Str();
        const int64_t delta = r.I64();
        if (!r.ok) break;
        int64_t value = 0;
        if (auto it = kv_.find(key); it != kv_.end()) {
          const std::string s(it->second.begin(), it->second.end());
          char* end = nullptr;
          errno = 0;
          value = std::strtoll(s.c_str(), &end, 10);
          if (s.empty() || *end || errno) return Fail(c, "add: key " + key + " does not hold an integer");
        }
        value += delta;
        const std::string s = std::to_string(value);
        kv_[std::move(key)] = std::vector<uint8_t>(s.begin(), s.end());
        w.I64(value);
        Reply(c, w);
        return WakeWaiters();
      }
      case kDelete: {
        const std::string key = r.Str();
        if (!r.ok) break;
        w.U8(kv_.erase(key) ? 1 : 0);
        return Reply(c, w);
      }
      case kCheck: {
        const auto keys = r.Keys();
        if (!r.ok) break;
        w.U8(Have(keys) ? 1 : 0);
        return Reply(c, w);
      }
      case kNumKeys:
        w.I64(static_cast<int64_t>(kv_.size()));
        return Reply(c, w);
      default:
        break;
    }
    Fail(c, "malformed request (opcode " + std::to_string(op) + ")", true);
  }

  std::string secret_;
  std::string address_;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  std::map<int, Conn> conns_;
  std::map<std::string, std::vector<uint8_t>> kv_;
  std::thread thread_;
};

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
