#include "trainer/comm/store_server.h"

#include <cerrno>
#include <map>
#include <thread>

#include "trainer/comm/store_wire.h"

namespace ladder::trainer::comm {

using namespace store_wire;

namespace {
constexpr size_t kMaxConnections = 4096;
}  // namespace


struct StoreServer::Impl {
 public:
  Impl(const std::string& host, uint16_t port, std::string secret) : secret_(std::move(secret)) {
    AddrInfo ai(host, port, SOCK_STREAM);
    std::string why;
    bool in_use = false;
    for (addrinfo* a = ai.list; a && listen_fd_ < 0; a = a->ai_next) {
      const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
      if (fd < 0) continue;
      const int one = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 1024) == 0) {
        listen_fd_ = fd;
        address_ = Numeric(a->ai_addr, a->ai_addrlen);
      } else {
        in_use = in_use || errno == EADDRINUSE;
        why = std::strerror(errno);
        close(fd);
      }
    }
    if (listen_fd_ < 0 && in_use) throw PortInUse("cannot listen on " + Where(host, port) + ": " + why);
    if (listen_fd_ < 0) throw std::runtime_error("cannot listen on " + Where(host, port) + ": " + why);
    if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
      close(listen_fd_);
      throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    }
    thread_ = std::thread([this] { Loop(); });
  }

  ~Impl() {
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

  // c10d's TCPStore semantics: a missing key is created only when `expected` is empty; the answer is the value the
  // key holds afterwards (or `expected` when it is still missing). False: the request is malformed.
  bool CompareSet(Conn& c, Reader& r, Writer& w) {
    std::string key = r.Str();
    auto expected = r.Vec(), desired = r.Vec();
    if (!r.ok) return false;
    auto it = kv_.find(key);
    if (it == kv_.end()) {
      if (expected.empty()) {
        w.Vec(desired);
        kv_[std::move(key)] = std::move(desired);
        Reply(c, w);
        WakeWaiters();
        return true;
      }
      w.Vec(expected);
    } else {
      if (it->second == expected) it->second = std::move(desired);
      w.Vec(it->second);
    }
    Reply(c, w);
    return true;
  }

  // Adds to the integer a key holds (a missing key holds 0) and answers the sum. False: the request is malformed.
  bool Add(Conn& c, Reader& r, Writer& w) {
    std::string key = r.Str();
    const int64_t delta = r.I64();
    if (!r.ok) return false;
    int64_t value = 0;
    if (auto it = kv_.find(key); it != kv_.end()) {
      const std::string s(it->second.begin(), it->second.end());
      char* end = nullptr;
      errno = 0;
      value = std::strtoll(s.c_str(), &end, 10);
      if (s.empty() || *end || errno) {
        Fail(c, "add: key " + key + " does not hold an integer");
        return true;
      }
    }
    value += delta;
    const std::string s = std::to_string(value);
    kv_[std::move(key)] = std::vector<uint8_t>(s.begin(), s.end());
    w.I64(value);
    Reply(c, w);
    WakeWaiters();
    return true;
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
      case kCompareSet:
        if (!CompareSet(c, r, w)) break;
        return;
      case kGet:
      case kWait: {
        c.keys = op == kGet ? std::vector<std::string>{r.Str()} : r.Keys();
        if (!r.ok) break;
        c.waiting = op;
        if (Have(c.keys)) Answer(c);
        return;
      }
      case kAdd:
        if (!Add(c, r, w)) break;
        return;
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

StoreServer::StoreServer(const std::string& host, uint16_t port, std::string secret)
    : impl_(std::make_unique<Impl>(host, port, std::move(secret))) {}
StoreServer::~StoreServer() = default;
const std::string& StoreServer::address() const { return impl_->address(); }

}  // namespace ladder::trainer::comm
