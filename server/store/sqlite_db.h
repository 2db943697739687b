#pragma once
// Thin RAII layer over SQLite: a connection, cached prepared statements, and transactions that roll back in
// their destructor unless committed. Not thread-safe: one owner (the coordinator's event loop) uses it.
// Failures throw SqliteError: the store is the process's own file, so an error there is fatal to the
// operation, and the caller maps it to a gRPC INTERNAL status or a clear start-up error.
#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>

namespace ladder::store {

class SqliteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Statement {
 public:
  Statement(sqlite3* db, std::string_view sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& Bind(int index, int64_t v);
  Statement& Bind(int index, int v) { return Bind(index, static_cast<int64_t>(v)); }
  Statement& Bind(int index, double v);
  Statement& Bind(int index, std::string_view v);
  Statement& BindNull(int index);
  // Steps once: true when a row is available.
  bool Step();
  // Steps to completion (for writes), then resets.
  void Run();
  void Reset();

  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  double Real(int col) const { return sqlite3_column_double(stmt_, col); }
  bool IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string Text(int col) const;

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

// How a Db opens its file.
enum class OpenMode {
  kReadWrite,  // created if needed, WAL, synchronous=FULL
  // Reading only, never changing the file, its -wal or its directory: with no -wal beside it (the last writer
  // closed and checkpointed), immutable (no locks, no -shm, works on a read-only file and directory); with a -wal
  // (a writer runs, or one stopped without its checkpoint) an ordinary read-only connection, which reads the WAL's
  // commits (it needs the -shm, or a directory where it can create one) and never checkpoints. PRAGMA query_only.
  kReadOnly,
};

class Db {
 public:
  // Opens the file (kReadWrite: creating it if needed, in WAL mode) and, unless told not to, runs PRAGMA
  // quick_check (a scan of the whole file: seconds for a large database).
  explicit Db(const std::string& path, bool quick_check = true, OpenMode mode = OpenMode::kReadWrite);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  void Exec(std::string_view sql);
  // A cached prepared statement; reset and with bindings cleared.
  Statement& Prepare(const std::string& sql);
  int64_t LastInsertId() const { return sqlite3_last_insert_rowid(db_); }
  bool InTransaction() const { return !sqlite3_get_autocommit(db_); }
  sqlite3* handle() const { return db_; }
  bool read_only() const { return read_only_; }

 private:
  void OpenReadOnly(const std::string& path);

  sqlite3* db_ = nullptr;
  bool read_only_ = false;
  std::unordered_map<std::string, std::unique_ptr<Statement>> cache_;
};

class Transaction {
 public:
  explicit Transaction(Db& db);
  ~Transaction();  // rolls back unless Commit() ran
  void Commit();

 private:
  Db& db_;
  bool done_ = false;
};

}  // namespace ladder::store
