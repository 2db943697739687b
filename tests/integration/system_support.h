#pragma once
// Helpers for the system tests that run the real ladder-server / ladder-worker binaries as child processes.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <netinet/in.h>
#include <signal.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/free_port.h"

extern char** environ;

namespace ladder::testing {

inline std::string BinDir() {
  const char* d = std::getenv("LADDER_BIN_DIR");
  return d ? d : LADDER_TEST_BIN_DIR;
}

// Rows of one query, opened read-write so a crashed server's WAL is recovered.
inline std::vector<std::vector<std::string>> Query(const std::filesystem::path& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  std::vector<std::vector<std::string>> rows;
  EXPECT_EQ(sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK);
  sqlite3_busy_timeout(db, 5000);
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  while (st && sqlite3_step(st) == SQLITE_ROW) {
    std::vector<std::string> row;
    for (int i = 0; i < sqlite3_column_count(st); ++i) {
      auto* t = sqlite3_column_text(st, i);
      row.push_back(t ? reinterpret_cast<const char*>(t) : "NULL");
    }
    rows.push_back(row);
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return rows;
}

// A child process; killed (SIGKILL) on destruction if still running.
struct Child {
  pid_t pid = -1;
  FILE* out = nullptr;  // its stdout, when captured
  Child() = default;
  Child(const Child&) = delete;
  ~Child() { Kill(SIGKILL); }
  void Kill(int sig) {
    if (pid > 0) {
      kill(pid, sig);
      waitpid(pid, nullptr, 0);
      pid = -1;
    }
    if (out) fclose(out), out = nullptr;
  }
};

inline void Spawn(Child* c, std::vector<std::string> args, bool capture_stdout) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  int fds[2] = {-1, -1};
  if (capture_stdout) {
    ASSERT_EQ(pipe(fds), 0);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
  }
  ASSERT_EQ(posix_spawn(&c->pid, argv[0], &fa, nullptr, argv.data(), environ), 0) << args[0];
  posix_spawn_file_actions_destroy(&fa);
  if (capture_stdout) {
    close(fds[1]);
    c->out = fdopen(fds[0], "r");
  }
}

// Reads the server's "listening on HOST:PORT" banner from its stdout; empty on failure.
inline std::string ReadListenAddress(Child& server) {
  char line[512] = {};
  if (!server.out || !fgets(line, sizeof line, server.out)) return "";
  std::string banner(line);
  auto at = banner.find("listening on ");
  if (at == std::string::npos) return "";
  return banner.substr(at + 13, banner.find(' ', at + 13) - at - 13);
}

// A gate a trial waits at without polling: the test holds an exclusive flock(2) on `path` until Open(); a trial
// waits with `flock -s PATH true`, which blocks until then and passes at once ever after (a requeued run too).
struct Gate {
  int fd = -1;
  explicit Gate(const std::filesystem::path& path) : fd(open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd < 0 || flock(fd, LOCK_EX) != 0) ADD_FAILURE() << "cannot lock " << path;
  }
  void Open() {
    if (fd >= 0) close(fd);
    fd = -1;
  }
  ~Gate() { Open(); }
};

}  // namespace ladder::testing
