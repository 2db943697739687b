#pragma once
// Test helpers for processes and files: fresh temp dirs (kept when a test fails), running a program with its
// output captured. No gRPC here, so any test can use it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace ladder::testing {
inline std::filesystem::path FreshDir(const std::string& tag) {
  // A parameterized test's name holds a '/' ("Name/mpi2"): as a path it would leave its parent directory behind.
  std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::replace(name.begin(), name.end(), '/', '_');
  auto dir = std::filesystem::temp_directory_path() / ("ladder-" + tag + "-" + std::to_string(getpid()) + "-" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// A fresh directory, removed at scope exit unless the test failed (then it is kept for a look).
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& tag) : path(FreshDir(tag)) {}
  ~TempDir() {
    // Never throws (a destructor): a file a child process still writes, or one it removed meanwhile, must not
    // turn a passing test into std::terminate.
    std::error_code ec;
    if (!::testing::Test::HasFailure()) std::filesystem::remove_all(path, ec);
  }
  operator const std::filesystem::path&() const { return path; }
  std::filesystem::path operator/(const std::string& rel) const { return path / rel; }
};

struct CommandResult {
  int exit_code = -1;
  std::string out, err;
};

// Runs a program to completion with stdout/stderr captured in files under `dir`; cwd = `dir`.
inline CommandResult RunCommand(std::vector<std::string> args, const std::filesystem::path& dir) {
  CommandResult r;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  auto out = (dir / "cmd.out").string(), err = (dir / "cmd.err").string();
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addchdir_np(&fa, dir.c_str());
  pid_t pid = -1;
  if (posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ) != 0) return r;
  posix_spawn_file_actions_destroy(&fa);
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  auto slurp = [](const std::string& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

}  // namespace ladder::testing
