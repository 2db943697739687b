#pragma once
// Store: everything the coordinator persists, in one SQLite file (WAL).
//
// Contract:
// * One owner thread (the coordinator's event loop) calls every method.
// * Writes are batched: each write joins an open transaction that Flush() commits. The coordinator calls
//   Flush() from a short timer and before it acknowledges a state-changing request, so an acknowledged
//   change is durable and a crash loses at most the last unacknowledged batch (metric points).
// * Reads on the same connection see the batch's uncommitted writes.
// * Opening runs pending migrations (PRAGMA user_version) in one transaction; a database from a newer
//   ladder is refused with a clear error.
// * PRAGMA quick_check reads the whole file (seconds for millions of metric points), so it runs on its own
//   read-only connection in a background thread after opening, not before the coordinator can serve; a
//   failure is logged as an error and reported by IntegrityProblem(). The destructor interrupts and joins it.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ladder/v1/ladder.pb.h"
#include "server/store/sqlite_db.h"

namespace ladder::store {

namespace v1 = ::ladder::v1;

// How long a coordinator's lease on its database lasts without a heartbeat (ladder-server --db-lease-timeout).
inline constexpr std::chrono::milliseconds kDefaultDbLeaseTimeout{30000};

// The coordinator's lease was taken by another coordinator (or it was held up past half its timeout and may have
// been): a database failure, so every fail-stop path (Coordinator::Fatal) stops the coordinator on it.
class LeaseLost : public SqliteError {
 public:
  using SqliteError::SqliteError;
};

// TakeLease refused: another coordinator holds the lease (what() names it and the wait).
class LeaseHeld : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Store {
 public:
  // kReadWrite: the coordinator's store (migrations, the background quick_check, batched writes).
  // kReadOnly (ladder-server --read-only, the CLI reading a database no coordinator serves): opened as
  // OpenMode::kReadOnly (sqlite_db.h) — no migration (a database of an older schema is refused, naming both
  // versions), no quick_check, no write: every write method throws SqliteError before it touches the file.
  explicit Store(const std::string& path, OpenMode mode = OpenMode::kReadWrite);
  ~Store();
  bool read_only() const { return db_.read_only(); }

  // Waits for the background quick_check; its finding, or nullopt when the database is sound.
  std::optional<std::string> IntegrityProblem();

  int SchemaVersion();
  const std::string& path() const { return path_; }

  // Commits the open batch, if any. Throws SqliteError when the batch was lost: SQLite rolls a transaction back by
  // itself after some errors (SQLITE_FULL, SQLITE_IOERR), and committing nothing must not pass for success.
  void Flush();
  // Drops the open batch (after a failure: what it holds may be half of an operation).
  void Abandon();
  size_t pending_writes() const { return pending_writes_; }

  // Searches: InsertSearch sets search->id.
  void InsertSearch(v1::Search* search);
  void UpdateSearch(const v1::Search& search);
  // The ended state a probe reopened a search from (SearchManager::AddProbe), stored with the search until it
  // ends again (then `state` 0: not reopened).
  struct Reopened {
    int state = 0;  // v1::SearchState; 0: not reopened
    std::string error;
  };
  void SetSearchReopened(int64_t search_id, const Reopened& from);
  std::map<int64_t, Reopened> LoadReopened();  // search id -> the state it was reopened from; only reopened ones
  // Configurations enqueued on a running search (ladder search enqueue; store_points.cc): each row lives until
  // the batch that creates its trial deletes it, so a restart runs the ones not yet created, in id order.
  int64_t InsertEnqueued(int64_t search_id, const v1::StoredPoint& point, double now);
  void DeleteEnqueued(int64_t point_id);
  struct EnqueuedRow {
    int64_t id = 0, search_id = 0;
    v1::StoredPoint point;  // empty params: the row did not decode
  };
  std::vector<EnqueuedRow> LoadEnqueued();  // every search's, in id order
  // A warm-started search's earlier trials (the spec's warm_start:), written in the batch that creates it.
  struct WarmStartRows {
    std::vector<v1::StoredPoint> points;  // in the earlier search's order, each with its objective
    int skipped = 0;                      // earlier trials outside this search's space
    std::string source;                   // "search 3" or "search 3 of PATH"
  };
  void InsertWarmStart(int64_t search_id, const WarmStartRows& w);
  std::map<int64_t, WarmStartRows> LoadWarmStarts();  // search id -> its warm start; only warm-started searches

  // A completed trial's signed constraint values (schema 17; store_constraints.cc): written in the batch that
  // completes it; every trial's that has them, by trial id.
  void SetTrialConstraints(int64_t trial_id, const std::vector<double>& values);
  std::map<int64_t, std::vector<double>> LoadTrialConstraints();

  // Trials: InsertTrial sets trial->id and stores its params.
  void InsertTrial(v1::Trial* trial);
  // `outside_stop`: why a member of its running group was stopped from outside ladder (TrialRecord::outside_stop,
  // schema 11); "" none.
  void UpdateTrial(const v1::Trial& trial, int64_t assignment_epoch, const std::string& outside_stop = "");
  void AppendMetrics(int64_t trial_id, const v1::MetricPoint& point);
  // Only the fields that change with every metrics report: metric_count, ignored_lines, last_ignored_line.
  void UpdateTrialProgress(const v1::Trial& trial);

  void UpsertNode(const v1::WorkerInfo& node);
  void OpenAllocation(int64_t trial_id, int attempt, const std::string& node_id, const std::string& slots,
                      int64_t assignment_epoch, double now);
  void CloseAllocation(int64_t trial_id, int64_t assignment_epoch, const std::string& outcome, double now);
  // Appends to the journal (the events table); returns the entry's seq.
  int64_t AppendEvent(const std::string& kind, int64_t search_id, int64_t trial_id, const std::string& detail,
                      double now);
  // Journal entries after `after_seq`, the newest `limit` of them, oldest first; for search_id != 0 only that
  // search's and those about no search (nodes).
  std::vector<v1::JournalEntry> LoadJournal(int64_t search_id, int64_t after_seq, int limit);

  // Restart: everything needed to rebuild the coordinator's state.
  std::vector<v1::Search> LoadSearches();
  std::vector<v1::WorkerInfo> LoadNodes();
  std::vector<v1::Trial> LoadTrials(std::vector<int64_t>* assignment_epochs,
                                   std::vector<std::string>* outside_stops = nullptr);
  int64_t MaxAssignmentEpoch();
  std::vector<v1::MetricPoint> LoadMetrics(int64_t trial_id);
  // What a reader gets (GetTrial): every point when the trial's steps span at most max_points (and the rows fit
  // max_rows), in the order stored; otherwise the steps that are multiples of step_stride (1, 2 or 5 x 10^k, the
  // smallest that fits) and the last step, in step order. Cost: two index seeks plus one per returned step.
  struct MetricsView {
    std::vector<v1::MetricPoint> points;
    int64_t step_stride = 0;  // 0: not thinned
  };
  MetricsView LoadMetricsView(int64_t trial_id, int64_t max_points, int64_t max_rows);
  // Every stored point of the search's trials that carries one of `names`, in the order they were stored
  // (across trials), only those values: what a restarted stopping rule replays.
  struct SearchPoint {
    int64_t trial_id = 0;
    v1::MetricPoint point;
  };
  std::vector<SearchPoint> LoadSearchMetrics(int64_t search_id, const std::vector<std::string>& names);
  // Replaces a trial's parameters (PBT gives a trial new ones when it exploits another).
  void ReplaceParams(const v1::Trial& trial);

  // A trial's history, for the dashboards (store_history.cc).
  void SetLogTail(int64_t trial_id, const std::string& tail);  // rank 0's stderr end, once it exited
  std::string LoadLogTail(int64_t trial_id);
  std::vector<v1::Attempt> LoadAttempts(int64_t trial_id);  // its runs (allocations), oldest first
  std::vector<v1::JournalEntry> LoadTrialJournal(int64_t trial_id, int limit);  // the newest `limit`, oldest first
  // Node-seconds of every trial's ended runs (each run: its nodes x its duration).
  std::map<int64_t, double> LoadEndedNodeSeconds();

  // Access tokens other than <db>.token (store_tokens.cc): each stored as its SHA-256 (hex), never the token.
  struct TokenRow {
    v1::TokenInfo info;
    std::string sha256;
  };
  // expires_unix: when it stops being valid on its own (0: never).
  int64_t InsertToken(const std::string& name, v1::TokenRole role, const std::string& sha256, double now,
                      double expires_unix = 0);
  void RevokeToken(int64_t id, double now);  // a revoked token stays listed, with its revoked_unix
  std::vector<TokenRow> LoadTokens();

  // The coordinator's lease on the database (store_lease.cc; the coordinator_lease table, schema 12). File locks
  // may be node-local on a parallel filesystem, so the database itself says which coordinator writes it: its host,
  // pid, start and heartbeat. A read-only store takes none.
  // * TakeLease (at start, before anything is written): refused (std::runtime_error naming the holder's host, pid,
  //   start and heartbeat age, and how long until its lease expires) while another coordinator's heartbeat is newer
  //   than its timeout; a stale one, or one whose process is gone from this host, is taken over with a warning that
  //   names it and its age.
  // * Every batch checks the lease row when it begins (one lookup by primary key; throws LeaseLost naming the new
  //   holder), and Flush refuses to commit (LeaseLost) when the last committed renewal is older than half the
  //   timeout: a coordinator held up that long (frozen, its loop stalled) may have been taken over meanwhile.
  // * RenewLeaseIfDue (the coordinator's tick) writes the heartbeat into the batch every tenth of the timeout.
  // * ReleaseLease (a clean stop, after the last commit) removes the row: the next start need not wait.
  void TakeLease(std::chrono::milliseconds timeout);
  void RenewLeaseIfDue();
  void ReleaseLease();
  bool holds_lease() const { return !lease_id_.empty(); }

 private:
  void BeginIfNeeded();
  void Migrate();
  void CheckSchemaReadable();
  void InsertParams(const v1::Trial& trial);

  void CheckLeaseInBatch();  // after BEGIN: the row is still ours (LeaseLost otherwise)
  void CheckLeaseFresh();    // before COMMIT: the last committed renewal is recent enough (LeaseLost otherwise)
  void LoseLease();          // forgets the lease, and closing will not checkpoint (another coordinator writes)

  void CheckIntegrity();
  // A journal entry from a row of (seq, time, kind, search_id, trial_id, detail).
  static v1::JournalEntry JournalRow(const Statement& st);

  std::string path_;
  Db db_;
  size_t pending_writes_ = 0;
  std::mutex check_mu_;
  std::optional<std::string> integrity_problem_;
  sqlite3* check_db_ = nullptr;  // under check_mu_, so that the destructor can interrupt it safely
  bool closing_ = false;         // under check_mu_
  std::thread check_thread_;
  // The lease (store_lease.cc): this coordinator's id in the row ("" none), its timeout, when its last committed
  // renewal was written, and the renewal the open batch holds.
  using SteadyClock = std::chrono::steady_clock;
  std::string lease_id_;
  std::chrono::milliseconds lease_timeout_{0};
  SteadyClock::time_point lease_renewed_{}, lease_renewal_written_{};
  bool lease_renewal_pending_ = false;
};

}  // namespace ladder::store
