// bench/bookkeeping: the analogue of Ray Tune's bookkeeping release test (10,000 trials x 1 s on 16 CPUs:
// 715 s against a 625 s minimum, 14% overhead). N trials of a program that prints a metrics line every 0.1 s
// and ends after 1 s run through a real ladder-server and one ladder-worker with `slots` slots; overhead is
// wall / min - 1 with min = ceil(N / slots) x 1 s. Wall is measured from CreateSearch to the search's end.
#include <CLI/CLI.hpp>
#include <cmath>
#include <iostream>
#include <sqlite3.h>

#include "bench/orchestration_support.h"

using namespace ladder::bench;

int main(int argc, char** argv) {
  CLI::App app{"bench/bookkeeping: orchestration overhead for many short trials through ladder-server + ladder-worker"};
  int trials = 10000, slots = 16;
  bool quick = false;
  app.add_option("--trials", trials, "number of 1-second trials")->capture_default_str()->check(CLI::Range(1, 1000000));
  app.add_option("--slots", slots, "worker slots (trials at once)")->capture_default_str()->check(CLI::Range(1, 4096));
  app.add_flag("--quick", quick, "480 trials (about 30 s)");
  // The search's sampler is named: this measures what orchestration costs per trial, as Ray Tune's release test
  // does with its random variant generator. The default sampler (auto) picks GP-BO for this spec (1 parameter,
  // 480 trials), whose suggestion runs on the coordinator's loop between one trial's exit and the next start:
  // --sampler auto measures that too.
  std::string sampler = "random";
  app.add_option("--sampler", sampler, "the search's sampler (random, sobol, tpe, gp, auto, ...)")
      ->capture_default_str();
  std::vector<std::string> server_args;
  app.add_option("--server-arg", server_args, "a flag for ladder-server (repeat; e.g. --server-arg=--ack-delay-ms=0)");
  int watchers = 0;
  app.add_option("--watchers", watchers, "attach this many `ladder watch --json` and as many dashboard event streams")
      ->capture_default_str()->check(CLI::Range(0, 100));
  CLI11_PARSE(app, argc, argv);
  if (quick) trials = 480;
  const double min_s = std::ceil(static_cast<double>(trials) / slots) * 1.0;
  std::cerr << "bench/bookkeeping: " << trials << " trials x 1 s on " << slots << " slots, minimum " << min_s
            << " s; load average " << LoadAverage() << "\n";
  try {
    TempDir dir("bookkeeping");
    const std::string log = (dir.path / "processes.log").string();
    Child server, worker;
    const std::string db = (dir.path / "ladder.db").string();
    const int http_port = ladder::testing::FreePort();
    server_args.insert(server_args.begin(), {"--http", "127.0.0.1:" + std::to_string(http_port)});
    const std::string address = StartServer(server, db, server_args, log);
    worker.Start({OwnDir() + "/ladder-worker", "--server", address, "--node-id", "bench", "--slots",
                  std::to_string(slots), "--trial-dir", (dir.path / "trials").string()},
                 false, log);
    auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
    auto stub = v1::Ladder::NewStub(channel);
    {  // wait until the worker is registered
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
      ctx.set_wait_for_ready(true);
      auto reader = stub->Watch(&ctx, v1::WatchRequest());
      v1::Event ev;
      bool up = false;
      while (!up && reader->Read(&ev)) up = ev.kind() == v1::Event::WORKER_UPDATED && ev.worker().state() == v1::WORKER_UP;
      ctx.TryCancel();
      reader->Finish();
      if (!up) throw std::runtime_error("the worker did not register (see " + log + ")");
    }
    const std::string spec = "name: bookkeeping\nobjective: {metric: score, mode: max}\nsampler: " + sampler + "\n"
                             "budget: {max_trials: " + std::to_string(trials) + ", parallelism: " +
                             std::to_string(slots) + "}\ncommand: [" + OwnDir() + "/ladder-bookkeeping-trial]\n"
                             "space:\n  x: {type: float, low: 0.0, high: 1.0}\n";
    auto t0 = std::chrono::steady_clock::now();
    auto created = CreateSearch(*stub, spec);
    Watchers watching;  // they attach while the first trials start: part of what is measured
    watching.Start(watchers, address, http_port, created.search().id(), log);
    auto done = WaitForSearchEnd(*stub, created.search().id(), std::chrono::seconds(static_cast<int>(min_s * 3 + 60)));
    const double wall_s = Seconds(std::chrono::steady_clock::now() - t0);
    if (done.state() != v1::SEARCH_COMPLETED || done.completed() != trials) {
      throw std::runtime_error("the search ended " + v1::SearchState_Name(done.state()) + " with " +
                               std::to_string(done.completed()) + " completed: " + done.error());
    }
    server.Stop(SIGTERM);
    worker.Stop(SIGTERM);
    // Where the time went, from the allocation records: a trial's own run time, and the gap between one
    // trial leaving a slot and the next one taking it (launch latency + bookkeeping).
    sqlite3* h = nullptr;
    if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
      sqlite3_stmt* st = nullptr;
      const char* sql =
          "WITH a AS (SELECT slots, started_at, released_at, LAG(released_at) OVER (PARTITION BY slots ORDER BY "
          "started_at) AS prev FROM allocations) SELECT AVG(released_at - started_at), AVG(started_at - prev), "
          "MAX(started_at - prev) FROM a";
      if (sqlite3_prepare_v2(h, sql, -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
        std::fprintf(stderr, "per trial: held its slot %.4f s on average; slot idle between trials %.2f ms on "
                             "average, %.1f ms at most\n",
                     sqlite3_column_double(st, 0), 1000 * sqlite3_column_double(st, 1),
                     1000 * sqlite3_column_double(st, 2));
      }
      sqlite3_finalize(st);
      sqlite3_close(h);
    }
    std::fprintf(stderr, "load average at end: %s\n", LoadAverage().c_str());
    std::printf("{\"trials\": %d, \"slots\": %d, \"sampler\": \"%s\", \"min_s\": %.1f, \"wall_s\": %.3f, "
                "\"overhead\": %.5f}\n",
                trials, slots, sampler.c_str(), min_s, wall_s, wall_s / min_s - 1);
  } catch (const std::exception& e) {
    std::cerr << "bench/bookkeeping: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
