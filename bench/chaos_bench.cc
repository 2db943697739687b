// bench/chaos: a search under a sustained, seeded assault, then a check that nothing acknowledged was lost.
//
// Setup: a real ladder-server over a database on a small filesystem of its own (a tmpfs of --db-fs-mib, mounted
// under the temp dir; root only, else that fault is skipped with a message) and 4 ladder-workers of 4 slots. Two
// searches run at once: `trials` one-rank trials, and `group_trials` trials of 2 nodes x 2 ranks. Every trial is
// ladder-chaos-trial (bench/chaos_trial.cc): rank 0 prints a metrics line every 100 ms whose "tag" names its run
// (epoch * 100000 + step), and every rank appends what it printed to its own record file first.
//
// The driver (seeded: --seed; every fault logged with its time) runs a plan of faults in a shuffled order, a few
// seconds apart (--quick: 6 coordinator kills, 2 worker kills, 3 rank kills, 1 pause, 1 disk fill, 2-4 s apart;
// the full run: 24, 8, 10, 4, 3, 9-15 s apart), and the plan again while the searches run, until both have ended:
//   coordinator  kill -9 the coordinator, restart it on the same database and port (one time in three, kill the
//                restarted one again within a second, while workers re-attach)
//   worker       kill -9 a worker (its trials die with it: PR_SET_PDEATHSIG), restart it with the same node id (one
//                time in four, kill -9 the coordinator too while the worker is down)
//   rank         kill -9 one rank of a running trial (that trial fails: a rank crashed)
//   pause        SIGSTOP a worker for twice its lease, then SIGCONT (its trials go elsewhere; the stale runs are fenced)
//   disk         fill the database's filesystem until the coordinator's commit fails (SQLITE_FULL: it stops itself),
//                free it, restart the coordinator
//
// An acknowledged point: the protocol's own definition. A worker numbers the metric points of a run (an
// assignment epoch) 0, 1, 2, ...; the coordinator sends Acknowledged{trial, epoch, durable_seq} only after the
// commit that stores every point of that run numbered below durable_seq (server/commit_outbox.h), and the worker
// forgets those points then; anything not acknowledged it still holds and resends. So point s of run (T, E) is
// acknowledged once a worker has received an ack for (T, E) with durable_seq > s. The workers run with
// LADDER_LOG=debug, which logs every ack they receive; ladder-chaos-trial prints only metrics lines, so point s is
// the step s + 1 it printed, stored as metric "tag" = E * 100000 + s + 1.
//
// Checks, once both searches ended (workers and coordinator stopped; the database read with SQLite directly):
//   acked_points_lost   acknowledged points missing from the metrics table (goal 0)
//   duplicate_runs      a (trial, epoch, rank) started more than once, from the records (goal 0); a run on two
//                       nodes at once with the same epoch shows here
//   orphans             trial processes left once every worker has stopped (goal 0); every rank forks a helper
//                       that a killed worker's rank guard kills with the rank's group (worker/rank_guard.h);
//                       leftovers_killed counts those that the next worker found and killed instead
//   overlapping_epochs  a trial's rank 0 recording under an older epoch after a newer one started (goal 0: a
//                       paused worker's ranks are gone before its lease expires); each is named under "problem:"
//   trials ended exactly once: every trial COMPLETED, FAILED or CANCELLED with a finish time, one end entry in the
//   journal each, failed ones with an error; every run (allocation) closed with an outcome; every search
//   COMPLETED; no point stored twice or stored without having been printed; PRAGMA integrity_check ok.
// Last line: one JSON object {"coordinator_kills", "worker_kills", "rank_kills", "pauses", "disk_fills",
// "acked_points", "acked_points_lost", "duplicate_runs", "orphans", "integrity_ok", ...}. Exit 0 when every goal
// holds, 1 when one does not, 2 on a usage error.
//
// Everything lives in one temp dir (with a copy of the binaries, so that a rebuild during the run cannot pull them
// away), removed at the end (also on SIGINT/SIGTERM: the processes are killed, the
// filesystem unmounted). --quick: about 1 minute; the full run about 11.5 minutes (689 s at seed 1).
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstring>
#include <iostream>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "bench/chaos_checks.h"
#include "bench/orchestration_support.h"

using namespace ladder::bench;

namespace {

std::atomic<bool> g_interrupted{false};
struct Interrupted {};

void OnSignal(int) { g_interrupted = true; }

// Sleeps in short steps; throws Interrupted once SIGINT/SIGTERM arrived.
void Sleep(double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    if (g_interrupted) throw Interrupted{};
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (g_interrupted) throw Interrupted{};
}

const auto g_start = std::chrono::steady_clock::now();

void Say(const std::string& what) {
  std::fprintf(stderr, "[%7.2f s] %s\n", Seconds(std::chrono::steady_clock::now() - g_start), what.c_str());
}

// A tmpfs of `mib` MiB mounted at `dir` (created), unmounted on destruction.
struct SmallFilesystem {
  std::string dir;
  bool mounted = false;
  std::string why_not;  // when not mounted
  SmallFilesystem(const std::string& at, int mib) : dir(at) {
    std::filesystem::create_directories(dir);
    const std::string opts = "size=" + std::to_string(mib) + "m,mode=0755";
    if (mount("ladder-chaos", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, opts.c_str()) == 0) {
      mounted = true;
    } else {
      why_not = std::string("mount -t tmpfs -o ") + opts + " " + dir + ": " + std::strerror(errno) +
                (geteuid() != 0 ? " (not root)" : "");
    }
  }
  ~SmallFilesystem() {
    if (mounted) umount2(dir.c_str(), MNT_DETACH);
  }
};

// Appends to `path` until the filesystem is full; returns the bytes written.
int64_t FillUp(const std::string& path) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot create " + path + ": " + std::strerror(errno));
  std::vector<char> block(1 << 20, 'x');
  int64_t total = 0;
  for (size_t size : {size_t{1} << 20, size_t{4096}, size_t{512}}) {
    while (true) {
      ssize_t n = write(fd, block.data(), size);
      if (n <= 0) break;
      total += n;
    }
  }
  close(fd);
  return total;
}

// Processes whose command line holds `marker` (the trials of this run: their --record-dir).
std::vector<pid_t> ProcessesWith(const std::string& exe, const std::string& marker) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::ifstream in(e.path() / "cmdline", std::ios::binary);
    std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmd.rfind(exe, 0) != 0 || cmd.find(marker) == std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string statline;
    std::getline(stat, statline);
    auto close_paren = statline.rfind(')');
    if (close_paren != std::string::npos && close_paren + 2 < statline.size() && statline[close_paren + 2] == 'Z') continue;
    out.push_back(std::stoi(name));
  }
  return out;
}

struct Options {
  uint64_t seed = 1;
  bool quick = false;
  int trials = 500, group_trials = 20;
  int min_steps = 60, max_steps = 180;  // per trial, 100 ms each
  int gap_min_ms = 9000, gap_max_ms = 15000;
  int lease_ms = 2000;
  int db_fs_mib = 256;
  std::string keep_logs;  // a directory to copy the logs, the database and the records into before the temp dir goes
  // The faults of one pass of the plan: coordinator kills, worker kills, rank kills, pauses, disk fills.
  int plan[5] = {24, 8, 10, 4, 3};
};

class Chaos {
 public:
  Chaos(const Options& o, const std::filesystem::path& dir) : o_(o), dir_(dir), rng_(o.seed) {}

  int Run();

 private:
  std::string Db() const { return fs_ && fs_->mounted ? fs_->dir + "/ladder.db" : (dir_ / "ladder.db").string(); }
  std::string WorkerLog(int i) const { return (dir_ / ("worker-" + std::to_string(i) + ".log")).string(); }
  void StartServer();
  void StartWorker(int i);
  // Whether the coordinator runs; reaps it when it exited by itself (counted unless `expected`).
  bool ServerAlive(bool expected = false);
  // Restarts the coordinator if it is not running.
  void EnsureServer();
  bool SearchesRunning();
  void Fault();
  void KillCoordinator();
  void KillWorker();
  void KillRank();
  void Pause();
  void FillDisk();
  void KeepLogs();
  double Uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng_); }

  Options o_;
  std::filesystem::path dir_;
  std::mt19937_64 rng_;
  std::unique_ptr<SmallFilesystem> fs_;
  std::string address_, bin_, trial_exe_, records_;
  Child server_;
  std::vector<std::unique_ptr<Child>> workers_;
  std::unique_ptr<v1::Ladder::Stub> stub_;
  std::vector<int64_t> searches_;
  int coordinator_kills_ = 0, worker_kills_ = 0, rank_kills_ = 0, pauses_ = 0, disk_fills_ = 0;
  std::vector<int> plan_;
  size_t next_fault_ = 0;
  int server_starts_ = 0, disk_full_exits_ = 0, coordinator_crashes_ = 0;
};

void Chaos::StartServer() {
  // The port can linger for a moment after a kill: try again briefly.
  for (int tries = 0;; ++tries) {
    try {
      server_.Start({bin_ + "/ladder-server", "--listen", address_, "--db", Db(), "--no-token",
                     "--heartbeat-timeout-ms", std::to_string(o_.lease_ms), "--quarantine-after", "0",
                     "--checkpoint-dir", (dir_ / "checkpoints").string()},
                    true, (dir_ / "server.log").string());
      char line[512] = {};
      if (!fgets(line, sizeof line, server_.out) || !std::strstr(line, "listening on ")) {
        throw std::runtime_error("ladder-server did not start (see " + (dir_ / "server.log").string() + ")");
      }
      ++server_starts_;
      return;
    } catch (const std::exception& e) {
      server_.Stop(SIGKILL);
      if (tries >= 50) throw;
      Sleep(0.2);
    }
  }
}

void Chaos::StartWorker(int i) {
  const std::string node = "w" + std::to_string(i);
  setenv("LADDER_LOG", "debug", 1);  // the workers log every acknowledgement they receive
  workers_[i]->Start({bin_ + "/ladder-worker", "--server", address_, "--node-id", node, "--slots", "4",
                      "--trial-dir", (dir_ / "nodes" / node).string()},
                     false, WorkerLog(i), "/dev/null");
  unsetenv("LADDER_LOG");
}

bool Chaos::ServerAlive(bool expected) {
  if (server_.pid <= 0) return false;
  int status = 0;
  if (waitpid(server_.pid, &status, WNOHANG) == server_.pid) {
    Say("the coordinator exited by itself (" +
        (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                           : "signal " + std::to_string(WTERMSIG(status))) + ")");
    server_.pid = -1;
    if (!expected) ++coordinator_crashes_;
    if (server_.out) fclose(server_.out), server_.out = nullptr;
    return false;
  }
  return true;
}

void Chaos::EnsureServer() {
  if (ServerAlive()) return;
  StartServer();
  Say("coordinator restarted (pid " + std::to_string(server_.pid) + ")");
}

bool Chaos::SearchesRunning() {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  v1::ListSearchesResponse resp;
  if (!stub_->ListSearches(&ctx, v1::ListSearchesRequest(), &resp).ok()) return true;  // down: ask again later
  int ended = 0;
  for (const auto& s : resp.searches()) ended += s.state() != v1::SEARCH_RUNNING;
  return ended < static_cast<int>(searches_.size());
}

void Chaos::KillCoordinator() {
  // One time in three the restarted coordinator is killed again while it recovers (workers re-attaching).
  const int kills = Uniform(0, 1) < 1.0 / 3 ? 2 : 1;
  for (int k = 0; k < kills; ++k) {
    if (!ServerAlive()) return;
    Say("kill -9 coordinator (pid " + std::to_string(server_.pid) + ")" + (k > 0 ? " while it recovers" : ""));
    server_.Stop(SIGKILL);
    ++coordinator_kills_;
    Sleep(Uniform(0.0, 1.5));
    EnsureServer();
    if (k + 1 < kills) Sleep(Uniform(0.0, 1.0));
  }
}

void Chaos::KillWorker() {
  const int i = static_cast<int>(rng_() % workers_.size());
  Say("kill -9 worker w" + std::to_string(i) + " (pid " + std::to_string(workers_[i]->pid) + ")");
  workers_[i]->Stop(SIGKILL);
  ++worker_kills_;
  if (Uniform(0, 1) < 0.25 && ServerAlive()) {  // the coordinator too, before the worker is back
    Say("kill -9 coordinator (pid " + std::to_string(server_.pid) + ") while w" + std::to_string(i) + " is down");
    server_.Stop(SIGKILL);
    ++coordinator_kills_;
    Sleep(Uniform(0.0, 1.0));
    EnsureServer();
  }
  Sleep(Uniform(0.5, 3.0));
  StartWorker(i);
  Say("worker w" + std::to_string(i) + " restarted (pid " + std::to_string(workers_[i]->pid) + ")");
}

// The parent pid of `pid` (0 when unknown).
pid_t ParentOf(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  auto close_paren = line.rfind(')');
  if (close_paren == std::string::npos) return 0;
  std::istringstream rest(line.substr(close_paren + 2));
  std::string state;
  pid_t ppid = 0;
  rest >> state >> ppid;
  return ppid;
}

void Chaos::KillRank() {
  const auto found = ProcessesWith(trial_exe_, records_);
  const std::set<pid_t> trial_processes(found.begin(), found.end());
  std::vector<pid_t> ranks;  // not the ranks' helpers (children of a rank)
  for (pid_t p : found) {
    if (!trial_processes.count(ParentOf(p))) ranks.push_back(p);
  }
  if (ranks.empty()) {
    Say("no trial rank running to kill");
    return;
  }
  const pid_t victim = ranks[rng_() % ranks.size()];
  std::ifstream env("/proc/" + std::to_string(victim) + "/environ", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(env)), std::istreambuf_iterator<char>()), who;
  for (const char* key : {"LADDER_TRIAL_ID=", "RANK=", "LADDER_ASSIGNMENT_EPOCH="}) {
    auto at = all.find(std::string(1, '\0') + key);
    if (at != std::string::npos) who += " " + all.substr(at + 1, all.find('\0', at + 1) - at - 1);
  }
  Say("kill -9 trial rank pid " + std::to_string(victim) + who);
  if (kill(victim, SIGKILL) == 0) ++rank_kills_;
}

void Chaos::Pause() {
  const int i = static_cast<int>(rng_() % workers_.size());
  const double hold = 2.0 * o_.lease_ms / 1000.0;
  Say("SIGSTOP worker w" + std::to_string(i) + " for " + std::to_string(hold) + " s (lease " +
      std::to_string(o_.lease_ms) + " ms)");
  kill(workers_[i]->pid, SIGSTOP);
  ++pauses_;
  try {
    Sleep(hold);
  } catch (...) {
    kill(workers_[i]->pid, SIGCONT);
    throw;
  }
  kill(workers_[i]->pid, SIGCONT);
  Say("SIGCONT worker w" + std::to_string(i));
}

void Chaos::FillDisk() {
  if (!fs_ || !fs_->mounted) {
    Say("disk fault skipped: " + (fs_ ? fs_->why_not : std::string("no filesystem")));
    return;
  }
  const std::string filler = fs_->dir + "/filler";
  const int64_t bytes = FillUp(filler);
  ++disk_fills_;
  Say("filled the database's filesystem (" + std::to_string(bytes >> 20) + " MiB of filler)");
  // The coordinator's next commit that needs a new page fails (SQLITE_FULL) and it stops itself.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  bool exited = false;
  while (std::chrono::steady_clock::now() < until) {
    if (!ServerAlive(/*expected=*/true)) {
      exited = true;
      ++disk_full_exits_;
      break;
    }
    Sleep(0.1);
    FillUp(filler + "2");  // whatever a checkpoint freed
  }
  std::filesystem::remove(filler);
  std::filesystem::remove(filler + "2");
  Say(std::string("freed the database's filesystem; the coordinator ") +
      (exited ? "had stopped on the full disk" : "was still running after 20 s of a full disk"));
  Sleep(Uniform(0.0, 1.0));
  EnsureServer();
}

// --keep-logs: the coordinator's and workers' logs, the database (with its -wal) and the ranks' records, for reading
// which fault a problem followed (the driver's own lines, on stderr, carry the bench's clock; the logs the wall time).
void Chaos::KeepLogs() {
  namespace fs = std::filesystem;
  const fs::path to(o_.keep_logs);
  std::error_code ec;
  fs::create_directories(to, ec);
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    if (e.path().extension() == ".log") fs::copy_file(e.path(), to / e.path().filename(), fs::copy_options::overwrite_existing, ec);
  }
  for (const std::string suffix : {"", "-wal"}) {
    if (fs::exists(Db() + suffix)) fs::copy_file(Db() + suffix, to / ("ladder.db" + suffix), fs::copy_options::overwrite_existing, ec);
  }
  fs::copy(records_, to / "records", fs::copy_options::recursive | fs::copy_options::overwrite_existing, ec);
  Say("logs, database and records kept in " + to.string());
}

void Chaos::Fault() {
  if (next_fault_ >= plan_.size()) {  // the plan's faults in a seeded order; again while the searches run
    plan_.clear();
    for (int k = 0; k < 5; ++k) plan_.insert(plan_.end(), static_cast<size_t>(o_.plan[k]), k);
    std::shuffle(plan_.begin(), plan_.end(), rng_);
    next_fault_ = 0;
  }
  switch (plan_[next_fault_++]) {
    case 0: KillCoordinator(); break;
    case 1: KillWorker(); break;
    case 2: KillRank(); break;
    case 3: Pause(); break;
    default: FillDisk(); break;
  }
}

int Chaos::Run() {
  // The binaries run from a copy: a rebuild of build/bin during the run must not pull them away mid-restart.
  bin_ = (dir_ / "bin").string();
  std::filesystem::create_directories(bin_);
  for (const char* b : {"ladder-server", "ladder-worker", "ladder-chaos-trial"}) {
    std::filesystem::copy_file(OwnDir() + "/" + b, bin_ + "/" + b);
  }
  trial_exe_ = bin_ + "/ladder-chaos-trial";
  records_ = (dir_ / "records").string();
  std::filesystem::create_directories(records_);
  fs_ = std::make_unique<SmallFilesystem>((dir_ / "dbfs").string(), o_.db_fs_mib);
  if (!fs_->mounted) Say("the disk fault will be skipped: " + fs_->why_not);
  address_ = "127.0.0.1:" + std::to_string(ladder::testing::FreePort());
  StartServer();
  stub_ = v1::Ladder::NewStub(grpc::CreateChannel(address_, grpc::InsecureChannelCredentials()));
  for (int i = 0; i < 4; ++i) {
    workers_.push_back(std::make_unique<Child>());
    StartWorker(i);
  }
  const std::string command = "command: [" + trial_exe_ + ", --record-dir, " + records_ +
                              ", --steps, \"{steps}\", --interval-ms, \"100\", --x, \"{x}\"]\n";
  const std::string space = "space:\n  x: {type: float, low: 0.0, high: 1.0}\n  steps: {type: int, low: " +
                            std::to_string(o_.min_steps) + ", high: " + std::to_string(o_.max_steps) + "}\n";
  const std::string budget = ", max_retries: 1000, max_failed_trials: 100000}\n";
  searches_.push_back(CreateSearch(*stub_, "name: chaos\nobjective: {metric: score, mode: max}\nbudget: {max_trials: " +
                                               std::to_string(o_.trials) + ", parallelism: 12" + budget +
                                               "sampler: {type: random, seed: " + std::to_string(o_.seed) + "}\n" +
                                               command + space).search().id());
  searches_.push_back(CreateSearch(*stub_, "name: chaos-groups\nobjective: {metric: score, mode: max}\n"
                                           "budget: {max_trials: " + std::to_string(o_.group_trials) +
                                               ", parallelism: 1" + budget +
                                               "resources: {nodes: 2, ranks_per_node: 2}\nsampler: {type: random, "
                                               "seed: " + std::to_string(o_.seed + 1) + "}\n" + command + space)
                          .search().id());
  Say("searches " + std::to_string(searches_[0]) + " (" + std::to_string(o_.trials) + " trials, 1 rank) and " +
      std::to_string(searches_[1]) + " (" + std::to_string(o_.group_trials) +
      " trials, 2 nodes x 2 ranks) on 4 workers x 4 slots; seed " + std::to_string(o_.seed));
  const auto t0 = std::chrono::steady_clock::now();
  while (true) {
    const double gap = Uniform(o_.gap_min_ms, o_.gap_max_ms) / 1000.0;
    const auto next = std::chrono::steady_clock::now() + std::chrono::duration<double>(gap);
    bool running = true;
    while (running && std::chrono::steady_clock::now() < next) {
      EnsureServer();
      Sleep(0.25);
      running = SearchesRunning();
    }
    if (!running) break;
    Fault();
    if (Seconds(std::chrono::steady_clock::now() - t0) > 3600) throw std::runtime_error("the searches ran over an hour");
  }
  const double wall_s = Seconds(std::chrono::steady_clock::now() - t0);
  Say("both searches ended after " + std::to_string(wall_s) + " s; stopping the workers and the coordinator");
  for (auto& w : workers_) w->Stop(SIGTERM);
  server_.Stop(SIGTERM);
  Sleep(0.5);
  const auto left = ProcessesWith(trial_exe_, records_);
  for (pid_t p : left) kill(p, SIGKILL);
  std::vector<std::string> logs;
  for (size_t i = 0; i < workers_.size(); ++i) logs.push_back(WorkerLog(static_cast<int>(i)));
  const auto f = chaos::Check(Db(), records_, chaos::ReadAcks(logs));
  int leftovers_killed = 0;  // helpers of a killed worker's ranks, killed by the next worker (worker/leftovers.h)
  for (const auto& path : logs) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) leftovers_killed += line.find("left running by an earlier worker") != std::string::npos;
  }
  for (const auto& e : f.examples) Say("problem: " + e);
  if (!o_.keep_logs.empty()) KeepLogs();
  std::string states;
  for (const auto& [s, n] : f.trial_states) states += " " + s + " " + std::to_string(n);
  Say("trials:" + states + "; searches " + f.search_states + "; integrity_check: " + f.integrity);
  const bool ok = f.acked_points_lost == 0 && f.duplicate_runs == 0 && left.empty() && f.integrity_ok &&
                  f.searches_completed && f.trials_not_ended == 0 && f.trials_ended_not_once == 0 &&
                  f.failed_without_reason == 0 && f.open_runs == 0 && f.duplicate_points == 0 &&
                  f.phantom_points == 0 && f.acked_not_printed == 0 && f.acked_points > 0 && coordinator_crashes_ == 0;
  std::printf(
      "{\"seed\": %llu, \"quick\": %s, \"wall_s\": %.1f, \"coordinator_kills\": %d, \"worker_kills\": %d, "
      "\"rank_kills\": %d, \"pauses\": %d, \"disk_fills\": %d, \"disk_full_exits\": %d, \"coordinator_crashes\": %d, "
      "\"trials\": %lld, "
      "\"acked_points\": %lld, \"acked_points_lost\": %lld, \"stored_points\": %lld, \"duplicate_points\": %lld, "
      "\"phantom_points\": %lld, \"runs\": %lld, \"duplicate_runs\": %lld, \"overlapping_epochs\": %lld, "
      "\"trials_not_ended\": %lld, \"trials_ended_not_once\": %lld, \"open_runs\": %lld, \"search_completed\": %s, "
      "\"orphans\": %zu, \"leftovers_killed\": %d, \"integrity_ok\": %s, \"ok\": %s}\n",
      static_cast<unsigned long long>(o_.seed), o_.quick ? "true" : "false", wall_s, coordinator_kills_,
      worker_kills_, rank_kills_, pauses_, disk_fills_, disk_full_exits_, coordinator_crashes_, static_cast<long long>(f.trials),
      static_cast<long long>(f.acked_points), static_cast<long long>(f.acked_points_lost),
      static_cast<long long>(f.stored_points), static_cast<long long>(f.duplicate_points),
      static_cast<long long>(f.phantom_points), static_cast<long long>(f.runs),
      static_cast<long long>(f.duplicate_runs), static_cast<long long>(f.overlapping_epochs),
      static_cast<long long>(f.trials_not_ended), static_cast<long long>(f.trials_ended_not_once),
      static_cast<long long>(f.open_runs), f.searches_completed ? "true" : "false", left.size(), leftovers_killed,
      f.integrity_ok ? "true" : "false", ok ? "true" : "false");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench/chaos: a search under coordinator, worker and rank kills, pauses and a full disk"};
  Options o;
  app.add_option("--seed", o.seed, "seeds the fault driver and the searches' samplers")->capture_default_str();
  app.add_flag("--quick", o.quick, "200 + 12 trials of 1.5-3 s, a fault every 2-4 s (about 1 minute)");
  app.add_option("--trials", o.trials, "one-rank trials")->capture_default_str()->check(CLI::Range(1, 100000));
  app.add_option("--group-trials", o.group_trials, "trials of 2 nodes x 2 ranks")
      ->capture_default_str()->check(CLI::Range(0, 100000));
  app.add_option("--keep-logs", o.keep_logs, "copy the logs, the database and the records into this directory");
  CLI11_PARSE(app, argc, argv);
  if (o.quick) {
    o.trials = 200, o.group_trials = 12, o.min_steps = 15, o.max_steps = 30;
    o.gap_min_ms = 2000, o.gap_max_ms = 4000, o.db_fs_mib = 64;
    const int quick_plan[5] = {6, 2, 3, 1, 1};
    std::copy(quick_plan, quick_plan + 5, o.plan);
  }
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  std::cerr << "bench/chaos: seed " << o.seed << (o.quick ? " (--quick)" : " (the full run takes about 11.5 minutes)")
            << "; load average " << LoadAverage() << "\n";
  int rc = 1;
  try {
    TempDir dir("chaos");
    {
      Chaos chaos(o, dir.path);
      try {
        rc = chaos.Run();
      } catch (const Interrupted&) {
        std::cerr << "bench/chaos: interrupted; removing " << dir.path.string() << "\n";
        rc = 130;
      }
    }  // the processes are killed and the filesystem unmounted before the directory goes
    // Trials of killed workers die with them (PR_SET_PDEATHSIG); anything else of this run goes now.
    for (pid_t p : ProcessesWith((dir.path / "bin/ladder-chaos-trial").string(), (dir.path / "records").string())) {
      kill(p, SIGKILL);
    }
  } catch (const std::exception& e) {
    std::cerr << "bench/chaos: " << e.what() << "\n";
    return 1;
  }
  return rc;
}
