// Coordinator: the worker stream's messages — register first, then heartbeats, starts, metric reports and exits;
// every message renews the node's lease.
#include "common/log.h"
#include "server/coordinator.h"
#include "server/store/sqlite_db.h"
#include "server/log_component.h"

namespace ladder::server {

void Coordinator::OnWorkerMessage(const std::shared_ptr<WorkerLink>& link, const v1::WorkerMessage& msg) {
  if (stopped_ || link->IsClosed()) return;  // a message read before its stream was closed here
  try {
    if (msg.has_register_()) {
      nodes_.Register(link, msg.register_());
      return;
    }
    auto node = nodes_.NodeOf(link);
    if (!node) {
      link->Close(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                               "the first message on a worker stream must be register (or this connection was "
                               "replaced by a newer one)"));
      return;
    }
    nodes_.Renew(*node);
    switch (msg.body_case()) {
      case v1::WorkerMessage::kHeartbeat: trials_.OnHeartbeat(*node, msg.heartbeat()); break;
      case v1::WorkerMessage::kStarted: trials_.OnStarted(*node, msg.started()); break;
      case v1::WorkerMessage::kMetrics: trials_.OnMetrics(*node, link, msg.metrics()); break;
      case v1::WorkerMessage::kExited: trials_.OnExited(*node, link, msg.exited()); break;
      case v1::WorkerMessage::kStopping:
        LogInfo(kLog, "worker " + *node + " is stopping: " + msg.stopping().reason());
        nodes_.Stopping(*node, "its worker is stopping");
        break;
      default: break;
    }
  } catch (const store::SqliteError& e) {
    Fatal(e.what());
  } catch (const std::exception& e) {
    LogError(kLog, std::string("handling a worker message failed: ") + e.what());
  }
}

void Coordinator::OnWorkerGone(const std::shared_ptr<WorkerLink>& link, const std::string& reason) {
  if (stopped_) return;
  try {
    nodes_.Disconnected(link, reason);
  } catch (const store::SqliteError& e) {
    Fatal(e.what());
  }
}

void Coordinator::OnWorkerTokenEnded(const std::shared_ptr<WorkerLink>& link, const grpc::Status& status) {
  if (stopped_) {
    link->Close(status);
    return;
  }
  try {
    nodes_.TokenEnded(link, status);
  } catch (const store::SqliteError& e) {
    Fatal(e.what());
  }
}

}  // namespace ladder::server
