#pragma once
// The two handles through which the coordinator talks to the outside: a worker's stream and a watcher.
#include <functional>

#include <grpcpp/support/status.h>

#include "ladder/v1/ladder.pb.h"

namespace ladder::server {

namespace v1 = ::ladder::v1;

// The coordinator's handle on one connected worker stream. Implemented by the gRPC bidi reactor and by fakes
// in tests. Send and Close are thread-safe and never block.
class WorkerLink {
 public:
  virtual ~WorkerLink() = default;
  virtual void Send(const v1::CoordinatorMessage& msg) = 0;
  virtual void Close(const grpc::Status& status) = 0;
  // Whether Close was called on this stream: what it still delivers is ignored. (A fake may say false throughout.)
  virtual bool IsClosed() const { return false; }
};

// A subscriber to the event stream. Called on the coordinator's loop; must not block.
using EventSink = std::function<void(const v1::Event&)>;

}  // namespace ladder::server
