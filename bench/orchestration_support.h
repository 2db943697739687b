#pragma once
// Shared by the coordinator benchmarks (bookkeeping, ingest, recovery): child processes of the real
// ladder-server / ladder-worker binaries, a temp directory removed at exit, a gRPC client, process memory.
#include <grpcpp/grpcpp.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "ladder/v1/ladder.grpc.pb.h"
#include "tests/support/free_port.h"
#include <sqlite3.h>

extern char** environ;

namespace ladder::bench {

namespace v1 = ::ladder::v1;

inline double Seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

// The directory of this executable: ladder-server and ladder-worker are built next to it.
inline std::string OwnDir() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : p.parent_path().string();
}

// A fresh directory under $TMPDIR, removed (with everything in it) on destruction.
struct TempDir {
  std::filesystem::path path;
  bool keep = false;  // a failed run's files, left for a look (the bench says where)
  explicit TempDir(const std::string& tag) {
    std::string templ = (std::filesystem::temp_directory_path() / ("ladder-bench-" + tag + "-XXXXXX")).string();
    if (!mkdtemp(templ.data())) throw std::runtime_error("mkdtemp failed");
    path = templ;
  }
  ~TempDir() {
    if (keep) {
      std::fprintf(stderr, "kept for a look: %s\n", path.c_str());
      return;
    }
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

// A child process, SIGKILLed on destruction if still running.
struct Child {
  pid_t pid = -1;
  FILE* out = nullptr;
  Child() = default;
  Child(const Child&) = delete;
  ~Child() { Stop(SIGKILL); }
  // stdout: captured (read `out`), or to `stdout_path` when given, else inherited; stderr to log_path when given.
  void Start(std::vector<std::string> args, bool capture_stdout, const std::string& log_path = "",
             const std::string& stdout_path = "") {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    int fds[2] = {-1, -1};
    if (capture_stdout) {
      if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
      posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
      posix_spawn_file_actions_addclose(&fa, fds[0]);
    }
    if (!log_path.empty()) posix_spawn_file_actions_addopen(&fa, 2, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (!capture_stdout && !stdout_path.empty()) {
      posix_spawn_file_actions_addopen(&fa, 1, stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    }
    int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) throw std::runtime_error("cannot start " + args[0]);
    if (capture_stdout) {
      close(fds[1]);
      out = fdopen(fds[0], "r");
    }
  }
  void Stop(int sig) {
    if (pid > 0) {
      kill(pid, sig);
      waitpid(pid, nullptr, 0);
      pid = -1;
    }
    if (out) fclose(out), out = nullptr;
  }
};

// Starts ladder-server on 127.0.0.1 (port 0 unless given) and returns the address it printed.
inline std::string StartServer(Child& c, const std::string& db, const std::vector<std::string>& extra,
                               const std::string& log_path, const std::string& listen = "127.0.0.1:0") {
  std::vector<std::string> args = {OwnDir() + "/ladder-server", "--listen", listen, "--db", db, "--no-token"};
  args.insert(args.end(), extra.begin(), extra.end());
  c.Start(args, true, log_path);
  char line[512] = {};
  if (!fgets(line, sizeof line, c.out)) throw std::runtime_error("ladder-server did not start (see " + log_path + ")");
  std::string banner(line);
  auto at = banner.find("listening on ");
  if (at == std::string::npos) throw std::runtime_error("unexpected banner: " + banner);
  return banner.substr(at + 13, banner.find(' ', at + 13) - at - 13);
}

// `n` terminals and `n` browsers watching a search, reading everything they get into /dev/null: `ladder watch
// --json SEARCH` processes and event-stream clients of the dashboard (curl -N on /api/events?search=SEARCH, what a
// browser's EventSource does). What watchers cost the coordinator is measured with them attached.
struct Watchers {
  std::vector<std::unique_ptr<Child>> procs;
  void Start(int n, const std::string& address, int http_port, int64_t search_id, const std::string& log) {
    for (int i = 0; i < n; ++i) {
      procs.push_back(std::make_unique<Child>());
      procs.back()->Start({OwnDir() + "/ladder", "--server", address, "--json", "watch", std::to_string(search_id)},
                          false, log, "/dev/null");
      procs.push_back(std::make_unique<Child>());
      procs.back()->Start({"/usr/bin/curl", "-sN", "http://127.0.0.1:" + std::to_string(http_port) +
                                                       "/api/events?search=" + std::to_string(search_id)},
                          false, log, "/dev/null");
    }
  }
};

// Runs SQL on a raw connection (the benchmarks' generators); throws with SQLite's message.
inline void ExecSql(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "?";
    sqlite3_free(err);
    throw std::runtime_error("SQL failed: " + msg + " in: " + sql.substr(0, 80));
  }
}

// Peak resident set (VmHWM) of a process, in MiB; 0 when unknown.
inline double PeakRssMb(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  while (in >> key) {
    if (key == "VmHWM:") {
      double kb = 0;
      in >> kb;
      return kb / 1024.0;
    }
    std::string rest;
    std::getline(in, rest);
  }
  return 0;
}

// Follows the Watch stream until the search leaves RUNNING.
inline v1::Search WaitForSearchEnd(v1::Ladder::Stub& stub, int64_t sid, std::chrono::seconds deadline) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + deadline);
  v1::WatchRequest req;
  req.set_search_id(sid);
  auto reader = stub.Watch(&ctx, req);
  v1::Event ev;
  while (reader->Read(&ev)) {
    if (ev.kind() == v1::Event::SEARCH_UPDATED && ev.search().id() == sid &&
        ev.search().state() != v1::SEARCH_RUNNING) {
      ctx.TryCancel();
      reader->Finish();
      return ev.search();
    }
  }
  auto st = reader->Finish();
  throw std::runtime_error("the search did not finish in time: " + st.error_message());
}

inline v1::CreateSearchResponse CreateSearch(v1::Ladder::Stub& stub, const std::string& yaml) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  ctx.set_wait_for_ready(true);
  v1::CreateSearchRequest req;
  req.set_spec_yaml(yaml);
  req.set_spec_path("bench.yaml");
  v1::CreateSearchResponse resp;
  auto st = stub.CreateSearch(&ctx, req, &resp);
  if (!st.ok()) throw std::runtime_error("CreateSearch: " + st.error_message());
  return resp;
}

inline std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

}  // namespace ladder::bench
