#pragma once
// CoordinatorOptions: every setting of the coordinator, with its named default (ladder-server's flags set them).
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "server/scheduler/scheduler.h"

namespace ladder::server {

using Clock = std::chrono::steady_clock;

inline constexpr std::chrono::milliseconds kDefaultHeartbeatInterval{1000};
inline constexpr std::chrono::milliseconds kDefaultHeartbeatTimeout{5000};
// Heartbeats the coordinator asks for per second, fleet-wide: past this many workers x the interval, the interval
// (and every lease with it) grows with the fleet, so an idle fleet's cost stays flat (NodeManager).
inline constexpr int kDefaultHeartbeatsPerSecond = 250;
// Registrations admitted per second (a bucket of one second's worth): past it, a registering worker is told to come
// back later (v1::RetryRegistration) at a slot of its own, so a storm is spread over the time it needs instead of
// piling up. A worker that reports running trials is always admitted (its trials wait on it). At most
// kMaxRegistrationRetry ahead.
inline constexpr int kDefaultRegistrationsPerSecond = 1000;
inline constexpr std::chrono::seconds kMaxRegistrationRetry{60};
// A scheduling pass commits and sends its starts every this many launches, so that the first trials of a large pass
// (thousands of free nodes) start while the rest are placed, instead of all waiting for the end of the pass.
inline constexpr int kDefaultStartsPerCommit = 32;
// Trials whose start was sent and not yet heard of (TrialStarted, or a metric report): past this many, a scheduling
// pass places no more until half of them are. A start's wait between the decision and the worker is then bounded
// by this window over the rate the workers take starts at, instead of growing with every free node at once
// (thousands, after a wave of ends on a large fleet: the decided starts queued in the transport behind each other
// and everything else). One commit's worth: the starts of one commit leave together, and half of them heard of
// lets the next half-commit be placed. The wait grows with the window: at 4,608 emulated workers and about
// 2,200 starts a second, p99 18-20 ms at 32, 24-29 ms at 64, 38-55 ms at 128, the same rate at each (bench/fleet).
inline constexpr int kDefaultStartsInFlight = kDefaultStartsPerCommit;
// A start not heard of within this long no longer holds the window (a worker that went away; its lease decides).
inline constexpr std::chrono::seconds kStartHeardWithin{10};
// How long a stream's acknowledgements of metric points may wait to leave together (CommitOutbox); exits and
// those a worker asks for (its window half full) leave with the next commit.
inline constexpr std::chrono::milliseconds kDefaultAckDelay{1000};
// ListTrials pages: what a call without page_size gets, and the most one call may ask for.
inline constexpr size_t kDefaultTrialsPage = 5000;
inline constexpr size_t kMaxTrialsPage = 50000;
// GetTrial's metric points: what a call without max_metric_points gets, the most one may ask for, and the most
// values (rows) one answer carries (about 30 bytes each: well inside gRPC's 4 MB per message).
inline constexpr int64_t kDefaultMetricPoints = 10000;
inline constexpr int64_t kMaxMetricPoints = 100000;
inline constexpr int64_t kMaxMetricRows = 100000;
inline constexpr std::chrono::milliseconds kDefaultFlushInterval{50};
inline constexpr int kDefaultQuarantineAfter = 3;
inline constexpr std::chrono::seconds kDefaultQuarantineWindow{600};

struct CoordinatorOptions {
  std::chrono::milliseconds heartbeat_interval = kDefaultHeartbeatInterval;
  std::chrono::milliseconds heartbeat_timeout = kDefaultHeartbeatTimeout;  // the lease (at heartbeat_interval)
  int heartbeats_per_second = kDefaultHeartbeatsPerSecond;
  int registrations_per_second = kDefaultRegistrationsPerSecond;  // 0: no bound
  int starts_per_commit = kDefaultStartsPerCommit;
  int starts_in_flight = kDefaultStartsInFlight;  // 0: no bound
  std::chrono::milliseconds ack_delay = kDefaultAckDelay;
  std::chrono::milliseconds flush_interval = kDefaultFlushInterval;
  std::string master_addr = "127.0.0.1";  // rendezvous address given to rank 0 of 1-node trials
  // The rendezvous port of a multi-rank trial (MASTER_PORT, where rank 0 serves the c10d store): base + trial id
  // modulo span, another port of the range after a collision (server/rendezvous_port.h). Two coordinators whose
  // trials may share a node need disjoint ranges. The default, 29500-32499, stays below Linux's ephemeral ports.
  int rendezvous_port_base = 29500;
  int rendezvous_port_span = 3000;
  // How long after the start workers are expected to be registering (a restarted coordinator's, a Slurm job's
  // step): a search whose trials no node up can hold is said only after it (TrialManager). 0: one lease
  // (heartbeat_timeout, the re-attach window); ladder up --slurm: its wait for the step's workers.
  std::chrono::milliseconds registration_window{0};
  std::chrono::milliseconds RegistrationWindow() const {
    return registration_window.count() > 0 ? registration_window : heartbeat_timeout;
  }
  int quarantine_after = kDefaultQuarantineAfter;  // node failures within the window that quarantine it
  std::chrono::seconds quarantine_window = kDefaultQuarantineWindow;
  // Root of the per-trial checkpoint directories (ROOT/search-S/trial-T, on storage every node sees);
  // empty: "<database path>.checkpoints".
  std::string checkpoint_root;
  // The words that start an MPI launch (resources.launcher: mpirun): the group's first worker runs
  // MPIRUN... -np WORLD --host a:R,b:R -x NAME... COMMAND (e.g. {"mpirun", "--allow-run-as-root"}).
  std::vector<std::string> mpirun = {"mpirun"};
  // The words that start a Slurm step (resources.launcher: srun): SRUN... --nodes=N --ntasks=W ... COMMAND.
  std::vector<std::string> srun = {"srun"};
  scheduler::SchedulerOptions scheduling;
  std::string version = "0.1.0";
  // Called once when the database fails (a write or a commit throws): the coordinator has stopped — its memory
  // may be ahead of what is stored — and a restart recovers from what was committed (workers resend the rest).
  // ladder-server exits on it. Unset: the coordinator only stops.
  std::function<void(const std::string&)> on_fatal;
};

}  // namespace ladder::server
