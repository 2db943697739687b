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

class Db {
 public:
  // Opens (creating if needed) the file in WAL mode and, unless told not to, runs PRAGMA quick_check (a scan of
  // the whole file: seconds for a large database).
  explicit Db(const std::string& path, bool quick_check = true);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  void Exec(std::string_view sql);
  // A cached prepared statement; reset and with bindings cleared.
  Statement& Prepare(const std::string& sql);
  int64_t LastInsertId() const { return sqlite3_last_insert_rowid(db_); }
  bool InTransaction() const { return !sqlite3_get_autocommit(db_); }
  sqlite3* handle() const { return db_; }

 private:
  sqlite3* db_ = nullptr;
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
