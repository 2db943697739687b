#pragma once
// RankGuard: a worker's ranks stop before its lease can run out — the rule every lease holder keeps. A separate
// process (forked once, when the worker starts) holds each rank's process group; the worker tells it, every beat,
// until when its ranks may run: the worker's last message to the coordinator plus the lease less the margin
// (RankStopMargin) while it is registered — the coordinator cannot give the runs away before that message's
// arrival plus the lease — or, while it is not registered, its beat's own time plus the same. When that time
// passes without a newer beat (the worker stopped: SIGSTOP, a debugger, a machine so loaded it does not run),
// the guard kills every process group it holds (SIGKILL), so the old run is gone before the coordinator's lease
// expires and the trial starts on another node. A process that cannot be paused with the worker is the only
// one that can notice its silence: a parent-death signal does not fire on SIGSTOP.
//
// Contract:
// * Every call on the worker's loop thread; the beats run on that loop (a stalled loop is a silent worker).
// * Any command is guarded, cold or warm started: the guard holds the rank's process group (its leader's pid,
//   with a pidfd, so a group whose leader is gone and reaped is never signalled: its number may be another's).
// * The guard says "fired" before it kills; the worker reads that before it handles a rank's exit (Ended), so an
//   exit the guard caused is reported as such (cancelled, with the reason), never as the trial's failure.
// * The worker's end (the socket closes: a normal stop, or kill -9) ends the guard; it kills what it still holds
//   first (nothing, after a normal stop).
// * After firing it holds nothing and waits for beats again: a worker that wakes goes on (its runs are fenced).
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

namespace ladder::worker {

// The margin a worker's ranks keep from its lease: they stop when the worker has been silent for the lease less
// this — a fifth of the lease (1 s of the default 5 s lease: --heartbeat-timeout-ms).
inline std::chrono::milliseconds RankStopMargin(std::chrono::milliseconds lease) { return lease / 5; }

class RankGuard {
 public:
  using Clock = std::chrono::steady_clock;  // CLOCK_MONOTONIC on Linux: the guard reads the same clock
  // until(): asked at every beat, the time until which the ranks may run; nullopt: no limit (no lease known yet).
  // on_warning(what): for the log: the guard killed ranks (how many, after how long a silence), or it ended.
  RankGuard(boost::asio::io_context& loop, std::function<std::optional<Clock::time_point>()> until,
            std::function<void(const std::string&)> on_warning);
  ~RankGuard();  // closes the socket (the guard exits) and reaps the guard
  RankGuard(const RankGuard&) = delete;
  RankGuard& operator=(const RankGuard&) = delete;

  // Starts the guard process and the beats. false with *error naming the failed call otherwise.
  bool Start(std::string* error);
  // Holds the process group led by `pid` (a rank just started).
  void Watch(int pid);
  // The rank led by `pid` has ended: lets its group go. Returns why the guard killed it, or "" when it did not.
  std::string Ended(int pid);
  int pid() const { return pid_; }

 private:
  void Send(int kind, int pid, int64_t value, int fd = -1);
  void Beat();
  void WaitForMessages();
  void ReadMessages();

  boost::asio::io_context& loop_;
  std::function<std::optional<Clock::time_point>()> until_;
  std::function<void(const std::string&)> on_warning_;
  int pid_ = 0;
  int sock_ = -1;  // the worker's end
  std::unique_ptr<boost::asio::posix::stream_descriptor> reader_;  // a duplicate of sock_, for async waits
  boost::asio::steady_timer beat_timer_;
  std::set<int> watched_;
  std::map<int, std::string> killed_;  // pid -> why, until its exit is handled
  bool gone_ = false;                  // the guard ended (logged once)
  // False once destroyed. A timer or read completion already queued with success when the guard is destroyed
  // still runs on the loop; its handler checks this (shared with it) before touching the guard.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace ladder::worker
