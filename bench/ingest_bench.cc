// bench/ingest: sustained metric results per second from workers into SQLite, and the coordinator's memory
// under overload. A real ladder-server process; load generators speak the WorkerService protocol like
// ladder-worker does (register, receive StartTrial, stream MetricReports with sequence numbers, follow the
// coordinator's Acknowledged messages). A result counts once the coordinator acknowledged it, i.e. it is
// committed to the database. Two phases:
//   1. steady: each trial keeps at most --window results unacknowledged (ladder-worker's default backpressure);
//      results_per_s = acknowledged results / time.
//   2. overload: the generators send without any window for a third of the time; the coordinator reads one
//      message per stream at a time, so gRPC flow control holds them back: its peak RSS must stay bounded.
// Finally the database is opened and the results counted and queried (durable and queryable).
#include <sqlite3.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <condition_variable>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

#include "bench/orchestration_support.h"

using namespace ladder::bench;

namespace {

struct Options {
  double seconds = 60;
  int streams = 4;
  int trials_per_stream = 4;
  int batch = 500;
  int values = 2;
  int64_t window = 50000;
};

// One worker stream: registers, takes its trials, sends results, counts acknowledgements.
class Generator {
 public:
  Generator(const std::string& address, int index, const Options& opt) : opt_(opt), index_(index) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // its own TCP connection, like a separate node
    channel_ = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
    stub_ = v1::WorkerService::NewStub(channel_);
  }
  // Registers and waits for the coordinator to assign all trials.
  void Connect() {
    stream_ = stub_->Connect(&ctx_);
    v1::WorkerMessage reg;
    reg.mutable_register_()->set_node_id("gen-" + std::to_string(index_));
    reg.mutable_register_()->mutable_resources()->set_hostname("gen-" + std::to_string(index_));
    reg.mutable_register_()->mutable_resources()->set_slots(opt_.trials_per_stream);
    if (!stream_->Write(reg)) throw std::runtime_error("register failed");
    reader_ = std::thread([this] { ReadLoop(); });
    std::unique_lock<std::mutex> g(mu_);
    if (!cv_.wait_for(g, std::chrono::seconds(30), [this] { return static_cast<int>(trials_.size()) >= opt_.trials_per_stream; })) {
      throw std::runtime_error("stream " + std::to_string(index_) + " got no trials");
    }
  }
  // Sends until `until`; window < 0: no window (overload).
  void Send(std::chrono::steady_clock::time_point until, int64_t window) {
    std::vector<int64_t> ids;
    {
      std::lock_guard<std::mutex> g(mu_);
      for (auto& [id, t] : trials_) ids.push_back(id);
    }
    size_t next = 0;
    while (std::chrono::steady_clock::now() < until) {
      int64_t id = ids[next++ % ids.size()];
      int64_t first, epoch;
      {
        std::unique_lock<std::mutex> g(mu_);
        Trial& t = trials_[id];
        if (window >= 0 && t.sent - t.acked >= window) {
          cv_.wait_until(g, until, [&] { return t.sent - t.acked < window || failed_; });
          if (t.sent - t.acked >= window) continue;
        }
        first = t.sent;
        epoch = t.epoch;
        t.sent += opt_.batch;
      }
      v1::WorkerMessage m;
      auto* mr = m.mutable_metrics();
      mr->set_trial_id(id);
      mr->set_assignment_epoch(epoch);
      mr->set_first_seq(first);
      const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
      for (int i = 0; i < opt_.batch; ++i) {
        auto* p = mr->add_points();
        p->set_step(first + i);
        p->set_time_unix(now);
        auto& values = *p->mutable_values();
        values["loss"] = 1.0 / static_cast<double>(first + i + 1);
        for (int v = 1; v < opt_.values; ++v) values["metric" + std::to_string(v)] = v * 0.5;
      }
      if (!stream_->Write(m)) throw std::runtime_error("the coordinator closed stream " + std::to_string(index_));
    }
  }
  // Waits until everything sent is acknowledged (or the deadline passes); returns false on timeout.
  bool Drain(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock<std::mutex> g(mu_);
    return cv_.wait_until(g, deadline, [this] {
      for (auto& [id, t] : trials_) {
        if (t.acked < t.sent) return false;
      }
      return true;
    });
  }
  int64_t Acked() {
    std::lock_guard<std::mutex> g(mu_);
    int64_t n = 0;
    for (auto& [id, t] : trials_) n += t.acked;
    return n;
  }
  void Close() {
    stream_->WritesDone();
    ctx_.TryCancel();
    if (reader_.joinable()) reader_.join();
    stream_->Finish();
  }

 private:
  struct Trial {
    int64_t epoch = 0, sent = 0, acked = 0;
  };
  void ReadLoop() {
    v1::CoordinatorMessage m;
    while (stream_->Read(&m)) {
      std::lock_guard<std::mutex> g(mu_);
      if (m.has_start()) trials_[m.start().trial_id()].epoch = m.start().assignment_epoch();
      if (m.has_ack()) {
        for (const auto& a : m.ack().trials()) {
          auto it = trials_.find(a.trial_id());
          if (it != trials_.end()) it->second.acked = std::max(it->second.acked, a.durable_seq());
        }
      }
      cv_.notify_all();
    }
    std::lock_guard<std::mutex> g(mu_);
    failed_ = true;
    cv_.notify_all();
  }

  Options opt_;
  int index_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::WorkerService::Stub> stub_;
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::WorkerMessage, v1::CoordinatorMessage>> stream_;
  std::thread reader_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int64_t, Trial> trials_;
  bool failed_ = false;
};

int64_t QueryInt(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* st = nullptr;
  int64_t v = -1;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
    v = sqlite3_column_int64(st, 0);
  }
  sqlite3_finalize(st);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench/ingest: metric results per second from worker streams into SQLite, memory under overload"};
  Options opt;
  bool quick = false;
  app.add_option("--seconds", opt.seconds, "length of the steady phase (the overload phase is a third of it)")
      ->capture_default_str()->check(CLI::Range(1.0, 3600.0));
  app.add_option("--streams", opt.streams, "worker streams (load generators)")->capture_default_str()->check(CLI::Range(1, 256));
  app.add_option("--trials-per-stream", opt.trials_per_stream, "trials each stream runs")->capture_default_str()->check(CLI::Range(1, 1024));
  app.add_option("--batch", opt.batch, "results per MetricReport")->capture_default_str()->check(CLI::Range(1, 4096));
  app.add_option("--values", opt.values, "named values per result (rows per result)")->capture_default_str()->check(CLI::Range(1, 64));
  app.add_option("--window", opt.window, "unacknowledged results per trial in the steady phase")->capture_default_str();
  app.add_flag("--quick", quick, "a 15 s steady phase (about 25 s in all)");
  int watchers = 0;
  app.add_option("--watchers", watchers, "attach this many `ladder watch --json` and as many dashboard event streams")
      ->capture_default_str()->check(CLI::Range(0, 100));
  CLI11_PARSE(app, argc, argv);
  if (quick) opt.seconds = 15;
  std::cerr << "bench/ingest: " << opt.streams << " streams x " << opt.trials_per_stream << " trials, " << opt.batch
            << " results per report, " << opt.values << " values per result, " << opt.seconds
            << " s steady + " << opt.seconds / 3 << " s overload; load average " << LoadAverage() << "\n";
  try {
    TempDir dir("ingest");
    const std::string db = (dir.path / "ladder.db").string();
    const std::string log = (dir.path / "server.log").string();
    Child server;
    const int http_port = ladder::testing::FreePort();
    const std::string address =
        StartServer(server, db, {"--http", "127.0.0.1:" + std::to_string(http_port)}, log);
    auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
    auto stub = v1::Ladder::NewStub(channel);
    const int trials = opt.streams * opt.trials_per_stream;
    Watchers watching;
    auto created = CreateSearch(*stub, "name: ingest\nobjective: {metric: loss, mode: min}\nbudget: {max_trials: " +
                            std::to_string(trials) + ", parallelism: " + std::to_string(trials) +
                            "}\ncommand: [/bin/true]\nspace:\n  x: {type: float, low: 0.0, high: 1.0}\n");
    watching.Start(watchers, address, http_port, created.search().id(), log);
    if (watchers > 0) std::this_thread::sleep_for(std::chrono::seconds(1));  // let them connect
    std::vector<std::unique_ptr<Generator>> gens;
    for (int i = 0; i < opt.streams; ++i) {
      gens.push_back(std::make_unique<Generator>(address, i, opt));
      gens.back()->Connect();
    }
    const double rss_idle = PeakRssMb(server.pid);
    // Phase 1: steady, windowed.
    auto run_phase = [&](double seconds, int64_t window) {
      auto t0 = std::chrono::steady_clock::now();
      auto until = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
      std::vector<std::thread> threads;
      std::atomic<bool> error{false};
      for (auto& g : gens) {
        threads.emplace_back([&, g = g.get()] {
          try {
            g->Send(until, window);
          } catch (const std::exception& e) {
            std::cerr << "bench/ingest: " << e.what() << "\n";
            error = true;
          }
        });
      }
      for (auto& t : threads) t.join();
      if (error) throw std::runtime_error("a generator failed (see " + log + ")");
      for (auto& g : gens) {
        if (!g->Drain(std::chrono::steady_clock::now() + std::chrono::seconds(120))) {
          throw std::runtime_error("results were not acknowledged within 120 s");
        }
      }
      return Seconds(std::chrono::steady_clock::now() - t0);
    };
    int64_t before = 0;
    const double steady_s = run_phase(opt.seconds, opt.window);
    int64_t steady_acked = 0;
    for (auto& g : gens) steady_acked += g->Acked();
    const double results_per_s = steady_acked / steady_s;
    const double rss_steady = PeakRssMb(server.pid);
    std::fprintf(stderr, "steady: %lld results acknowledged in %.2f s = %.0f results/s (%.0f rows/s); server peak RSS %.1f MiB (%.1f MiB idle)\n",
                 static_cast<long long>(steady_acked), steady_s, results_per_s, results_per_s * opt.values, rss_steady, rss_idle);
    before = steady_acked;
    // Phase 2: overload, no window.
    const double overload_s = run_phase(opt.seconds / 3, -1);
    int64_t total_acked = 0;
    for (auto& g : gens) total_acked += g->Acked();
    const double peak_rss = PeakRssMb(server.pid);
    std::fprintf(stderr, "overload: %lld results acknowledged in %.2f s = %.0f results/s; server peak RSS %.1f MiB\n",
                 static_cast<long long>(total_acked - before), overload_s, (total_acked - before) / overload_s, peak_rss);
    for (auto& g : gens) g->Close();
    server.Stop(SIGTERM);
    // Durable and queryable: every acknowledged result is in the database.
    sqlite3* h = nullptr;
    if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) throw std::runtime_error("cannot open " + db);
    int64_t rows = QueryInt(h, "SELECT COUNT(*) FROM metrics");
    auto q0 = std::chrono::steady_clock::now();
    int64_t one = QueryInt(h, "SELECT COUNT(*) FROM metrics WHERE trial_id = 1 AND name = 'loss' AND step >= 1000");
    double query_ms = 1000 * Seconds(std::chrono::steady_clock::now() - q0);
    sqlite3_close(h);
    std::fprintf(stderr, "database: %lld rows for %lld acknowledged results x %d values; one trial's curve from step 1000: %lld points in %.1f ms\n",
                 static_cast<long long>(rows), static_cast<long long>(total_acked), opt.values,
                 static_cast<long long>(one), query_ms);
    if (rows < total_acked * opt.values) throw std::runtime_error("acknowledged results are missing from the database");
    std::fprintf(stderr, "load average at end: %s\n", LoadAverage().c_str());
    std::printf("{\"results_per_s\": %.0f, \"peak_rss_mb\": %.1f}\n", results_per_s, peak_rss);
  } catch (const std::exception& e) {
    std::cerr << "bench/ingest: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
