#pragma once
// Helpers for the system tests that run the real ladder-server / ladder-worker binaries as child processes.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/support/free_port.h"

extern char** environ;

namespace ladder::testing {

inline std::string BinDir() {
  const char* d = std::getenv("LADDER_BIN_DIR");
  return d ? d : LADDER_TEST_BIN_DIR;
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

}  // namespace ladder::testing
