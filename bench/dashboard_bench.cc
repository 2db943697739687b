// bench/dashboard: how fast the web dashboard draws a large search. A stored search of `trials` completed trials
// (default 10,000) with `points` metric points each (default 100) is generated; ladder-server serves it with
// --http; headless Chromium (driven over the DevTools protocol) loads the search's page from scratch, and
// page_load_s is the time from the navigation to the page fully drawn (the trial table's first page and count,
// every chart), page_bytes what it transferred (the page, its assets, the API answers). Median of `rounds` loads.
#include <sqlite3.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <iostream>

#include "bench/orchestration_support.h"
#include "common/executable.h"
#include "server/store/store.h"
#include "tests/support/headless_chromium.h"

using namespace ladder::bench;

namespace {

// One completed search of `trials` trials (3 parameters, an objective) with `points` loss points each.
void Generate(const std::string& path, int trials, int points) {
  {
    ladder::store::Store store(path);
    v1::Search s;
    s.set_name("dashboard");
    s.set_state(v1::SEARCH_COMPLETED);
    s.set_spec_yaml("name: dashboard\nobjective: {metric: loss, mode: min}\nbudget: {max_trials: " +
                    std::to_string(trials) + "}\ncommand: [/bin/true]\nspace:\n  lr: {type: float, low: 0.0001, "
                    "high: 0.1, log: true}\n  width: {type: int, low: 16, high: 256}\n  opt: {type: categorical, "
                    "values: [sgd, adam]}\n");
    s.set_objective_metric("loss");
    s.set_direction(v1::MINIMIZE);
    s.set_max_trials(trials);
    s.set_parallelism(64);
    s.mutable_group()->set_nodes(1);
    s.mutable_group()->set_ranks_per_node(1);
    s.set_created_unix(1.7e9);
    s.set_finished_unix(1.7e9 + 3600);
    store.InsertSearch(&s);
    for (int i = 0; i < trials; ++i) {
      v1::Trial t;
      t.set_search_id(s.id());
      t.set_number(i);
      t.set_state(v1::TRIAL_PENDING);
      t.set_created_unix(1.7e9);
      const double lr = 0.0001 * std::pow(1000.0, (i * 7919 % trials) / static_cast<double>(trials));
      (*t.mutable_params())["lr"].set_float_value(lr);
      (*t.mutable_params())["width"].set_int_value(16 + i % 240);
      (*t.mutable_params())["opt"].set_string_value(i % 3 ? "adam" : "sgd");
      t.add_command("/bin/true");
      store.InsertTrial(&t);
      t.set_state(v1::TRIAL_COMPLETED);
      t.set_started_unix(1.7e9 + i);
      t.set_finished_unix(1.7e9 + i + 60);
      t.set_metric_count(points);
      t.set_has_objective(true);
      t.set_objective(std::abs(std::log10(lr) + 2.5) + 0.001 * (i % 97));
      t.add_placement()->set_node_id("node-" + std::to_string(i % 64));
      store.UpdateTrial(t, t.id());
    }
    store.Flush();
  }
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) throw std::runtime_error("cannot open " + path);
  ExecSql(db, "PRAGMA journal_mode=DELETE");
  ExecSql(db, "PRAGMA synchronous=OFF");
  ExecSql(db, "BEGIN");
  ExecSql(db, "INSERT INTO metrics(trial_id, step, name, value, time) WITH RECURSIVE s(x) AS (SELECT 0 UNION ALL "
           "SELECT x + 1 FROM s WHERE x < " + std::to_string(points - 1) +
           ") SELECT t.id, s.x, 'loss', t.objective + 1.0 / (s.x + 1), 1.7e9 + t.number + s.x FROM trials t "
           "CROSS JOIN s ORDER BY t.id, s.x");
  ExecSql(db, "COMMIT");
  ExecSql(db, "PRAGMA journal_mode=WAL");
  sqlite3_close(db);
}

// Runs a sibling benchmark binary with `args` and returns its last line (one JSON object).
nlohmann::json RunBench(const std::string& name, std::vector<std::string> args) {
  std::string cmd = OwnDir() + "/" + name;
  for (const auto& a : args) cmd += " " + a;
  std::string out;
  if (ladder::ShellOutput(cmd + " 2>/dev/null", &out) != 0) throw std::runtime_error(name + " failed");
  const size_t end = out.find_last_not_of('\n');
  const size_t start = end == std::string::npos ? 0 : out.rfind('\n', end);
  return nlohmann::json::parse(out.substr(start == std::string::npos ? 0 : start + 1));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench/dashboard: the web dashboard's load time on a large stored search, in headless Chromium"};
  bool quick = false;
  int trials = 10000, points = 100, rounds = 5;
  app.add_flag("--quick", quick, "3 loads instead of 5 (the same 10,000 x 100 search)");
  app.add_option("--trials", trials, "trials in the stored search")->check(CLI::Range(1, 1000000));
  app.add_option("--points", points, "metric points per trial")->check(CLI::Range(1, 100000));
  app.add_option("--rounds", rounds, "page loads (the median is reported)")->check(CLI::Range(1, 100));
  int watchers = 10;
  app.add_option("--watchers", watchers, "terminals and browsers attached for the watchers' cost (0: not measured)")
      ->capture_default_str()->check(CLI::Range(0, 100));
  CLI11_PARSE(app, argc, argv);
  if (quick) rounds = std::min(rounds, 3);
  if (!ladder::testing::HeadlessChromium::Available()) {
    std::cerr << "bench/dashboard: needs chromium (scripts/bootstrap.sh installs it)\n";
    return 1;
  }
  TempDir dir("dashboard");
  const std::string db = (dir.path / "ladder.db").string();
  auto t0 = std::chrono::steady_clock::now();
  Generate(db, trials, points);
  std::cerr << "generated " << trials << " trials x " << points << " points in "
            << Seconds(std::chrono::steady_clock::now() - t0) << " s\n";
  const int http_port = ladder::testing::FreePort();
  Child server;
  StartServer(server, db, {"--http", "127.0.0.1:" + std::to_string(http_port)}, (dir.path / "server.log").string());
  const std::string url = "http://127.0.0.1:" + std::to_string(http_port) + "/#/search/1";
  ladder::testing::HeadlessChromium browser(dir.path);
  browser.Open("about:blank");
  const std::string drawn =
      "document.body && document.body.dataset.ready === '#/search/1' && "
      "document.getElementById('trial-count').dataset.total === '" + std::to_string(trials) + "' && "
      "document.querySelectorAll('#trials tbody tr').length === " + std::to_string(std::min(trials, 200)) + " && "
      "[...document.querySelectorAll('canvas')].length >= 3";
  std::vector<double> loads, bytes;
  for (int r = 0; r < rounds; ++r) {
    browser.Navigate("about:blank");
    browser.WaitFor("location.href === 'about:blank'");
    const auto start = std::chrono::steady_clock::now();
    browser.Navigate(url);
    if (!browser.WaitFor(drawn, std::chrono::seconds(300))) {
      std::cerr << "bench/dashboard: the page was not drawn within 300 s\n";
      return 1;
    }
    loads.push_back(Seconds(std::chrono::steady_clock::now() - start));
    auto b = browser.Eval(
        "performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'))"
        ".reduce((a, e) => a + (e.transferSize || e.encodedBodySize || 0), 0)");
    bytes.push_back(b.is_number() ? b.get<double>() : 0);
    std::cerr << "load " << r + 1 << ": " << loads.back() << " s, " << static_cast<int64_t>(bytes.back())
              << " bytes; in the page: ready at " << browser.Eval("document.body.dataset.readyMs").dump() << " ms; "
              << browser.Eval("performance.getEntriesByType('resource').map(e => e.name.split('/').pop()"
                              ".slice(0, 24) + ' ' + Math.round(e.responseEnd - e.startTime) + ' ms').join(', ')")
                     .dump()
              << "\n";
  }
  std::sort(loads.begin(), loads.end());
  std::sort(bytes.begin(), bytes.end());
  browser.Navigate("about:blank");
  server.Stop(SIGTERM);
  // What watchers cost the coordinator: bench/ingest and bench/bookkeeping (shortened) without and with `watchers`
  // terminals (ladder watch --json) and as many browsers' event streams attached, side by side.
  std::string ingest_ratio = "null", overhead = "null";
  if (watchers > 0) {
    const std::vector<std::string> ingest = {"--seconds", quick ? "5" : "15"};
    const std::vector<std::string> book = {"--trials", quick ? "320" : "960"};
    auto with = [&](std::vector<std::string> a) {
      a.insert(a.end(), {"--watchers", std::to_string(watchers)});
      return a;
    };
    // Ingest runs alone, with, with, alone (ABBA): a drift of the machine's speed during the run cancels out of
    // the ratio of the sums (a single pair of short runs varies by about 5% here).
    double alone = 0, watched = 0;
    for (bool w : {false, true, true, false}) {
      const double r = RunBench("ladder-ingest-bench", w ? with(ingest) : ingest)["results_per_s"].get<double>();
      (w ? watched : alone) += r / 2;
    }
    auto b1 = RunBench("ladder-bookkeeping-bench", with(book)), b0 = RunBench("ladder-bookkeeping-bench", book);
    const double ratio = watched / alone;
    std::cerr << "ingest: " << alone << " results/s alone, " << watched << " with " << watchers << " + " << watchers
              << " watchers (means of 2 runs each, ABBA; ratio " << ratio << "); bookkeeping overhead "
              << b0["overhead"] << " alone, " << b1["overhead"] << " with them\n";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.4f", ratio);
    ingest_ratio = buf;
    std::snprintf(buf, sizeof buf, "%.5f", b1["overhead"].get<double>());
    overhead = buf;
  }
  char line[512];
  std::snprintf(line, sizeof line,
                "{\"trials\": %d, \"points_per_trial\": %d, \"page_load_s\": %.3f, \"page_bytes\": %lld, "
                "\"ingest_ratio_with_watchers\": %s, \"bookkeeping_overhead_with_watchers\": %s}",
                trials, points, loads[loads.size() / 2], static_cast<long long>(bytes[bytes.size() / 2]),
                ingest_ratio.c_str(), overhead.c_str());
  std::cout << line << "\n";
  return 0;
}
