// bench/recovery: time from a coordinator restart to serving again, with a large database: `trials` trials
// (default 10,000) and `points` metric points (default 10 million) in ladder.db. The database is generated
// quickly (the store API for searches and trials, one bulk SQL statement for the points); 100 trials of the
// last search are RUNNING on a node, so the restart also rebuilds what re-attaching them needs. Then
// ladder-server is started on it and killed with SIGKILL (a crash), and started again: restart_s is the time
// from starting the process to the first answered ServerInfo and ListTrials of the running search.
#include <sqlite3.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "bench/orchestration_support.h"
#include "server/store/store.h"

using namespace ladder::bench;

namespace {

constexpr int kSearches = 10;
constexpr int kRunning = 100;

void Generate(const std::string& path, int trials, int64_t points) {
  const int per_search = (trials + kSearches - 1) / kSearches;
  const int64_t per_trial = points / trials;
  {
    ladder::store::Store store(path);
    int made = 0;
    for (int s = 0; s < kSearches && made < trials; ++s) {
      const bool running = s == kSearches - 1;
      v1::Search search;
      search.set_name("recovery-" + std::to_string(s));
      search.set_state(running ? v1::SEARCH_RUNNING : v1::SEARCH_COMPLETED);
      search.set_spec_yaml("name: recovery-" + std::to_string(s) +
                           "\nobjective: {metric: loss, mode: min}\nbudget: {max_trials: " + std::to_string(per_search) +
                           ", parallelism: " + std::to_string(kRunning) +
                           "}\ncommand: [/bin/true]\nspace:\n  lr: {type: float, low: 0.0001, high: 0.1, log: true}\n"
                           "  width: {type: int, low: 16, high: 256}\n");
      search.set_objective_metric("loss");
      search.set_direction(v1::MINIMIZE);
      search.set_max_trials(per_search);
      search.set_parallelism(kRunning);
      search.mutable_group()->set_nodes(1);
      search.mutable_group()->set_ranks_per_node(1);
      search.set_created_unix(1.7e9);
      if (!running) search.set_finished_unix(1.7e9 + 3600);
      store.InsertSearch(&search);
      for (int i = 0; i < per_search && made < trials; ++i, ++made) {
        v1::Trial t;
        t.set_search_id(search.id());
        t.set_number(i);
        t.set_state(v1::TRIAL_PENDING);
        t.set_created_unix(1.7e9);
        (*t.mutable_params())["lr"].set_float_value(0.001 * (1 + i % 10));
        (*t.mutable_params())["width"].set_int_value(16 + i % 240);
        t.add_command("/bin/true");
        store.InsertTrial(&t);
        const bool is_running = running && i < kRunning;
        t.set_state(is_running ? v1::TRIAL_RUNNING : v1::TRIAL_COMPLETED);
        t.set_started_unix(1.7e9 + 1);
        t.set_metric_count(per_trial);
        int64_t epoch = t.id();
        if (is_running) {
          auto* pl = t.add_placement();
          pl->set_node_id("node-" + std::to_string(i / 8));
          pl->set_hostname(pl->node_id());
          pl->add_slots(i % 8);
          store.OpenAllocation(t.id(), 0, pl->node_id(), std::to_string(i % 8), epoch, 1.7e9 + 1);
        } else {
          t.set_has_objective(true);
          t.set_objective(1.0 / static_cast<double>(per_trial));
          t.set_exit_code(0);
          t.set_finished_unix(1.7e9 + 100);
        }
        store.UpdateTrial(t, epoch);
      }
    }
    store.Flush();
  }
  // The points, in one statement, with the journal off while generating (then back to WAL).
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) throw std::runtime_error("cannot open " + path);
  ExecSql(db, "PRAGMA journal_mode=DELETE");
  ExecSql(db, "PRAGMA synchronous=OFF");
  ExecSql(db, "PRAGMA cache_size=-262144");
  ExecSql(db, "BEGIN");
  ExecSql(db, "INSERT INTO metrics(trial_id, step, name, value, time) WITH RECURSIVE s(x) AS (SELECT 0 UNION ALL "
           "SELECT x + 1 FROM s WHERE x < " + std::to_string(per_trial - 1) +
           ") SELECT t.id, s.x, 'loss', 1.0 / (s.x + 1), 1.7e9 + s.x FROM trials t CROSS JOIN s ORDER BY t.id, s.x");
  ExecSql(db, "COMMIT");
  ExecSql(db, "PRAGMA journal_mode=WAL");
  sqlite3_close(db);
}

// Starts the server and returns the seconds until it answered ServerInfo and ListTrials(search).
double TimeToServe(Child& server, const std::string& db, const std::string& log, const std::string& listen,
                   int64_t running_search) {
  auto t0 = std::chrono::steady_clock::now();
  const std::string address = StartServer(server, db, {}, log, listen);
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  auto stub = v1::Ladder::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(600));
  ctx.set_wait_for_ready(true);
  v1::ServerInfoResponse info;
  auto st = stub->ServerInfo(&ctx, v1::ServerInfoRequest(), &info);
  if (!st.ok()) throw std::runtime_error("ServerInfo: " + st.error_message());
  grpc::ClientContext ctx2;
  v1::ListTrialsRequest req;
  req.set_search_id(running_search);
  v1::ListTrialsResponse trials;
  st = stub->ListTrials(&ctx2, req, &trials);
  if (!st.ok()) throw std::runtime_error("ListTrials: " + st.error_message());
  int running = 0;
  for (const auto& t : trials.trials()) running += t.state() == v1::TRIAL_RUNNING;
  if (running != kRunning) throw std::runtime_error("expected " + std::to_string(kRunning) + " running trials, got " + std::to_string(running));
  return Seconds(std::chrono::steady_clock::now() - t0);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench/recovery: coordinator restart time on a large database"};
  int trials = 10000;
  int64_t points = 10000000;
  bool quick = false;
  app.add_option("--trials", trials, "trials in the database")->capture_default_str()->check(CLI::Range(kRunning * 2, 10000000));
  app.add_option("--points", points, "metric points in the database")->capture_default_str();
  app.add_flag("--quick", quick, "the full 10,000 trials but 2 million points (about 1 minute)");
  CLI11_PARSE(app, argc, argv);
  if (quick) points = 2000000;
  if (points < trials) points = trials;
  std::cerr << "bench/recovery: " << trials << " trials, " << points << " metric points; load average " << LoadAverage()
            << (quick ? "" : " (the full run takes a few minutes, most of it generating the database)") << "\n";
  try {
    TempDir dir("recovery");
    const std::string db = (dir.path / "ladder.db").string();
    const std::string log = (dir.path / "server.log").string();
    auto g0 = std::chrono::steady_clock::now();
    Generate(db, trials, points);
    std::error_code ec;
    std::fprintf(stderr, "generated %s (%.0f MiB) in %.1f s\n", db.c_str(),
                 std::filesystem::file_size(db, ec) / 1048576.0, Seconds(std::chrono::steady_clock::now() - g0));
    const int64_t running_search = kSearches;
    Child first;
    const double first_s = TimeToServe(first, db, log, "127.0.0.1:0", running_search);
    first.Stop(SIGKILL);  // a crash
    Child second;
    const double restart_s = TimeToServe(second, db, log, "127.0.0.1:0", running_search);
    second.Stop(SIGTERM);
    std::fprintf(stderr, "first start %.3f s; restart after kill -9 %.3f s\n", first_s, restart_s);
    const int64_t stored_points = (points / trials) * trials;
    std::printf("{\"trials\": %d, \"metric_points\": %lld, \"restart_s\": %.3f}\n", trials,
                static_cast<long long>(stored_points), restart_s);
  } catch (const std::exception& e) {
    std::cerr << "bench/recovery: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
