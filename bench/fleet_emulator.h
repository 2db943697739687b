#pragma once
// bench/fleet: N emulated ladder-workers in one process, each speaking the real worker protocol
// (ladder.v1.WorkerService.Connect) over its own gRPC connection to a real ladder-server.
//
// Every emulated worker registers with its own node id (f00000, f00001, ...) and rack label (18 nodes a rack, as on
// Summit), one slot; heartbeats at the interval the coordinator gives it, listing its unacknowledged runs; answers a
// StartTrial with TrialStarted, `points` metric points `point_interval` apart and a TrialExited (exit 0), and
// resends what is unacknowledged after a reconnect, as ladder-worker does — without starting any process.
// Reconnects follow ladder-worker's policy (worker/reconnect_backoff.h: 100 ms doubling to 2 s with jitter, started
// again only after a session that stayed up 30 s; after a RetryRegistration, the slot it names plus jitter), and it
// heartbeats at the interval it is told last (Registered, HeartbeatInterval).
//
// Threads: every worker's state lives on one Boost.Asio loop (the emulator's thread); gRPC's callback threads only
// post what they read there. The bench's main thread reads the counters (atomics) and asks for the start receipts
// through Collect (posted to the loop).
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ladder/v1/ladder.grpc.pb.h"

namespace ladder::bench {

struct FleetOptions {
  std::string address;  // the coordinator's host:port
  int workers = 64;
  int nodes_per_rack = 18;
  int points = 3;                                     // metric points per trial
  std::chrono::milliseconds point_interval{50};       // between a trial's points (and after the last, its exit)
  std::chrono::milliseconds reconnect_initial{100};   // ladder-worker's policy
  std::chrono::milliseconds reconnect_max{2000};
};

// What the fleet saw, counted on the loop, read anywhere.
struct FleetCounters {
  std::atomic<int> registered{0};        // workers registered now
  std::atomic<int64_t> registrations{0};  // Registered messages received, all workers, all time
  std::atomic<int64_t> stream_ends{0};    // streams that ended while the fleet was running
  std::atomic<int64_t> lease_closes{0};   // of those, closed by the coordinator with "lease expired"
  std::atomic<int64_t> starts{0};         // StartTrial messages received
  std::atomic<int64_t> exits_sent{0};
  std::atomic<int64_t> interval_changes{0};  // HeartbeatInterval messages received (the fleet grew)
  std::atomic<int64_t> retries_told{0};      // RetryRegistration messages received (admission control)
};

// One start as a worker received it: the trial, and when (wall clock, seconds since the epoch).
struct StartReceipt {
  int64_t trial_id;
  double received_unix;
};

class EmulatedWorker;
class WorkerSession;

class Fleet {
 public:
  explicit Fleet(FleetOptions options);
  ~Fleet();  // cancels every stream and waits for them to end
  Fleet(const Fleet&) = delete;
  Fleet& operator=(const Fleet&) = delete;

  // Every worker makes its first connection at an even spread over `spread` from now.
  void ConnectAll(std::chrono::milliseconds spread);
  const FleetCounters& counters() const { return counters_; }
  // The starts received so far (copied on the loop).
  std::vector<StartReceipt> Collect();

 private:
  friend class EmulatedWorker;
  friend class WorkerSession;
  FleetOptions opt_;
  FleetCounters counters_;
  boost::asio::io_context loop_;
  std::unique_ptr<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::vector<std::unique_ptr<EmulatedWorker>> workers_;
  std::vector<StartReceipt> receipts_;  // loop only
  std::atomic<int> live_sessions_{0};
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace ladder::bench
