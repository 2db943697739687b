#pragma once
// The rendezvous store's wire format (bound_store.h): frames of a 4-byte little-endian length and that many bytes;
// an opcode, then fields (4-byte length + bytes, or an 8-byte integer). Shared by the server (store_server.cc) and
// the client (bound_store.cc). Internal to trainer/comm.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace ladder::trainer::comm::store_wire {

using Clock = std::chrono::steady_clock;

enum Op : uint8_t { kHello = 1, kSet, kCompareSet, kGet, kAdd, kDelete, kCheck, kNumKeys, kWait };
enum Status : uint8_t { kOk = 0, kError = 1 };

// A frame's payload may hold Gloo's peer addresses or NCCL's unique id, a few hundred bytes; 64 MiB bounds what a
// stray client can make the server buffer.
inline constexpr uint32_t kMaxFrame = 64u << 20;

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

inline std::vector<uint8_t> Frame(const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> f(4 + payload.size());
  const auto len = static_cast<uint32_t>(payload.size());
  for (int i = 0; i < 4; ++i) f[i] = static_cast<uint8_t>(len >> (8 * i));
  std::memcpy(f.data() + 4, payload.data(), payload.size());
  return f;
}

inline uint32_t FrameLength(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

inline std::string Where(const std::string& host, uint16_t port) {
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

inline std::string Numeric(const sockaddr* sa, socklen_t len) {
  char host[NI_MAXHOST];
  if (getnameinfo(sa, len, host, sizeof host, nullptr, 0, NI_NUMERICHOST) != 0) return "?";
  return host;
}

inline void NoDelay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

inline bool ConstantTimeEqual(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char d = 0;
  for (size_t i = 0; i < a.size(); ++i) d |= static_cast<unsigned char>(a[i] ^ b[i]);
  return d == 0;
}


}  // namespace ladder::trainer::comm::store_wire
