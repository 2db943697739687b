// bench/trial_start: how long a ladder-train trial takes to start, through a real ladder-server and
// ladder-worker: from the coordinator's start decision (the allocation's started_at) to the trial's first
// metrics line reaching the worker (the first metric point's time), cold (ladder-worker --cold-starts: a new
// ladder-train process, LibTorch loaded each time) against warm (forked from the worker's ladder-train --zygote,
// worker/warm_start.h), in one run. Trials run one at a time on a 1-slot worker, so that starts do not overlap.
// The warm worker's first trial starts cold while its zygote loads: it runs alone first, reported apart.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <iostream>
#include <sqlite3.h>
#include <thread>

#include "bench/orchestration_support.h"

using namespace ladder::bench;

namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void WaitForWorker(v1::Ladder::Stub& stub, const std::string& node, const std::string& log) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  ctx.set_wait_for_ready(true);
  auto reader = stub.Watch(&ctx, v1::WatchRequest());
  v1::Event ev;
  bool up = false;
  while (!up && reader->Read(&ev)) {
    up = ev.kind() == v1::Event::WORKER_UPDATED && ev.worker().state() == v1::WORKER_UP &&
         ev.worker().node_id() == node;
  }
  ctx.TryCancel();
  reader->Finish();
  if (!up) throw std::runtime_error("worker " + node + " did not register (see " + log + ")");
}

// Per trial of the search, in trial order: first metric point's time - the first allocation's start.
std::vector<double> StartLatencies(const std::string& db, int64_t search_id) {
  sqlite3* h = nullptr;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    throw std::runtime_error("cannot open " + db);
  }
  const char* sql =
      "SELECT t.id, (SELECT MIN(time) FROM metrics m WHERE m.trial_id = t.id) - "
      "(SELECT MIN(started_at) FROM allocations a WHERE a.trial_id = t.id) FROM trials t WHERE t.search_id = ? "
      "ORDER BY t.id";
  sqlite3_stmt* st = nullptr;
  std::vector<double> out;
  if (sqlite3_prepare_v2(h, sql, -1, &st, nullptr) == SQLITE_OK) {
    sqlite3_bind_int64(st, 1, search_id);
    while (sqlite3_step(st) == SQLITE_ROW) {
      if (sqlite3_column_type(st, 1) != SQLITE_NULL) out.push_back(sqlite3_column_double(st, 1));
    }
  }
  sqlite3_finalize(st);
  sqlite3_close(h);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench/trial_start: a ladder-train trial's start, cold against warm, through ladder-server + "
               "ladder-worker"};
  int trials = 30;
  bool quick = false;
  app.add_option("--trials", trials, "trials per mode (the warm worker runs one more first: its zygote's)")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  app.add_flag("--quick", quick, "10 trials per mode");
  CLI11_PARSE(app, argc, argv);
  if (quick) trials = 10;
  std::cerr << "bench/trial_start: " << trials << " ladder-train trials per mode, one at a time; load average "
            << LoadAverage() << "\n";
  try {
    TempDir dir("trial-start");
    const std::string log = (dir.path / "processes.log").string();
    const std::string db = (dir.path / "ladder.db").string();
    Child server;
    const std::string address = StartServer(server, db, {}, log);
    auto stub = v1::Ladder::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
    // A short run whose first metrics line comes after its first step: what is measured is the start.
    const std::string command =
        "[ladder-train, --data, 'synthetic:256', --epochs, '1', --log-every, '1', --batch-size, '32', --width, "
        "'16', --prefetch, '0', --eval-train-rows, '0', --noise-scale-every, '0', --threads, '1', --lr, '{lr}']";
    std::map<std::string, std::vector<double>> latency;
    double first_warm = std::nan("");
    for (const std::string mode : {"cold", "warm"}) {
      Child worker;
      std::vector<std::string> args = {OwnDir() + "/ladder-worker", "--server", address, "--node-id", mode,
                                       "--slots", "1", "--trial-dir", (dir.path / ("trials-" + mode)).string()};
      if (mode == "cold") args.push_back("--cold-starts");
      worker.Start(args, false, log);
      WaitForWorker(*stub, mode, log);
      // The warm worker's first ladder-train trial starts its zygote (and itself starts cold meanwhile): a
      // search of one trial, then the zygote's "ready" in the worker's log, before the measured search.
      auto run_search = [&](const std::string& name, int n) {
        const std::string spec = "name: " + name + "\nobjective: {metric: val_loss, mode: min}\nbudget: {max_trials: " +
                                 std::to_string(n) + ", parallelism: 1}\ncommand: " + command +
                                 "\nspace:\n  lr: {type: float, low: 0.01, high: 0.1}\n";
        const auto t0 = std::chrono::steady_clock::now();
        auto created = CreateSearch(*stub, spec);
        auto done = WaitForSearchEnd(*stub, created.search().id(), std::chrono::seconds(60 + 10 * n));
        const double wall = Seconds(std::chrono::steady_clock::now() - t0);
        if (done.state() != v1::SEARCH_COMPLETED || done.completed() != n) {
          throw std::runtime_error("the " + name + " search ended " + v1::SearchState_Name(done.state()) + " with " +
                                   std::to_string(done.completed()) + " of " + std::to_string(n) +
                                   " completed: " + done.error() + " (see " + log + ")");
        }
        std::vector<double> l = StartLatencies(db, created.search().id());
        if (static_cast<int>(l.size()) != n) throw std::runtime_error(name + ": a trial has no metric point");
        return std::make_pair(l, wall);
      };
      if (mode == "warm") {
        first_warm = run_search("warm-up", 1).first.front();
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        auto ready = [&] {
          std::ifstream in(log);
          std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
          return text.find("zygote (pid") != std::string::npos && text.find(") ready") != std::string::npos;
        };
        while (!ready()) {
          if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("no zygote ready (see " + log + ")");
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
      }
      const int n = trials;
      auto [l, wall] = run_search(mode, n);
      worker.Stop(SIGTERM);
      std::fprintf(stderr, "%s: %d trials in %.1f s; start to first metrics line: median %.1f ms, min %.1f ms, max %.1f ms\n",
                   mode.c_str(), n, wall, 1e3 * Median(l), 1e3 * *std::min_element(l.begin(), l.end()),
                   1e3 * *std::max_element(l.begin(), l.end()));
      std::string each;
      for (double x : l) each += (each.empty() ? "" : " ") + std::to_string(static_cast<int>(std::lround(1e3 * x)));
      std::fprintf(stderr, "%s: each trial (ms): %s\n", mode.c_str(), each.c_str());
      latency[mode] = l;
    }
    std::fprintf(stderr, "warm: the first trial (cold, while the zygote loads) took %.1f ms\n", 1e3 * first_warm);
    std::fprintf(stderr, "load average at end: %s\n", LoadAverage().c_str());
    server.Stop(SIGTERM);
    const double cold = Median(latency["cold"]), warm = Median(latency["warm"]);
    std::printf("{\"cold_start_s\": %.4f, \"warm_start_s\": %.4f, \"speedup\": %.1f, \"trials_per_mode\": %d, "
                "\"first_warm_trial_s\": %.4f}\n",
                cold, warm, cold / warm, trials, first_warm);
  } catch (const std::exception& e) {
    std::cerr << "bench/trial_start: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
