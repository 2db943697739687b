// bench/fleet: a cluster's worth of workers on one coordinator. For each N, a fresh ladder-server on 127.0.0.1
// (temp dir) and N emulated workers (bench/fleet_emulator.h) in this process, then four phases:
//   storm  every worker connects within one second: time until all are registered; lease expiries;
//   work   a search of short trials (random sampler, `points` metric points each): the time from the coordinator's
//          start decision (the trial's started_unix, set where it assigns the node group) to the worker receiving
//          StartTrial (p50, p99); trials ended per second (the search's finished - created); the coordinator's
//          cores (utime + stime from /proc/PID/stat over the phase) and peak RSS (VmHWM);
//   idle   the coordinator's cores with N connected idle workers;
//   stall  SIGSTOP the coordinator for `stall_s`, SIGCONT, watch `after_s`: lease expiries and re-registrations.
// Lease expiries are counted from the coordinator's log ("lease expired"): no worker ever fails here, so every
// one is spurious. Every result line is JSON on stdout; the last is the largest N.
#include <CLI/CLI.hpp>
#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "bench/fleet_emulator.h"
#include "bench/orchestration_support.h"

using namespace ladder::bench;
using Steady = std::chrono::steady_clock;

namespace {

// utime + stime of a process, in seconds.
double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = s.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(s.substr(close + 2));
  std::string field;
  double ut = 0, st = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {  // fields 14 and 15 (1-based) are utime and stime
    if (i == 14) ut = std::stod(field);
    if (i == 15) st = std::stod(field);
  }
  return (ut + st) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Lines of the coordinator's log that contain `what`.
int64_t CountInLog(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  std::string line;
  int64_t n = 0;
  while (std::getline(in, line)) n += line.find(what) != std::string::npos;
  return n;
}

// Polls `done` every 20 ms until it holds or `limit` passes; returns the seconds waited (or -1 on timeout).
template <class F>
double WaitFor(F done, std::chrono::seconds limit) {
  const auto t0 = Steady::now();
  while (!done()) {
    if (Steady::now() - t0 > limit) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return Seconds(Steady::now() - t0);
}

// The emulated fleet yields to the coordinator: every thread of this process but the main one (which starts the
// coordinators, who inherit its niceness) takes `nice` more than the main thread. Linux keeps niceness per thread;
// threads made later inherit it from the thread that makes them (gRPC's from gRPC's).
void ReniceFleetThreads(int nice) {
  if (nice <= 0) return;
  errno = 0;
  const int base = getpriority(PRIO_PROCESS, 0);
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
    const pid_t tid = static_cast<pid_t>(std::stol(e.path().filename().string()));
    if (tid == getpid()) continue;
    setpriority(PRIO_PROCESS, static_cast<id_t>(tid), std::min(19, base + nice));
  }
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5))];
}

struct Settings {
  int trials_per_worker = 2;
  int min_trials = 1000;
  int points = 3;
  int point_interval_ms = 50;
  double idle_s = 10, stall_s = 10, after_s = 10;
  int emulator_nice = 10;
  std::vector<std::string> server_args;  // passed on to ladder-server
};

struct Result {
  int workers = 0;
  double storm_converge_s = -1;
  int64_t storm_expiries = 0, work_expiries = 0, idle_expiries = 0, stall_expiries = 0;
  int trials = 0;
  double trials_per_s = 0, start_p50_ms = 0, start_p99_ms = 0, coordinator_cores = 0, idle_cores = 0, rss_mb = 0;
  double first_wave_p99_ms = 0, rest_p50_ms = 0, rest_p99_ms = 0;  // the first n starts decided, and the others
  int64_t stall_reregistrations = 0, storm_retries_told = 0;
  double stall_reconverge_s = 0;
  std::string load;

  int64_t spurious() const { return storm_expiries + work_expiries + idle_expiries + stall_expiries; }
  std::string Json() const {
    char b[2048];
    std::snprintf(b, sizeof b,
                  "{\"workers\": %d, \"storm_converge_s\": %.3f, \"coordinator_cores\": %.3f, "
                  "\"idle_coordinator_cores\": %.4f, \"coordinator_rss_mb\": %.1f, \"start_p99_ms\": %.2f, "
                  "\"trials_per_s\": %.1f, \"spurious_expiries\": %lld, \"start_p50_ms\": %.2f, \"trials\": %d, "
                  "\"expiries_by_phase\": {\"storm\": %lld, \"work\": %lld, \"idle\": %lld, \"stall\": %lld}, "
                  "\"start_p99_ms_first_wave\": %.2f, \"start_p50_ms_later\": %.2f, \"start_p99_ms_later\": %.2f, "
                  "\"stall_reregistrations\": %lld, \"stall_reconverge_s\": %.2f, \"storm_retries_told\": %lld, "
                  "\"load_average\": \"%s\"}",
                  workers, storm_converge_s, coordinator_cores, idle_cores, rss_mb, start_p99_ms, trials_per_s,
                  static_cast<long long>(spurious()), start_p50_ms, trials, static_cast<long long>(storm_expiries),
                  static_cast<long long>(work_expiries), static_cast<long long>(idle_expiries),
                  static_cast<long long>(stall_expiries), first_wave_p99_ms, rest_p50_ms, rest_p99_ms,
                  static_cast<long long>(stall_reregistrations),
                  stall_reconverge_s, static_cast<long long>(storm_retries_told), load.c_str());
    return b;
  }
};

// The trials' start decisions (started_unix), a page at a time.
std::unordered_map<int64_t, double> StartDecisions(v1::Ladder::Stub& stub, int64_t sid) {
  std::unordered_map<int64_t, double> out;
  int64_t token = 0;
  do {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    v1::ListTrialsRequest req;
    req.set_search_id(sid);
    req.set_page_token(token);
    v1::ListTrialsResponse resp;
    auto st = stub.ListTrials(&ctx, req, &resp);
    if (!st.ok()) throw std::runtime_error("ListTrials: " + st.error_message());
    for (const auto& t : resp.trials()) out[t.id()] = t.started_unix();
    token = resp.next_page_token();
  } while (token != 0);
  return out;
}

v1::Search GetSearch(v1::Ladder::Stub& stub, int64_t sid) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::GetSearchRequest req;
  req.set_search_id(sid);
  v1::GetSearchResponse resp;
  auto st = stub.GetSearch(&ctx, req, &resp);
  if (!st.ok()) throw std::runtime_error("GetSearch: " + st.error_message());
  return resp.search();
}

Result RunOne(int n, const Settings& s) {
  Result r;
  r.workers = n;
  TempDir dir("fleet");
  const std::string log = (dir.path / "ladder-server.log").string();
  Child server;
  const std::string address = StartServer(server, (dir.path / "ladder.db").string(), s.server_args, log);
  const pid_t pid = server.pid;
  auto lease_lines = [&] { return CountInLog(log, "lease expired"); };

  FleetOptions fo;
  fo.address = address;
  fo.workers = n;
  fo.points = s.points;
  fo.point_interval = std::chrono::milliseconds(s.point_interval_ms);
  Fleet fleet(fo);
  const auto& c = fleet.counters();

  // 1. storm
  fleet.ConnectAll(std::chrono::milliseconds(1000));
  ReniceFleetThreads(s.emulator_nice);
  const double storm_limit = 120;
  r.storm_converge_s = WaitFor([&] { return c.registered >= n; }, std::chrono::seconds(static_cast<int>(storm_limit)));
  r.storm_expiries = lease_lines();
  r.storm_retries_told = c.retries_told;
  std::fprintf(stderr, "  storm: %d of %d registered after %.2f s (%lld registrations, %lld told to retry later, %lld "
                       "stream ends, %lld lease expiries, %lld heartbeat interval changes)\n",
               c.registered.load(), n, r.storm_converge_s, static_cast<long long>(c.registrations.load()),
               static_cast<long long>(r.storm_retries_told), static_cast<long long>(c.stream_ends.load()),
               static_cast<long long>(r.storm_expiries), static_cast<long long>(c.interval_changes.load()));
  if (r.storm_converge_s < 0) {
    r.load = LoadAverage();
    return r;  // the rest would measure a fleet that is not there
  }

  // 2. work
  r.trials = std::max(s.min_trials, s.trials_per_worker * n);
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  auto stub = v1::Ladder::NewStub(channel);
  const std::string spec = "name: fleet\nobjective: {metric: score, mode: max}\nsampler: random\n"
                           "budget: {max_trials: " + std::to_string(r.trials) + ", parallelism: " +
                           std::to_string(n) + "}\ncommand: [/bin/true]\n"
                           "space:\n  x: {type: float, low: 0.0, high: 1.0}\n";
  ReniceFleetThreads(s.emulator_nice);  // threads gRPC made during the storm
  const double cpu0 = CpuSeconds(pid);
  const auto w0 = Steady::now();
  const int64_t sid = CreateSearch(*stub, spec).search().id();
  v1::Search done;
  const double limit_s = 60 + r.trials / 20.0;
  double waited = WaitFor(
      [&] {
        done = GetSearch(*stub, sid);
        return done.state() != v1::SEARCH_RUNNING;
      },
      std::chrono::seconds(static_cast<int>(limit_s)));
  const double work_wall = Seconds(Steady::now() - w0);
  r.coordinator_cores = (CpuSeconds(pid) - cpu0) / work_wall;
  r.rss_mb = PeakRssMb(pid);
  r.work_expiries = lease_lines() - r.storm_expiries;
  if (waited < 0) throw std::runtime_error("the search did not end within " + std::to_string(limit_s) + " s");
  if (done.state() != v1::SEARCH_COMPLETED) {
    throw std::runtime_error("the search ended " + v1::SearchState_Name(done.state()) + ": " + done.error());
  }
  r.trials_per_s = (done.completed() + done.failed()) / std::max(1e-9, done.finished_unix() - done.created_unix());
  {
    auto decided = StartDecisions(*stub, sid);
    std::vector<std::pair<double, double>> by_decision;  // (decided, latency ms)
    for (const auto& rc : fleet.Collect()) {
      auto it = decided.find(rc.trial_id);
      if (it != decided.end() && it->second > 0) by_decision.emplace_back(it->second, 1000 * (rc.received_unix - it->second));
    }
    std::sort(by_decision.begin(), by_decision.end());
    // The first n decided are the first wave (one pass places a trial on every worker); the rest start as others end.
    std::vector<double> lat, first, rest;
    for (size_t i = 0; i < by_decision.size(); ++i) {
      lat.push_back(by_decision[i].second);
      (i < static_cast<size_t>(n) ? first : rest).push_back(by_decision[i].second);
    }
    r.start_p50_ms = Quantile(lat, 0.5);
    r.start_p99_ms = Quantile(lat, 0.99);
    r.first_wave_p99_ms = Quantile(first, 0.99);
    r.rest_p50_ms = Quantile(rest, 0.5);
    r.rest_p99_ms = Quantile(rest, 0.99);
  }
  std::fprintf(stderr, "  work: %d trials (%d completed, %d failed) at %.1f/s; start p50 %.2f ms p99 %.2f ms (first "
                       "wave p99 %.2f ms; later starts p50 %.2f ms p99 %.2f ms); coordinator %.3f cores, peak RSS %.1f "
                       "MB; %lld lease expiries\n",
               r.trials, done.completed(), done.failed(), r.trials_per_s, r.start_p50_ms, r.start_p99_ms,
               r.first_wave_p99_ms, r.rest_p50_ms, r.rest_p99_ms,
               r.coordinator_cores, r.rss_mb, static_cast<long long>(r.work_expiries));

  // 3. idle
  std::this_thread::sleep_for(std::chrono::seconds(2));  // the last acknowledgements and commits
  const double idle_cpu0 = CpuSeconds(pid);
  const auto i0 = Steady::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(s.idle_s));
  r.idle_cores = (CpuSeconds(pid) - idle_cpu0) / Seconds(Steady::now() - i0);
  r.idle_expiries = lease_lines() - r.storm_expiries - r.work_expiries;
  std::fprintf(stderr, "  idle: coordinator %.4f cores over %.0f s with %d workers; %lld lease expiries\n",
               r.idle_cores, s.idle_s, n, static_cast<long long>(r.idle_expiries));

  // 4. stall
  const int64_t before = lease_lines();
  const int64_t regs0 = c.registrations;
  kill(pid, SIGSTOP);
  std::this_thread::sleep_for(std::chrono::duration<double>(s.stall_s));
  kill(pid, SIGCONT);
  std::this_thread::sleep_for(std::chrono::duration<double>(s.after_s));
  r.stall_expiries = lease_lines() - before;
  r.stall_reregistrations = c.registrations - regs0;
  r.stall_reconverge_s = WaitFor([&] { return c.registered >= n; }, std::chrono::seconds(120));
  std::fprintf(stderr, "  stall: %.0f s SIGSTOP: %lld lease expiries, %lld re-registrations within %.0f s; all "
                       "registered %.2f s after that\n",
               s.stall_s, static_cast<long long>(r.stall_expiries), static_cast<long long>(r.stall_reregistrations),
               s.after_s, r.stall_reconverge_s);
  r.load = LoadAverage();
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench/fleet: N emulated workers (the real worker protocol) on one real ladder-server"};
  std::vector<int> sizes;
  bool quick = false;
  Settings s;
  app.add_flag("--quick", quick, "N = 64 and 512 (under two minutes)");
  app.add_option("--workers", sizes, "the fleet sizes to run (default 64 512 4608)")->check(CLI::Range(1, 50000));
  app.add_option("--trials-per-worker", s.trials_per_worker, "work phase: trials = max(min-trials, this x N)")
      ->capture_default_str();
  app.add_option("--min-trials", s.min_trials, "work phase: at least this many trials")->capture_default_str();
  app.add_option("--points", s.points, "metric points per trial")->capture_default_str()->check(CLI::Range(1, 1000));
  app.add_option("--point-interval-ms", s.point_interval_ms, "between a trial's points")->capture_default_str();
  app.add_option("--idle-s", s.idle_s, "idle phase length")->capture_default_str();
  app.add_option("--stall-s", s.stall_s, "how long the coordinator is stopped (SIGSTOP)")->capture_default_str();
  app.add_option("--after-stall-s", s.after_s, "how long expiries are counted after SIGCONT")->capture_default_str();
  app.add_option("--emulator-nice", s.emulator_nice,
                 "niceness the emulated fleet's threads take above the coordinator's (so the emulation does not starve it)")
      ->capture_default_str()->check(CLI::Range(0, 19));
  app.add_option("--server-arg", s.server_args, "a flag for ladder-server (repeat; e.g. --server-arg=--starts-per-commit=32)")
      ->allow_extra_args(false);
  CLI11_PARSE(app, argc, argv);
  if (sizes.empty()) sizes = quick ? std::vector<int>{64, 512} : std::vector<int>{64, 512, 4608};
  {  // one connection per worker, and the coordinator's as many: raise the soft limit of open files
    rlimit rl{};
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
      rl.rlim_cur = rl.rlim_max;
      setrlimit(RLIMIT_NOFILE, &rl);
      const int most = *std::max_element(sizes.begin(), sizes.end());
      if (rl.rlim_cur < static_cast<rlim_t>(most) + 200) {
        std::cerr << "bench/fleet: the limit of open files is " << rl.rlim_cur << ", too few for " << most
                  << " workers (ulimit -n)\n";
        return 1;
      }
    }
  }
  std::cerr << "bench/fleet: N = ";
  for (int n : sizes) std::cerr << n << " ";
  std::cerr << "; load average " << LoadAverage() << "\n";
  const auto t0 = Steady::now();
  try {
    for (int n : sizes) {
      std::cerr << "N = " << n << ":\n";
      Result r = RunOne(n, s);
      std::cout << r.Json() << std::endl;
    }
  } catch (const std::exception& e) {
    std::cerr << "bench/fleet: " << e.what() << "\n";
    return 1;
  }
  std::cerr << "bench/fleet: " << Seconds(Steady::now() - t0) << " s in all; load average " << LoadAverage() << "\n";
  return 0;
}
