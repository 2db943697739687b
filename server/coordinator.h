#pragma once
// Coordinator: ladder-server's state — searches, trials, nodes — owned by ONE event loop, in named parts:
//
//   NodeManager    (node_manager.h)    workers: registration, leases, worker epochs, quarantine, drain
//   TrialManager   (trial_manager.h)   trials: the state machine, launches, exits, requeues, preemption, watchdog
//   SearchManager  (search_manager.h)  searches: creation, samplers, ASHA/PBT and their replay, the end of a
//                                      search, ensembles, the hero run's band
//   CommitOutbox   (commit_outbox.h)   the store's batch; nothing leaves before the commit it rests on
//   EventHub       (event_hub.h)       what watchers receive
//
// This class builds and wires them, runs the recovery at Start, the periodic checks and the scheduling pass, and
// is the API: the Ladder service's calls (coordinator_ladder_api.cc) and the worker stream's messages
// (coordinator_worker_protocol.cc) translate protos into calls on the parts. docs/ARCHITECTURE.md draws the whole.
//
// Threading: every public method must run on `loop` (the gRPC adapters post onto it). Nothing here blocks
// except SQLite writes, which are batched (store.h). A worker stream is read one message at a time, each read
// started only after the loop has handled the previous message: a fast worker is slowed down by gRPC flow
// control instead of filling an unbounded queue here.
//
// Fail-stop: a store write or commit that throws SqliteError at any entry point calls Fatal: the batch is
// dropped, nothing more is acknowledged, sent or committed, and calls are answered UNAVAILABLE.
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include <grpcpp/support/status.h>

#include "ladder/v1/ladder.pb.h"
#include "server/commit_outbox.h"
#include "server/coordinator_options.h"
#include "server/event_hub.h"
#include "server/node_manager.h"
#include "server/scheduler/scheduler.h"
#include "server/search_manager.h"
#include "server/store/store.h"
#include "server/trial_manager.h"
#include "server/worker_link.h"

namespace ladder::server {

class Coordinator {
 public:
  Coordinator(boost::asio::io_context& loop, store::Store& store, CoordinatorOptions options = {});
  ~Coordinator();

  // Loads state from the store and starts the timers. Over a read-only store (Store::read_only: ladder-server
  // --read-only, the CLI reading a database no coordinator serves) it only loads: no timer, no scheduling pass, no
  // journal entry; the read calls answer from what was stored, every call that would change state is refused
  // (ReadOnlyRefusal) and no worker is accepted (grpc_services.cc).
  void Start();
  bool read_only() const { return store_.read_only(); }
  const std::string& db_path() const { return store_.path(); }
  // Cancels the timers and flushes the store; workers' streams are closed by the gRPC server.
  void Stop();
  // The database failed (a store write or commit threw SqliteError): drops the open batch and stops acting —
  // nothing more is acknowledged, sent or committed — and calls options.on_fatal. Idempotent.
  void Fatal(const std::string& what);
  bool failed() const { return outbox_.failed(); }

  // --- Ladder service (coordinator_ladder_api.cc) ---------------------------------------------------------------
  grpc::Status CreateSearch(const v1::CreateSearchRequest& req, v1::CreateSearchResponse* resp);
  grpc::Status ListSearches(const v1::ListSearchesRequest& req, v1::ListSearchesResponse* resp);
  grpc::Status GetSearch(const v1::GetSearchRequest& req, v1::GetSearchResponse* resp);
  grpc::Status CancelSearch(const v1::CancelSearchRequest& req, v1::CancelSearchResponse* resp);
  grpc::Status AddProbe(const v1::AddProbeRequest& req, v1::AddProbeResponse* resp);
  grpc::Status EnqueueTrial(const v1::EnqueueTrialRequest& req, v1::EnqueueTrialResponse* resp);
  grpc::Status ListTrials(const v1::ListTrialsRequest& req, v1::ListTrialsResponse* resp);
  grpc::Status GetTrial(const v1::GetTrialRequest& req, v1::GetTrialResponse* resp);
  grpc::Status ServerInfo(const v1::ServerInfoRequest& req, v1::ServerInfoResponse* resp);
  grpc::Status ReleaseNode(const v1::ReleaseNodeRequest& req, v1::ReleaseNodeResponse* resp);

  // --- pause (ladder up --slurm before its job ends) ------------------------------------------------------------
  // No trial starts any more, and every running trial is asked to stop through its checkpoint, as a preemption: it
  // goes back to the queue with its attempt and resumes where the database is served next. Idempotent; the
  // coordinator stays paused until it stops. Returns the trials still running (RunningTrials follows them).
  int Pause(const std::string& reason);
  int RunningTrials() const { return trials_.Running(); }
  // Trials whose start was sent and not yet heard of (the start window, CoordinatorOptions::starts_in_flight).
  size_t StartsInFlight() const { return trials_.StartsInFlight(); }

  // Watch: sends the snapshot to `sink` at once (every worker; the watched search, or all; the watched search's
  // trials), then the journal entries the request asks for, then every later event. Returns an id for
  // RemoveWatcher.
  int64_t AddWatcher(const v1::WatchRequest& req, EventSink sink);
  void RemoveWatcher(int64_t id);

  // --- Worker service (coordinator_worker_protocol.cc) ----------------------------------------------------------
  void OnWorkerMessage(const std::shared_ptr<WorkerLink>& link, const v1::WorkerMessage& msg);
  void OnWorkerGone(const std::shared_ptr<WorkerLink>& link, const std::string& reason);
  // The token the worker's stream was opened with was revoked or expired: the stream is closed with `status`
  // (UNAUTHENTICATED, the token's refusal) and the node is down; its trials wait for another node without using
  // up an attempt, and no failure of the node is counted.
  void OnWorkerTokenEnded(const std::shared_ptr<WorkerLink>& link, const grpc::Status& status);

 private:
  // Posts one scheduling pass (coalesced): searches create trials, the node-group scheduler places them.
  void RequestSchedule();
  void Schedule();
  // The periodic checks (every half heartbeat): leases, the watchdog, re-attach deadlines, scheduler aging.
  void ArmTick();
  void Tick();
  std::chrono::milliseconds TickPeriod() const {
    return std::max(opt_.heartbeat_interval / 2, std::chrono::milliseconds(10));
  }

  boost::asio::io_context& loop_;
  store::Store& store_;
  CoordinatorOptions opt_;
  scheduler::NodeGroupScheduler sched_;
  EventHub hub_;
  CommitOutbox outbox_;
  NodeManager nodes_;
  TrialManager trials_;
  SearchManager searches_;
  boost::asio::steady_timer tick_timer_;
  bool stopped_ = false;
  bool paused_ = false;
  bool schedule_posted_ = false;
  double started_unix_ = 0;
};

// FAILED_PRECONDITION for `call` (a call that would change state) on a read-only coordinator of `db_path`.
grpc::Status ReadOnlyRefusal(const std::string& call, const std::string& db_path);

}  // namespace ladder::server
