#pragma once
// The rendezvous store of a multi-node trial: a c10d::Store served by rank 0 on one address only.
//
// c10d's TCPStore in LibTorch 1.13 has no bind option: its server listens on every interface of rank 0's node,
// and anyone who reaches the port may read or write the keys the ranks exchange (Gloo's peer addresses, NCCL's
// unique id). This store's server listens on MASTER_ADDR's own address (the interface the group's nodes reach
// rank 0 by), and when the group has a secret (LADDER_RENDEZVOUS_SECRET, a random value the coordinator hands
// every rank of one run over its TLS channel) a connection that does not open with it is closed before it can
// read or write anything.
//
// Protocol (one request at a time per connection, framed as a 4-byte little-endian length and that many bytes):
// an opcode byte, then fields (4-byte length + bytes, or an 8-byte integer). get and wait are answered when their
// keys exist; the client waits at most its timeout and then closes the connection (a later call reconnects).
// The server is a thread of rank 0's process with poll(): no dependency beyond POSIX, as the trainer builds on a
// GPU box with nothing but LibTorch.
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ladder::trainer::comm {

class StoreServer;

class BoundTcpStore : public c10d::Store {
 public:
  // is_server: start the server on host:port first (throws std::runtime_error naming the address when it cannot
  // bind). Every instance, the server's included, is a client of it; connecting retries until `timeout`.
  BoundTcpStore(const std::string& host, uint16_t port, bool is_server, std::string secret,
                std::chrono::milliseconds timeout);
  ~BoundTcpStore() override;

  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> compareSet(const std::string& key, const std::vector<uint8_t>& expected,
                                  const std::vector<uint8_t>& desired) override;
  std::vector<uint8_t> get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t value) override;
  bool deleteKey(const std::string& key) override;
  bool check(const std::vector<std::string>& keys) override;
  int64_t getNumKeys() override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

  // The address the server listens on ("" for a client-only instance): for tests and the log.
  std::string ListenAddress() const;

 private:
  // Connects when not connected, sends request, returns the answer's fields; throws on error or after timeout
  // (kNoTimeout: none), closing the connection so that a late answer is never read as the next one's.
  std::vector<uint8_t> Call(const std::vector<uint8_t>& request, std::chrono::milliseconds timeout);
  std::vector<uint8_t> Exchange(const std::vector<uint8_t>& request, std::chrono::steady_clock::time_point deadline,
                                std::chrono::milliseconds timeout);
  void Connect(std::chrono::steady_clock::time_point deadline);
  void Disconnect();

  std::string host_;
  uint16_t port_;
  std::string secret_;
  int fd_ = -1;
  std::unique_ptr<StoreServer> server_;
};

// The local address of the interface this node uses to reach host (a UDP connect, nothing sent): where a rank's
// Gloo pairs listen, so that each rank binds on its own node rather than on MASTER_ADDR. Throws when host does
// not resolve.
std::string LocalAddressToward(const std::string& host);

}  // namespace ladder::trainer::comm
