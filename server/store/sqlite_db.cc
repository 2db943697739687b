#include "server/store/sqlite_db.h"

#include <cstdio>
#include <filesystem>

namespace ladder::store {

static void Check(sqlite3* db, int rc, std::string_view what) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
    throw SqliteError(std::string(what) + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
  }
}

Statement::Statement(sqlite3* db, std::string_view sql) : db_(db) {
  Check(db_, sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &stmt_,
                                nullptr),
        "prepare");
}
Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement& Statement::Bind(int i, int64_t v) {
  Check(db_, sqlite3_bind_int64(stmt_, i, v), "bind");
  return *this;
}
Statement& Statement::Bind(int i, double v) {
  Check(db_, sqlite3_bind_double(stmt_, i, v), "bind");
  return *this;
}
Statement& Statement::Bind(int i, std::string_view v) {
  Check(db_, sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT), "bind");
  return *this;
}
Statement& Statement::BindNull(int i) {
  Check(db_, sqlite3_bind_null(stmt_, i), "bind");
  return *this;
}
bool Statement::Step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  std::string msg = sqlite3_errmsg(db_);
  sqlite3_reset(stmt_);
  throw SqliteError("step: " + msg);
}
void Statement::Run() {
  while (Step()) {
  }
  Reset();
}
void Statement::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}
std::string Statement::Text(int col) const {
  auto* p = sqlite3_column_text(stmt_, col);
  return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(stmt_, col)) : std::string();
}

namespace {

// `path` as a URI filename (https://sqlite.org/uri.html): the characters a URI gives meaning to, escaped.
std::string UriPath(const std::string& path) {
  std::string out = "file:";
  for (char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", static_cast<unsigned char>(c));
      out += hex;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

void Db::OpenReadOnly(const std::string& path) {
  read_only_ = true;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw SqliteError("no database at '" + path + "'");
  const bool wal = std::filesystem::exists(path + "-wal", ec);
  const std::string uri = UriPath(path) + (wal ? "?mode=ro" : "?mode=ro&immutable=1");
  int rc = sqlite3_open_v2(uri.c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nullptr);
  try {
    if (rc != SQLITE_OK) throw SqliteError(db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc));
    sqlite3_busy_timeout(db_, 5000);
    sqlite3_db_config(db_, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
    Exec("PRAGMA query_only=1");
    Statement probe(db_, "SELECT COUNT(*) FROM sqlite_master");  // the first read: the header, the WAL index
    probe.Step();
  } catch (const SqliteError& e) {
    sqlite3_close(db_);
    db_ = nullptr;
    std::string msg = "cannot read database '" + path + "' (read-only): " + e.what();
    if (wal) {
      msg += "; " + path + "-wal holds commits a read needs, and reading them takes " + path +
             "-shm, which cannot be created here (is its directory read-only?): copy the database with its -wal "
             "to a writable directory, or open it once read-write (ladder-server --db) to checkpoint it";
    }
    throw SqliteError(msg);
  }
}

Db::Db(const std::string& path, bool quick_check, OpenMode mode) {
  if (mode == OpenMode::kReadOnly) {  // no quick_check: a reader that opens it only to read it once
    OpenReadOnly(path);
    return;
  }
  int rc = sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                           nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    throw SqliteError("cannot open database '" + path + "': " + msg);
  }
  sqlite3_busy_timeout(db_, 5000);
  try {
    Exec("PRAGMA journal_mode=WAL");
    // FULL: a commit is on disk when it returns (NORMAL in WAL mode may lose the last commits on power loss),
    // and the coordinator acknowledges metrics and exits to workers only after their commit. Commits are
    // batched (every 50 ms at most), so the cost is one fsync per batch.
    Exec("PRAGMA synchronous=FULL");
    Exec("PRAGMA foreign_keys=ON");
    if (quick_check) {
      Statement check(db_, "PRAGMA quick_check");
      if (check.Step() && check.Text(0) != "ok") {
        throw SqliteError("database '" + path + "' failed quick_check: " + check.Text(0));
      }
    }
  } catch (...) {
    cache_.clear();
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

Db::~Db() {
  cache_.clear();
  if (db_) sqlite3_close(db_);
}

void Db::Exec(std::string_view sql) {
  char* err = nullptr;
  std::string s(sql);
  int rc = sqlite3_exec(db_, s.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    throw SqliteError("exec '" + s.substr(0, 60) + "': " + msg);
  }
}

Statement& Db::Prepare(const std::string& sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) it = cache_.emplace(sql, std::make_unique<Statement>(db_, sql)).first;
  it->second->Reset();
  return *it->second;
}

Transaction::Transaction(Db& db) : db_(db) { db_.Exec("BEGIN IMMEDIATE"); }
Transaction::~Transaction() {
  if (!done_) {
    try {
      db_.Exec("ROLLBACK");
    } catch (...) {
    }
  }
}
void Transaction::Commit() {
  db_.Exec("COMMIT");
  done_ = true;
}

}  // namespace ladder::store
