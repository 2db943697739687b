// ladder-multifidelity-bench (run through bench/multifidelity): ASHA, Hyperband and the median stopping rule
// (search/stopping/stopping_rule.h) against random search at EQUAL TOTAL RESOURCE (epochs).
//
// Table mode: trials replay learning curves recorded from real ladder-train runs (bench/data/digits_curves.csv,
// written by bench/record_curves). W trials run at once (asynchronous: each epoch of a trial takes that
// configuration's recorded seconds per epoch); a trial takes the next configuration of a seeded permutation of
// the table (the same permutation for every algorithm of a seed); every finished epoch costs 1 from the budget
// and is reported to the stopping rule as (epoch, val_loss); a stopped trial frees its worker for the next
// configuration; the run ends when the budget is spent (running trials are cut there). Random search is the
// same loop without a stopping rule (every trial runs to max epochs). A configuration whose run diverged (fewer
// recorded epochs) fails after one more epoch.
//
// Live mode (--live, bench/multifidelity_live.*): the same loop on real ladder-train processes (digits data, --threads 1, the record_curves
// space drawn afresh with the seed), W at once, each started with --epochs R and killed (SIGTERM) when its
// stopping rule stops it or the budget is spent. The runs fork from one `ladder-train --zygote` (as ladder-worker
// starts ladder-train trials: worker/warm_start.h) so that a trial start costs milliseconds, not LibTorch's
// start-up (about 0.5 s, more than a digits epoch); --live-start cold starts each as a new process instead.
//
// Regret: the best val_loss any trial reported (at any epoch) minus the best val_loss in the whole table.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <queue>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/multifidelity_live.h"
#include "search/stopping/stopping_rule.h"

namespace {

using ladder::bench::LiveOptions;
using ladder::bench::LiveResult;
using ladder::bench::RunLive;
using ladder::bench::WarmTrainer;
using ladder::search::MakeStoppingRule;
using ladder::search::TrialDecision;
using ladder::search::StoppingRule;
using ladder::search::StoppingOptions;
using ladder::search::StoppingRuleType;

struct Options {
  std::string table;
  std::vector<int> budgets = {100, 200, 400};
  int main_budget = 200;
  int seeds = 50;
  int workers = 4;
  double eta = 3;
  double min_resource = 1;
  bool live = false;
  std::string train;
  int live_budget = 100;
  int live_seeds = 5;
  int live_workers = 2;
  bool live_warm = true;  // --live-start warm|cold
  std::string live_workload = "digits";  // --live-workload digits|cosmo
};

[[noreturn]] void Usage(int code) {
  (code == 0 ? std::cout : std::cerr)
      << "usage: ladder-multifidelity-bench --table CSV [--budgets A,B,..] [--budget N] [--seeds N] [--workers N]\n"
         "         [--eta X] [--min-resource X] [--live --train PATH [--live-budget N] [--live-seeds N]\n"
         "         [--live-workers N] [--live-start warm|cold] [--live-workload digits|cosmo]]\n"
         "Runs random search, ASHA, Hyperband and median stopping at equal total epochs on the learning curves\n"
         "of the table (and with --live on real ladder-train runs); regret = best val_loss found - the table's\n"
         "best. The last line is one JSON object. Normally run through bench/multifidelity.\n";
  std::exit(code);
}

std::vector<int> ParseList(const std::string& s) {
  std::vector<int> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::stoi(item));
  return out;
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") Usage(0);
    if (a == "--live") {
      o.live = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::cerr << "ladder-multifidelity-bench: " << a << " needs a value\n";
      Usage(2);
    }
    std::string v = argv[++i];
    try {
      if (a == "--table") o.table = v;
      else if (a == "--budgets") o.budgets = ParseList(v);
      else if (a == "--budget") o.main_budget = std::stoi(v);
      else if (a == "--seeds") o.seeds = std::stoi(v);
      else if (a == "--workers") o.workers = std::stoi(v);
      else if (a == "--eta") o.eta = std::stod(v);
      else if (a == "--min-resource") o.min_resource = std::stod(v);
      else if (a == "--train") o.train = v;
      else if (a == "--live-budget") o.live_budget = std::stoi(v);
      else if (a == "--live-seeds") o.live_seeds = std::stoi(v);
      else if (a == "--live-workers") o.live_workers = std::stoi(v);
      else if (a == "--live-start" && (v == "warm" || v == "cold")) o.live_warm = v == "warm";
      else if (a == "--live-workload" && (v == "digits" || v == "cosmo")) o.live_workload = v;
      else {
        std::cerr << "ladder-multifidelity-bench: unknown option '" << a << "'\n";
        Usage(2);
      }
    } catch (const std::exception&) {
      std::cerr << "ladder-multifidelity-bench: bad value '" << v << "' for " << a << "\n";
      Usage(2);
    }
  }
  if (o.table.empty()) {
    std::cerr << "ladder-multifidelity-bench: --table is required\n";
    Usage(2);
  }
  if (std::find(o.budgets.begin(), o.budgets.end(), o.main_budget) == o.budgets.end()) {
    o.budgets.push_back(o.main_budget);
    std::sort(o.budgets.begin(), o.budgets.end());
  }
  if (o.live && o.train.empty()) {
    std::cerr << "ladder-multifidelity-bench: --live needs --train PATH (ladder-train)\n";
    Usage(2);
  }
  if (o.seeds < 1 || o.workers < 1 || o.live_seeds < 1 || o.live_workers < 1 || !(o.eta > 1)) Usage(2);
  return o;
}

// One recorded configuration: its val_loss after each epoch it finished, and seconds per epoch.
struct Curve {
  std::vector<double> val_loss;
  double seconds_per_epoch = 1;
};

struct Table {
  std::vector<Curve> curves;
  int epochs = 0;  // E, the epochs every run was started with
  double best = std::numeric_limits<double>::infinity();
  int diverged = 0;
};

Table ReadTable(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::cerr << path << ": cannot open the learning-curve table (record it with bench/record_curves)\n";
    std::exit(1);
  }
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header;
  {
    std::stringstream h(line);
    std::string f;
    while (std::getline(h, f, ',')) header.push_back(f);
  }
  auto column = [&](const std::string& name) {
    auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end()) {
      std::cerr << path << ":1: no column '" << name << "'\n";
      std::exit(1);
    }
    return static_cast<size_t>(it - header.begin());
  };
  const size_t c_epochs = column("epochs"), c_seconds = column("seconds"), c_first = column("val_loss_1");
  Table t;
  while (c_first + static_cast<size_t>(t.epochs) < header.size() &&
         header[c_first + static_cast<size_t>(t.epochs)] == "val_loss_" + std::to_string(t.epochs + 1)) {
    ++t.epochs;
  }
  int line_no = 1;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    std::vector<std::string> f;
    std::stringstream s(line);
    std::string cell;
    while (std::getline(s, cell, ',')) f.push_back(cell);
    while (f.size() < header.size()) f.emplace_back();
    try {
      Curve c;
      const int done = std::stoi(f[c_epochs]);
      for (int e = 0; e < done && e < t.epochs; ++e) {
        c.val_loss.push_back(std::stod(f[c_first + static_cast<size_t>(e)]));
      }
      c.seconds_per_epoch = std::max(1e-3, std::stod(f[c_seconds]) / std::max(1, done));
      for (double v : c.val_loss) t.best = std::min(t.best, v);
      if (done < t.epochs) ++t.diverged;
      t.curves.push_back(std::move(c));
    } catch (const std::exception&) {
      std::cerr << path << ":" << line_no << ": not a row of the learning-curve table\n";
      std::exit(1);
    }
  }
  if (t.curves.empty() || t.epochs < 2) {
    std::cerr << path << ": no learning curves\n";
    std::exit(1);
  }
  return t;
}

const std::vector<std::string> kAlgorithms = {"random", "asha", "hyperband", "median"};

StoppingOptions RuleFor(const std::string& algorithm, const Options& o, int max_epochs) {
  StoppingOptions s;
  s.resource = "epoch";
  s.min_resource = o.min_resource;
  s.max_resource = max_epochs;
  s.reduction_factor = o.eta;
  if (algorithm == "asha") s.type = StoppingRuleType::kAsha;
  if (algorithm == "hyperband") s.type = StoppingRuleType::kHyperband;
  if (algorithm == "median") s.type = StoppingRuleType::kMedian;  // library defaults: grace 1, min_trials 3
  return s;
}

struct RunResult {
  double best = std::numeric_limits<double>::infinity();
  int trials = 0;
  int stopped = 0;
};

// One simulated search over the table.
RunResult Simulate(const Table& table, const std::string& algorithm, const Options& o, int budget, uint64_t seed) {
  std::unique_ptr<StoppingRule> rule =
      MakeStoppingRule(RuleFor(algorithm, o, table.epochs), /*maximize=*/false);
  std::vector<size_t> order(table.curves.size());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ULL + 1);
  std::shuffle(order.begin(), order.end(), rng);

  struct Running {
    int64_t number;
    size_t config;
    int epoch;  // finished epochs
  };
  using Event = std::tuple<double, int, Running>;  // (time of the next epoch's end, worker, trial)
  auto later = [](const Event& a, const Event& b) {
    return std::tie(std::get<0>(a), std::get<1>(a)) > std::tie(std::get<0>(b), std::get<1>(b));
  };
  std::priority_queue<Event, std::vector<Event>, decltype(later)> events(later);
  RunResult r;
  int64_t next = 0;
  int spent = 0;
  auto start = [&](int worker, double now) {
    Running t{next, order[static_cast<size_t>(next) % order.size()], 0};
    ++next;
    ++r.trials;
    events.emplace(now + table.curves[t.config].seconds_per_epoch, worker, t);
  };
  for (int w = 0; w < o.workers; ++w) start(w, 0);
  while (spent < budget && !events.empty()) {
    auto [now, worker, t] = events.top();
    events.pop();
    ++spent;
    const Curve& c = table.curves[t.config];
    ++t.epoch;
    bool ended = false;
    if (t.epoch > static_cast<int>(c.val_loss.size())) {  // diverged: ladder-train exited with code 3
      if (rule) rule->Complete(t.number, std::nullopt);
      ended = true;
    } else {
      const double v = c.val_loss[static_cast<size_t>(t.epoch - 1)];
      r.best = std::min(r.best, v);
      if (rule) {
        TrialDecision d = rule->Report(t.number, t.epoch, v);
        if (d.stop() && t.epoch < table.epochs) ++r.stopped;
        ended = d.stop();
      }
      if (t.epoch >= table.epochs) ended = true;
      if (ended && rule) rule->Complete(t.number, v);
    }
    if (ended) {
      if (spent < budget) start(worker, now);
    } else {
      events.emplace(now + c.seconds_per_epoch, worker, t);
    }
  }
  return r;
}

struct Summary {
  double median = 0, q1 = 0, q3 = 0, trials = 0;
};

double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

Summary Summarize(const std::vector<double>& regrets, const std::vector<double>& trials) {
  Summary s;
  s.median = Quantile(regrets, 0.5);
  s.q1 = Quantile(regrets, 0.25);
  s.q3 = Quantile(regrets, 0.75);
  s.trials = std::accumulate(trials.begin(), trials.end(), 0.0) / static_cast<double>(trials.size());
  return s;
}

double Round(double v) { return std::round(v * 1e5) / 1e5; }

// Per live seed: the seconds until each stopping rule first found a val_loss at or below random search's final best
// of the same seed, over the seconds random took to find it (issue 39: the same answer sooner). A rule that never
// reached it counts as infinitely slow; the median is null when more than half did not.
void TimeToRandomsBest(const std::map<std::string, std::vector<ladder::bench::LiveResult>>& runs, int seeds,
                       nlohmann::json& out) {
  const auto& random = runs.at("random");
  for (const auto& [a, results] : runs) {
    if (a == "random") continue;
    std::vector<double> ratios;
    int reached = 0;
    for (int s = 0; s < seeds; ++s) {
      const double target = random[s].best;
      const double t_random = ladder::bench::SecondsToReach(random[s], target);
      const double t = ladder::bench::SecondsToReach(results[s], target);
      reached += std::isfinite(t) ? 1 : 0;
      ratios.push_back(std::isfinite(t) && t_random > 0 ? t / t_random : std::numeric_limits<double>::infinity());
    }
    std::sort(ratios.begin(), ratios.end());
    const double median = ratios.size() % 2 ? ratios[ratios.size() / 2]
                                            : (ratios[ratios.size() / 2 - 1] + ratios[ratios.size() / 2]) / 2;
    std::printf("%-10s reached random's final best in %d of %d seeds; time to it over random's: median %.3f [",
                a.c_str(), reached, seeds, median);
    for (size_t i = 0; i < ratios.size(); ++i) std::printf("%s%.3f", i ? ", " : "", ratios[i]);
    std::printf("]\n");
    out["live_" + a + "_time_to_random_best"] = std::isfinite(median) ? nlohmann::json(Round(median)) : nlohmann::json();
    out["live_" + a + "_reached_random_best"] = reached;
  }
}

std::string Cell(const Summary& s) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.4f [%.4f, %.4f]", s.median, s.q1, s.q3);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = Parse(argc, argv);
  const Table table = ReadTable(o.table);
  std::printf("table: %s: %zu configurations x %d epochs (%d diverged), best val_loss %.5f\n", o.table.c_str(),
              table.curves.size(), table.epochs, table.diverged, table.best);
  StoppingOptions shown = RuleFor("asha", o, table.epochs);
  std::printf("asha/hyperband: min_resource %g, max_resource %d, reduction_factor %g (rungs:", o.min_resource,
              table.epochs, o.eta);
  for (double rung : ladder::search::AshaRungs(shown)) std::printf(" %g", rung);
  std::printf("), hyperband brackets %d; median: grace_period %g, min_trials %d; %d trials at once, %d seeds\n",
              ladder::search::MaxBrackets(shown), shown.grace_period, shown.min_trials, o.workers, o.seeds);
  std::printf("regret = best val_loss found - table best; median [q1, q3] over seeds; trials = mean trials run\n\n");
  std::printf("%-8s", "budget");
  for (const auto& a : kAlgorithms) std::printf(" | %-30s %6s", a.c_str(), "trials");
  std::printf("\n");
  std::map<std::string, Summary> main_row;
  for (int budget : o.budgets) {
    std::printf("%-8d", budget);
    for (const auto& a : kAlgorithms) {
      std::vector<double> regrets, trials;
      for (int s = 0; s < o.seeds; ++s) {
        RunResult r = Simulate(table, a, o, budget, static_cast<uint64_t>(s));
        regrets.push_back(r.best - (o.live_workload == "digits" ? table.best : 0.0));  // cosmo: its best val_loss
        trials.push_back(r.trials);
      }
      Summary sum = Summarize(regrets, trials);
      if (budget == o.main_budget) main_row[a] = sum;
      std::printf(" | %-30s %6.1f", Cell(sum).c_str(), sum.trials);
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  nlohmann::json out;
  out["budget_epochs"] = o.main_budget;
  for (const auto& a : kAlgorithms) out[a + "_regret"] = Round(main_row[a].median);
  out["seeds"] = o.seeds;
  out["table_configs"] = table.curves.size();
  out["max_epochs"] = table.epochs;

  if (o.live) {
    std::printf("\nlive: ladder-train %s, %d epochs per trial at most, budget %d epochs, %d trials at once, %d seeds, "
                "%s starts\n",
                o.train.c_str(), table.epochs, o.live_budget, o.live_workers, o.live_seeds,
                o.live_warm ? "warm (forked from ladder-train --zygote)" : "cold");
    // As ladder-worker tells its trials how many ranks it may run on the node at once (its slots).
    setenv("LADDER_WORKER_SLOTS", std::to_string(o.live_workers).c_str(), 1);
    std::unique_ptr<WarmTrainer> warm;
    if (o.live_warm) warm = std::make_unique<WarmTrainer>(o.train);
    // cosmo: the 3D cnn (width 16) regressing 8^3 density cubes (issue 39's workload whose epoch takes over 0.2 s here), where
    // early stopping's gain is wall time; digits: the MLP on the shipped data (epochs of a few ms).
    const std::vector<std::string> workload =
        o.live_workload == "cosmo" ? std::vector<std::string>{"--data", "cosmo:512:8", "--model", "cnn", "--width", "16"}
                                   : std::vector<std::string>{};
    const LiveOptions live{o.train, o.live_budget, o.live_workers, workload};
    // Seed by seed, each algorithm in turn (the order rotating with the seed), so that a change in the machine's
    // load during the run falls on every algorithm alike.
    std::map<std::string, std::vector<LiveResult>> runs;
    for (int s = 0; s < o.live_seeds; ++s) {
      for (size_t i = 0; i < kAlgorithms.size(); ++i) {
        const std::string& a = kAlgorithms[(i + static_cast<size_t>(s)) % kAlgorithms.size()];
        runs[a].push_back(
            RunLive(RuleFor(a, o, table.epochs), live, table.epochs, static_cast<uint64_t>(s), warm.get()));
      }
    }
    std::printf("%-10s | %-30s | %6s | %7s | %s\n", "algorithm",
                o.live_workload == "digits" ? "regret median [q1, q3]" : "best val_loss median [q1, q3]", "trials", "seconds",
                "per trial: start, set-up + first epoch, stop (ms)");
    for (const auto& a : kAlgorithms) {
      std::vector<double> regrets, trials;
      double seconds = 0, spawn = 0, first = 0, reaped = 0;
      for (const LiveResult& r : runs[a]) {
        regrets.push_back(r.best - (o.live_workload == "digits" ? table.best : 0.0));  // cosmo: its best val_loss
        trials.push_back(r.trials);
        seconds += r.seconds;
        spawn += r.spawn_s;
        first += r.first_line_s;
        reaped += r.reap_s;
      }
      Summary sum = Summarize(regrets, trials);
      const double n = sum.trials * o.live_seeds;
      std::printf("%-10s | %-30s | %6.1f | %7.1f | %.1f, %.1f, %.1f\n", a.c_str(), Cell(sum).c_str(), sum.trials,
                  seconds, 1e3 * spawn / n, 1e3 * first / n, 1e3 * reaped / n);
      std::fflush(stdout);
      out["live_" + a + "_regret"] = Round(sum.median);
      out["live_" + a + "_seconds"] = std::round(seconds * 10) / 10;
    }
    TimeToRandomsBest(runs, o.live_seeds, out);
    out["live_workload"] = o.live_workload;
    out["live_budget_epochs"] = o.live_budget;
    out["live_start"] = o.live_warm ? "warm" : "cold";
  }
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
