#pragma once
// StreamWriter: the write half of a gRPC callback server stream, shared by the Watch and worker stream reactors
// (grpc_services.cc): one write in flight, the others queued in order; a finish asked for while a write is in
// flight waits for it, and nothing more is written once a finish was asked for.
//
// Thread: none of its own. Every call is made under the owning reactor's mutex (the coordinator's loop pushes,
// gRPC's threads complete writes); the reactor hands it its own StartWrite and Finish, which are protected.
// What bounds the queue is the reactor's rule: Watch drops metric events past its limit, a worker's stream holds
// only what the coordinator sends it (starts, cancels, acknowledgements).
#include <functional>
#include <iterator>
#include <list>
#include <utility>

#include <grpcpp/grpcpp.h>

namespace ladder::server {

template <typename Message>
class StreamWriter {
 public:
  StreamWriter(std::function<void(const Message*)> start_write, std::function<void(const grpc::Status&)> finish)
      : start_write_(std::move(start_write)), finish_(std::move(finish)) {}

  // A finish was asked for: nothing more is queued or written.
  bool finishing() const { return finishing_; }
  // Messages not yet written, the one in flight included.
  size_t queued() const { return queue_.size(); }

  // Queues `msg` at the end — or, when `overtakes` is given, ahead of the queued messages at the end that it says
  // `msg` may pass (never ahead of the one in flight) — and writes it when nothing else is in flight.
  void Push(Message msg, bool (*overtakes)(const Message& queued) = nullptr) {
    if (finishing_) return;
    auto pos = queue_.end();
    if (overtakes) {
      const auto first_queued = writing_ ? std::next(queue_.begin()) : queue_.begin();
      while (pos != first_queued && overtakes(*std::prev(pos))) --pos;
    }
    queue_.insert(pos, std::move(msg));
    WriteNext();
  }

  // The reactor's OnWriteDone: the next write, or the finish that waited for this one (at once when it failed).
  void WriteDone(bool ok) {
    writing_ = false;
    if (!queue_.empty()) queue_.pop_front();
    if (!ok) Finish(grpc::Status::OK);
    if (finishing_) {
      if (!finished_) {
        finished_ = true;
        finish_(status_);
      }
      return;
    }
    WriteNext();
  }

  // Finishes the stream with `st` now, or once the write in flight completes (WriteDone). The first status holds.
  void Finish(const grpc::Status& st) {
    if (finishing_) return;
    finishing_ = true;
    status_ = st;
    if (writing_) return;
    finished_ = true;
    finish_(st);
  }

 private:
  void WriteNext() {
    if (writing_ || queue_.empty() || finishing_) return;
    writing_ = true;
    start_write_(&queue_.front());
  }

  std::function<void(const Message*)> start_write_;
  std::function<void(const grpc::Status&)> finish_;
  // A list: the message in flight stays put while another is put ahead of those queued behind it.
  std::list<Message> queue_;
  bool writing_ = false;    // a StartWrite is in flight (queue_.front())
  bool finishing_ = false;  // a finish was asked for
  bool finished_ = false;   // Finish() was called
  grpc::Status status_;
};

}  // namespace ladder::server
