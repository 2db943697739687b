#pragma once
// The rendezvous store's server (bound_store.h): a thread of rank 0's process, poll() over the socket listening on
// one address, the connections and a pipe that stops it. Internal to trainer/comm.
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

namespace ladder::trainer::comm {

// Thrown when the port is held by another process (EADDRINUSE): unlike other failures to listen, another port
// would do (common/trial_exit_codes.h).
class PortInUse : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class StoreServer {
 public:
  // Binds host:port (the first address it resolves to that binds) and starts the thread; throws
  // std::runtime_error ("cannot listen on HOST:PORT: why") when it cannot, PortInUse when because the port is
  // in use.
  StoreServer(const std::string& host, uint16_t port, std::string secret);
  ~StoreServer();
  // The numeric address it listens on.
  const std::string& address() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ladder::trainer::comm
