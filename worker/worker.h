#pragma once
// Worker: the ladder-worker agent as a class (start several in one process for tests, each acting as a node).
//
// Threads: an Asio loop thread owns all state (running trials, the outbox, timers); a session thread holds the
// gRPC stream to the coordinator, blocks in Read() and posts every message to the loop. Writes happen on the
// loop (sync Write under the session's mutex; they are small and the server reads promptly).
//
// Protocol (proto WorkerService.Connect): on every (re)connection the worker sends RegisterWorker listing the
// trials it is still running, so a restarted coordinator re-attaches them; then heartbeats every interval the
// coordinator asked for, TrialStarted/MetricReport/TrialExited as trials progress. Cut off from the coordinator for
// longer than its lease (from its last write), the worker stops the runs it holds before a restarted coordinator
// can give them away (common/coordinator_loss_rule.h); their exits go out when it registers again.
//
// Nothing acknowledged is lost: every metric point (numbered per run) and every exit is kept until the
// coordinator acknowledges it as durable (Acknowledged), and everything unacknowledged is sent again after a
// reconnect (the coordinator drops duplicates by sequence number). A run that ended stays listed (exited) in
// RegisterWorker until its exit is acknowledged. Memory is bounded: when a trial has `max_unacked_points`
// unacknowledged points, the worker stops reading its stdout until acknowledgements catch up (the trial
// blocks on its next write), and resumes below half of that.
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/tls.h"
#include "ladder/v1/ladder.grpc.pb.h"
#include "worker/rank_guard.h"
#include "worker/trial_process.h"
#include "worker/warm_start.h"

namespace ladder::worker {

namespace v1 = ::ladder::v1;

inline constexpr std::chrono::milliseconds kDefaultMetricsFlush{50};
inline constexpr size_t kDefaultMaxUnackedPoints = 50000;
inline constexpr int kMaxPointsPerReport = 4096;

struct WorkerOptions {
  std::string server = "127.0.0.1:50051";
  std::string token;
  TlsFiles tls;                               // ca: verify the coordinator; cert + key: mutual TLS
  std::string node_id;                        // default: the hostname
  int slots = 0;                              // default: the number of cores
  int gpus = -1;                              // default: count /dev/nvidiaN
  std::map<std::string, std::string> labels;  // topology labels (rack, switch, ...)
  std::string address;                        // where other nodes reach this one; default: the hostname
  std::string trial_dir = "ladder-trials";    // per-trial directories (stderr.log, outputs)
  std::vector<std::string> search_dirs;       // where argv[0] is looked up before PATH; default: own bin dir
  std::chrono::milliseconds metrics_flush = kDefaultMetricsFlush;
  std::chrono::milliseconds reconnect_max = std::chrono::milliseconds(2000);
  std::chrono::milliseconds terminate_grace = std::chrono::milliseconds(5000);
  // How long a trial started by srun or mpirun has from its stop signal to its exit, its ranks' agreed checkpoint
  // written, before its launcher is told to end it (worker/launcher_stop.h); Slurm's default KillWait.
  std::chrono::milliseconds launcher_grace = std::chrono::milliseconds(30000);
  size_t max_unacked_points = kDefaultMaxUnackedPoints;  // per trial; then its stdout is not read (backpressure)
  // ladder-train ranks fork from a warm ladder-train --zygote (worker/warm_start.h) instead of starting cold;
  // any other command always starts cold. ladder-worker --cold-starts (or LADDER_COLD_STARTS=1) turns it off.
  bool warm_starts = true;
  // A separate process kills the ranks when this worker falls silent for its lease less RankStopMargin
  // (worker/rank_guard.h), before the coordinator can give their runs to other nodes.
  bool rank_guard = true;
  // Called (from the session thread) when the coordinator refuses the worker's token (or its role), or its TLS
  // certificate at the handshake (worker/certificate_check.h: a few probes in a row; the message then starts with
  // "the TLS handshake with"); the worker then stops reconnecting — neither fixes itself. Unset: it keeps retrying.
  std::function<void(const std::string&)> on_refused;
  // Called (from the loop) when the coordinator releases the worker (v1::Release: its pool's search has ended);
  // ladder-worker then stops and exits 0. Unset: the worker only logs it.
  std::function<void(const std::string& reason)> on_released;
  // How long the worker tries to reach the coordinator before it says so (then again every minute).
  std::chrono::milliseconds unreachable_warning = std::chrono::milliseconds(5000);
};

class Worker {
 public:
  explicit Worker(WorkerOptions options);
  ~Worker();

  void Start();
  // Stops every trial (SIGTERM, then SIGKILL after the grace), then disconnects.
  void Stop();
  // For tests and `ladder up`: true once registered with the coordinator.
  bool WaitRegistered(std::chrono::milliseconds timeout);
  std::string node_id() const { return opt_.node_id; }

 private:
  struct Session {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReaderWriter<v1::WorkerMessage, v1::CoordinatorMessage>> stream;
    std::mutex mu;
    bool closed = false;
    std::chrono::steady_clock::time_point wrote_at{};  // when the last successful Write began (loop-owned)
    bool Write(const v1::WorkerMessage& m);
  };
  struct Running {
    int64_t trial_id = 0, search_id = 0, epoch = 0;
    std::vector<std::shared_ptr<TrialProcess>> ranks;  // local ranks; [0] is the one whose stdout is read
    std::vector<std::string> stderr_paths;              // of each local rank (absolute)
    int64_t stderr_start = 0;                           // rank 0's stderr size at launch: this run wrote the rest
    int first_rank = 0;
    int live_ranks = 0;
    std::string checkpoint_dir;  // created at launch; removed at exit when the trial left nothing in it
    int exit_code = 0;         // of the first rank that failed (or 0)
    std::string exit_error;    // "rank 2: killed by SIGSEGV", the first failure
    TrialProcess* metrics_rank() const { return ranks.empty() ? nullptr : ranks[0].get(); }
    int64_t last_step = -1;
    int64_t ignored = 0;
    std::string last_ignored;            // Printable: a proto string must be UTF-8, a trial's bytes need not be
    int64_t non_finite = 0;              // metrics lines with a NaN or infinite value (skipped)
    std::deque<v1::MetricPoint> points;  // every unacknowledged point, oldest first
    int64_t base_seq = 0;                // sequence number of points.front()
    size_t sent = 0;                     // points[0, sent) went out on the current session
    bool ignored_dirty = false;
    int64_t tail_size_sent = -1;         // rank 0's stderr size when its tail last went out (-1: never)
    v1::Launcher launcher = v1::LAUNCHER_PER_NODE;  // from LADDER_LAUNCHER; SRUN, MPIRUN: ranks[0] starts every rank
    std::string step_name;                          // SRUN: the trial's Slurm step (LADDER_STEP_NAME)
    bool stop_sent = false;                         // StopRanks ran: a second stop signal is never sent
    std::string stop_reason;  // this worker stopped it on its own (the coordinator was gone too long): why
    bool cancelled = false;
    bool worker_stopping = false;        // stopped because this worker is stopping (Stop), not as asked
    bool exited = false;                 // ended; `exit` is kept until the coordinator acknowledges it
    bool exit_held = false;              // ended, its exit not sent before slurmctld says whether the job is preempted
    v1::WorkerMessage exit;
  };

  // --- the connection (worker.cc) ---------------------------------------------------------------------------
  void SessionLoop();
  // The coordinator refused the worker (its token, its role, its certificate): logs `why`; with on_refused, calls
  // it and returns true (the session thread ends), else false (the worker keeps trying).
  bool Refused(const std::string& why);
  void OnConnected(std::shared_ptr<Session> s);
  void OnDisconnected(std::shared_ptr<Session> s, const std::string& why);
  void Handle(const v1::CoordinatorMessage& m);
  void Send(const v1::WorkerMessage& m);  // drops when disconnected (callers keep what must not be lost)
  void ArmHeartbeat();
  // Until when this worker's ranks may run (RankGuard): its last message to the coordinator (while registered; else
  // now) plus the lease less RankStopMargin; nullopt while no lease is known.
  std::optional<std::chrono::steady_clock::time_point> RanksMayRunUntil() const;

  // --- a trial's run (worker_trials.cc) ---------------------------------------------------------------------
  // A start, in steps: refused (RefuseStart), the ranks' launch spec (RankSpec), the run's record (NewRun), its
  // ranks (StartRanks); then TrialStarted, or StartFailed.
  void StartTrial(const v1::StartTrial& m);
  // A start this worker must not run — it is stopping, or it was silent past its lease (the run may be another
  // node's by now) — is answered at once by an exit that says so (cancelled, not the trial's failure): true then.
  bool RefuseStart(const v1::StartTrial& m);
  // What every local rank starts with: the coordinator's argv and environment, the trial's directory (`dir`), this
  // node, the worker's slots, the checkpoint directory (created), and a rendezvous file when every rank is here.
  LaunchSpec RankSpec(const v1::StartTrial& m, const std::string& dir) const;
  Running& NewRun(const v1::StartTrial& m);
  // Starts the local ranks in order (warm when a warm process is ready): the error that stopped it, or "".
  std::string StartRanks(Running& r, const v1::StartTrial& m, LaunchSpec spec, const std::string& dir);
  // Not every rank started: those that did are stopped (the run ends with the error once they are gone), or, when
  // none did, the run ends at once (exit 127).
  void StartFailed(Running& r, const v1::StartTrial& m, const std::string& error);
  // The one place a run's TrialExited is written (kept in r.exit until acknowledged); the run is over.
  static v1::TrialExited& SetExit(Running& r, int exit_code, const std::string& error, bool cancelled,
                                  bool worker_stopping);
  void CancelTrial(int64_t trial_id, int64_t epoch, const std::string& reason);
  // Asks the trial's ranks to stop, once: SIGTERM to each local rank's group (SIGKILL after terminate_grace), or
  // through the launcher that started them all (worker/launcher_stop.h).
  // `grace` caps terminate_grace (and launcher_grace) for this stop.
  void StopRanks(Running& r, std::chrono::milliseconds grace = std::chrono::milliseconds::max());
  // Disconnected: arms the stop of every run held when the coordinator has not heard from this worker for
  // DisconnectedStopAfter(lease) (common/coordinator_loss_rule.h); registering again disarms it.
  void ArmDisconnectedStop(std::chrono::steady_clock::time_point last_heard);
  void StopRunsOfLostCoordinator(std::chrono::milliseconds silent);
  void OnLine(int64_t trial_id, const std::string& line, bool truncated);
  // One rank ended; the trial ends (OnExit) when its last rank has.
  void OnRankExit(int64_t trial_id, int local_rank, int exit_code, const std::string& description);
  void OnExit(int64_t trial_id, int exit_code, const std::string& description);
  void OnAck(const v1::Acknowledged& ack);
  void FlushMetrics(Running& r);
  void SendExit(Running& r);
  void ArmFlush();

  WorkerOptions opt_;
  boost::asio::io_context loop_;
  std::unique_ptr<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::thread loop_thread_, session_thread_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::WorkerService::Stub> stub_;

  // Loop-owned.
  std::shared_ptr<Session> session_;
  bool registered_ = false;
  std::map<int64_t, Running> trials_;
  std::unique_ptr<WarmStarter> warm_;  // null with warm_starts off
  std::string rendezvous_dir_;          // one-node trials' rendezvous files (worker/rendezvous_dir.h), made for the
                                        // first one-node trial of several ranks, removed by the destructor; "" when
                                        // unusable (they fall back to the trial's directory) or not yet needed
  bool rendezvous_tried_ = false;       // whether rendezvous_dir_ was made (or found unusable)
  std::unique_ptr<RankGuard> guard_;   // null with rank_guard off, or when it cannot start
  std::chrono::milliseconds lease_{0};  // as the coordinator said (0: not said)
  boost::asio::steady_timer flush_timer_;
  boost::asio::steady_timer heartbeat_timer_;
  boost::asio::steady_timer disconnected_timer_;  // ArmDisconnectedStop
  bool flush_armed_ = false;
  std::chrono::milliseconds heartbeat_interval_{1000};

  // Shared with the session thread.
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool registered_flag_ = false;
  std::shared_ptr<Session> current_;  // for TryCancel on Stop
};

// This machine's resources as the worker reports them.
v1::WorkerResources DetectResources(const WorkerOptions& opt);

}  // namespace ladder::worker
