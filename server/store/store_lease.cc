// The coordinator's lease on its database (the coordinator_lease table, schema 12): store.h says the contract.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cmath>
#include <ctime>
#include <optional>
#include <random>

#include "common/log.h"
#include "common/wall_clock.h"
#include "server/store/store.h"

namespace ladder::store {

namespace {

constexpr const char* kLog = "store";

struct LeaseRow {
  std::string holder, host;
  int64_t pid = 0;
  double started = 0, heartbeat = 0, timeout_s = 0;
};

constexpr const char* kSelectLease =
    "SELECT holder, host, pid, started_at, heartbeat_at, timeout_s FROM coordinator_lease WHERE id=1";

std::optional<LeaseRow> ReadLease(Statement& st) {
  std::optional<LeaseRow> row;
  if (st.Step()) row = LeaseRow{st.Text(0), st.Text(1), st.Int(2), st.Real(3), st.Real(4), st.Real(5)};
  st.Reset();
  return row;
}

// The lease row as another connection sees it now (this one's open batch reads its own, older snapshot).
std::optional<LeaseRow> ReadLeaseFromNewConnection(const std::string& path) {
  try {
    Db fresh(path, /*quick_check=*/false, OpenMode::kReadOnly);
    Statement st(fresh.handle(), kSelectLease);
    return ReadLease(st);
  } catch (const SqliteError&) {
    return std::nullopt;
  }
}

std::string HostName() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

std::string Utc(double unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", s);
  return buf;
}

std::string Holder(const LeaseRow& row) {
  return "the coordinator on host " + row.host + ", pid " + std::to_string(row.pid) + ", since " + Utc(row.started);
}

std::string NewLeaseId() {
  std::random_device rd;
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08x%08x%08x", rd(), rd(), rd());
  return buf;
}

// Why `row`'s holder is gone and its lease may be taken ("" while it holds it): its heartbeat is older than its
// timeout, or it ran on this host and its process is gone (or is this process: a coordinator of it that ended
// without releasing, since the file lock keeps two of one process off one database).
std::string WhyGone(const LeaseRow& row, double now, const std::string& host) {
  const double age = now - row.heartbeat;
  if (age > row.timeout_s) {
    return "its heartbeat was " + Seconds(age) + " s old, past its timeout of " + Seconds(row.timeout_s) + " s";
  }
  if (row.host == host && (row.pid == ::getpid() || (::kill(static_cast<pid_t>(row.pid), 0) != 0 && errno == ESRCH))) {
    return "its process is gone from this host (heartbeat " + Seconds(age) + " s old)";
  }
  return "";
}

}  // namespace

void Store::TakeLease(std::chrono::milliseconds timeout) {
  const std::string host = HostName();
  const double now = WallNow();
  Transaction txn(db_);
  if (auto row = ReadLease(db_.Prepare(kSelectLease))) {
    const std::string gone = WhyGone(*row, now, host);
    if (gone.empty()) {
      const double age = now - row->heartbeat;
      throw LeaseHeld(
          "the database " + path_ + " is held by " + Holder(*row) + " (heartbeat " + Seconds(age) +
          " s ago); stop it first, or wait " + std::to_string(static_cast<int>(std::ceil(row->timeout_s - age))) +
          " s for its lease to expire if it crashed");
    }
    LogWarning(kLog, "took over the lease on " + path_ + " from " + Holder(*row) + ": " + gone);
  }
  lease_id_ = NewLeaseId();
  lease_timeout_ = timeout;
  auto& st = db_.Prepare(
      "INSERT OR REPLACE INTO coordinator_lease(id, holder, host, pid, started_at, heartbeat_at, timeout_s) "
      "VALUES(1, ?, ?, ?, ?, ?, ?)");
  st.Bind(1, lease_id_).Bind(2, host).Bind(3, static_cast<int64_t>(::getpid())).Bind(4, now).Bind(5, now);
  st.Bind(6, std::chrono::duration<double>(timeout).count());
  st.Run();
  try {
    txn.Commit();
  } catch (...) {
    lease_id_.clear();
    throw;
  }
  lease_renewed_ = lease_renewal_written_ = SteadyClock::now();
}

void Store::LoseLease() {
  lease_id_.clear();  // not ours: nothing more of it is renewed or released
  // Where file locks do not reach the other coordinator, closing would take the "last connection"'s exclusive lock,
  // checkpoint, and delete the -wal that the other one writes.
  sqlite3_db_config(db_.handle(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
}

void Store::CheckLeaseInBatch() {
  auto row = ReadLease(db_.Prepare(kSelectLease));
  if (row && row->holder == lease_id_) return;
  const std::string who = row ? Holder(*row) : std::string("nobody (its lease row was removed)");
  LoseLease();
  throw LeaseLost("the database " + path_ + " is held by " + who + ", not by this coordinator (pid " +
                  std::to_string(::getpid()) + "): it was held up past its lease (" +
                  Seconds(std::chrono::duration<double>(lease_timeout_).count()) +
                  " s) and taken over; it stops without writing anything more");
}

void Store::CheckLeaseFresh() {
  const auto age = SteadyClock::now() - lease_renewed_;
  if (age < lease_timeout_ / 2) return;
  auto row = ReadLeaseFromNewConnection(path_);
  // Best effort: where the WAL's shared memory is not shared with the other coordinator (another host, or locks
  // that do nothing), this host may not see its commits at all; the time rule above is what stops this one.
  const std::string now_held = row && row->holder != lease_id_ ? "; it is now held by " + Holder(*row) : "";
  LoseLease();
  throw LeaseLost("this coordinator's lease on " + path_ + " was last renewed " +
                  Seconds(std::chrono::duration<double>(age).count()) + " s ago, past half its timeout (" +
                  Seconds(std::chrono::duration<double>(lease_timeout_).count()) +
                  " s): it was held up (frozen, or its loop stalled) long enough for another coordinator to take the "
                  "database over" + now_held + "; it stops without committing (a restart recovers what was committed)");
}

void Store::RenewLeaseIfDue() {
  if (!holds_lease() || SteadyClock::now() - lease_renewal_written_ < lease_timeout_ / 10) return;
  BeginIfNeeded();  // checks the row when it begins the batch
  lease_renewal_written_ = SteadyClock::now();
  auto& st = db_.Prepare("UPDATE coordinator_lease SET heartbeat_at=? WHERE id=1 AND holder=?");
  st.Bind(1, WallNow()).Bind(2, lease_id_);
  st.Run();
  if (sqlite3_changes(db_.handle()) != 1) CheckLeaseInBatch();
  lease_renewal_pending_ = true;
}

void Store::ReleaseLease() {
  if (!holds_lease() || db_.InTransaction()) return;
  try {
    Transaction txn(db_);
    auto& st = db_.Prepare("DELETE FROM coordinator_lease WHERE id=1 AND holder=?");
    st.Bind(1, lease_id_);
    st.Run();
    txn.Commit();
  } catch (const SqliteError& e) {
    LogWarning(kLog, "could not release the lease on " + path_ + " (the next start waits for its timeout): " + e.what());
  }
  lease_id_.clear();
}

}  // namespace ladder::store
