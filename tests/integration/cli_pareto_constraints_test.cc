// Constraints with several objectives end to end (issue 42), against a real ladder-server and ladder-worker on
// 127.0.0.1: trials print two objectives (loss = x, cost = 1 - x + y) and a memory figure (mem = 1 - x: x < 0.5
// breaks `mem <= 0.5`, right where the losses are lowest). The coordinator's Pareto front (ladder trials --pareto,
// the trials' marks) is the front of the feasible trials only, so a feasible trial that only infeasible ones
// dominate is on it; promote refuses an infeasible pick naming the constraint; multi-objective TPE is told the
// signed values live and again by a restarted coordinator: each suggestion is the one a sampler told the same
// constrained trials makes (and not the one it makes told the objectives only). A search with no feasible trial
// fails, as with one objective. The dashboard's Pareto view, in Debian's headless Chromium, marks exactly the
// trials the API says are infeasible.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "search/multiobjective/mo_sampler.h"
#include "search/multiobjective/pareto.h"
#include "search/spec/spec_reader.h"
#include "tests/integration/local_cluster.h"
#include "tests/integration/system_support.h"
#include "tests/support/headless_chromium.h"

namespace ladder {
namespace {

// Trials 0-4 are known points: 0 (0.1, 0.9) and 1 (0.3, 0.8) infeasible, both dominating trial 4 (0.55, 0.95);
// 2 (0.6, 0.6) and 3 (0.8, 0.2) feasible. 5-7 are TPE's; trial 6 waits at the `release` gate (testing::Gate: a
// lock, no polling) so that the coordinator can
// be restarted while it runs (trial 7 is then asked of the sampler the restart rebuilt).
std::string SpecText(const std::filesystem::path& release) {
  return R"(name: memtrade
objectives: [{metric: loss, mode: min}, {metric: cost, mode: min}]
constraints: [{metric: mem, max: 0.5}]
budget: {max_trials: 8, parallelism: 1}
sampler: {type: tpe, n_startup_trials: 4, seed: 5}
command: [/bin/sh, -c, 'if [ {trial_number} = 6 ]; then flock -s )" + release.string() + R"( true; fi; awk -v x={x} -v y={y} "BEGIN {{ printf \"{{\\\"loss\\\": %.17g, \\\"cost\\\": %.17g, \\\"mem\\\": %.17g}}\\n\", x, 1 - x + y, 1 - x }}"']
space:
  x: {type: float, low: 0, high: 1}
  y: {type: float, low: 0, high: 1}
enqueue: [{x: 0.1, y: 0.0}, {x: 0.3, y: 0.1}, {x: 0.6, y: 0.2}, {x: 0.8, y: 0.0}, {x: 0.55, y: 0.5}]
)";
}

struct Told {
  search::Params params;
  std::vector<double> objectives;
  std::vector<double> constraints;
};

// What a multi-objective sampler built from the spec suggests for trial `n` once told trials 0..n-1 (with or
// without their constraint values).
search::Params Suggest(const search::SearchSpec& spec, const std::vector<Told>& told, int n, bool constrained) {
  std::string error;
  auto sampler = search::MakeMultiObjectiveSampler(spec, {{false, false}}, &error);
  EXPECT_TRUE(sampler) << error;
  for (int i = 0; i < n; ++i) {
    const Told& t = told[static_cast<size_t>(i)];
    if (constrained) {
      sampler->TellConstrained(i, t.params, t.objectives, t.constraints);
    } else {
      sampler->Tell(i, t.params, t.objectives);
    }
  }
  return *sampler->Ask(n);
}

// The numbers of the trials no other trial among `among` dominates.
std::set<int> FrontOf(const std::vector<Told>& told, const std::set<int>& among) {
  std::set<int> front;
  for (int i : among) {
    bool dominated = false;
    for (int j : among) dominated = dominated || search::Dominates(told[size_t(j)].objectives, told[size_t(i)].objectives);
    if (!dominated) front.insert(i);
  }
  return front;
}

TEST(CliParetoConstraints, TheFrontHoldsFeasibleTrialsOnlyAndTheSamplerIsToldAgainAfterARestart) {
  testing::TempDir dir("cli-pareto-constraints");
  const std::string address = "127.0.0.1:" + std::to_string(testing::FreePort());
  testing::Child server, worker;
  auto start_server = [&] {
    testing::Spawn(&server, {testing::BinDir() + "/ladder-server", "--listen", address, "--db",
                             (dir / "ladder.db").string(), "--no-token"}, true);
    return testing::ReadListenAddress(server) == address;
  };
  ASSERT_TRUE(start_server());
  testing::Spawn(&worker, {testing::BinDir() + "/ladder-worker", "--server", address, "--node-id", "a", "--slots",
                           "1", "--trial-dir", (dir / "trials").string()}, false);
  auto ladder = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {testing::BinDir() + "/ladder", "--server", address});
    return testing::RunCommand(args, dir);
  };
  testing::Gate gate(dir / "release");  // trial waits here until the test opens it
  const std::string spec_text = SpecText(dir / "release");
  std::ofstream(dir / "memtrade.yaml") << spec_text;
  auto validate = ladder({"search", "validate", "memtrade.yaml", "--no-command-check"});
  EXPECT_NE(validate.out.find("objectives min loss min cost subject to mem <= 0.5;"), std::string::npos)
      << validate.out << validate.err;
  auto start = ladder({"search", "start", "memtrade.yaml"});
  ASSERT_EQ(start.exit_code, 0) << start.out << start.err;
  // Waits (generous deadline) until `done` holds of the trials as `ladder trials 1 --json` lists them.
  auto trials_when = [&](auto done) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    nlohmann::json j;
    while (std::chrono::steady_clock::now() < give_up) {
      auto r = ladder({"trials", "1", "--json"});
      if (r.exit_code == 0) {
        j = nlohmann::json::parse(r.out)["trials"];
        if (done(j)) return j;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // polling interval, not a synchronisation
    }
    ADD_FAILURE() << "timed out; last list: " << j.dump();
    return j;
  };
  trials_when([&](const nlohmann::json& t) {
    for (const auto& x : t) {
      if (x["number"].get<int>() == 6 && x["state"] == "TRIAL_RUNNING") return true;
    }
    return false;
  });
  server.Kill(SIGTERM);  // trial 6 runs on while the coordinator is away
  ASSERT_TRUE(start_server());
  gate.Open();
  const nlohmann::json trials = trials_when([&](const nlohmann::json& t) {
    int completed = 0;
    for (const auto& x : t) completed += x["state"] == "TRIAL_COMPLETED" ? 1 : 0;
    return completed == 8;
  });
  ASSERT_EQ(trials.size(), 8u);

  std::vector<Told> told(8);
  std::set<int> all, feasible, marked;
  for (const auto& t : trials) {
    const int n = t["number"].get<int>();
    Told& o = told[static_cast<size_t>(n)];
    const double x = t["params"]["x"]["float_value"].get<double>();
    o.params["x"] = x;
    o.params["y"] = t["params"]["y"]["float_value"].get<double>();
    ASSERT_EQ(t["objectives"].size(), 2u) << t.dump();
    o.objectives = {t["objectives"][0].get<double>(), t["objectives"][1].get<double>()};
    ASSERT_EQ(t["constraints"].size(), 1u) << t.dump();
    o.constraints = {t["constraints"][0].get<double>()};
    EXPECT_DOUBLE_EQ(o.constraints[0], (1 - x) - 0.5) << t.dump();
    EXPECT_EQ(t["infeasible"].get<bool>(), 1 - x > 0.5) << t.dump();
    all.insert(n);
    if (!t["infeasible"].get<bool>()) feasible.insert(n);
    if (t["pareto"].get<bool>()) marked.insert(n);
  }

  // The front is the feasible trials' front: trial 4, dominated only by the infeasible 0 and 1, is on it.
  const std::set<int> want = FrontOf(told, feasible);
  EXPECT_EQ(want.count(4), 1u);
  EXPECT_EQ(FrontOf(told, all).count(4), 0u) << "without constraints trial 4 would be off the front (no check)";
  EXPECT_EQ(marked, want);
  auto pareto = ladder({"trials", "1", "--pareto", "--json"});
  ASSERT_EQ(pareto.exit_code, 0) << pareto.err;
  std::set<int> listed;
  const nlohmann::json front = nlohmann::json::parse(pareto.out);
  for (const auto& p : front["front"]) listed.insert(p["trial"].get<int>());
  EXPECT_EQ(listed, want) << pareto.out;
  auto shown = ladder({"trials", "1"});
  EXPECT_NE(shown.out.find("constraints: mem <= 0.5; "), std::string::npos) << shown.out;

  // TPE was told the signed values: trials 5 and 6 asked live, trial 7 by the sampler the restart rebuilt.
  auto parsed = search::ParseSpec(spec_text, "memtrade.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.errors.front().ToString();
  for (int n : {5, 6, 7}) {
    const search::Params want_params = Suggest(*parsed.spec, told, n, true);
    EXPECT_EQ(told[static_cast<size_t>(n)].params, want_params) << "trial " << n;
    EXPECT_NE(Suggest(*parsed.spec, told, n, false), want_params)
        << "trial " << n << ": told without constraints the sampler would suggest the same (the check says nothing)";
  }

  auto refused = ladder({"promote", "1", "--pick", "0", "--dry-run"});
  EXPECT_EQ(refused.exit_code, 2) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("--pick 0: trial 0 is infeasible: it broke mem 0.9 > max 0.5 (search 1's constraints)"),
            std::string::npos)
      << refused.err;
  worker.Kill(SIGTERM);
  server.Kill(SIGTERM);
}

// Several objectives whose completed trials all broke the constraint: the search fails "no feasible trial" and its
// front is empty.
TEST(CliParetoConstraints, NoFeasibleTrialFailsTheSearchWithAnEmptyFront) {
  testing::TempDir dir("pareto-constraints-none");
  testing::LocalCluster cluster;
  ASSERT_NO_FATAL_FAILURE(cluster.Start(dir, /*dashboard=*/false, "r1"));
  std::ofstream(dir / "none.yaml") << R"(name: none
objectives: [{metric: loss, mode: min}, {metric: cost, mode: min}]
constraints: [{metric: mem, max: 0.05}]
budget: {max_trials: 2}
sampler: random
command: [/bin/sh, -c, 'awk -v x={x} "BEGIN {{ printf \"{{\\\"loss\\\": %g, \\\"cost\\\": %g, \\\"mem\\\": %g}}\\n\", x, 1 - x, 1 - x }}"']
space:
  x: {type: float, low: 0, high: 1}
enqueue: [{x: 0.3}, {x: 0.7}]
)";
  auto none = testing::RunCommand(cluster.Ladder({"search", "start", "none.yaml", "--wait"}), dir);
  EXPECT_NE(none.exit_code, 0) << none.out << none.err;
  auto shown = testing::RunCommand(cluster.Ladder({"trials", "1"}), dir);
  EXPECT_NE(shown.out.find("error: no feasible trial: each of the 2 completed trials broke a constraint"),
            std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("Pareto front: 0 trials"), std::string::npos) << shown.out;
  auto front = testing::RunCommand(cluster.Ladder({"trials", "1", "--pareto", "--json"}), dir);
  ASSERT_EQ(front.exit_code, 0) << front.err;
  EXPECT_TRUE(nlohmann::json::parse(front.out)["front"].empty()) << front.out;
}

// The web dashboard's Pareto view draws the infeasible trials apart (view.points[i][4]) and the coordinator's front
// of the feasible ones, checked against the API's trials and search.
TEST(CliParetoConstraints, TheDashboardsParetoViewMarksTheInfeasibleTrials) {
  if (!testing::HeadlessChromium::Available()) GTEST_SKIP() << "chromium is not installed (scripts/bootstrap.sh)";
  testing::TempDir dir("pareto-constraints-dashboard");
  testing::LocalCluster cluster;
  ASSERT_NO_FATAL_FAILURE(cluster.Start(dir, /*dashboard=*/true, "r1"));
  std::ofstream(dir / "memtrade.yaml") << R"(name: memtrade
objectives: [{metric: loss, mode: min}, {metric: cost, mode: min}]
constraints: [{metric: mem, max: 0.5}]
budget: {max_trials: 5, parallelism: 2}
sampler: random
command: [/bin/sh, -c, 'awk -v x={x} -v y={y} "BEGIN {{ printf \"{{\\\"loss\\\": %g, \\\"cost\\\": %g, \\\"mem\\\": %g}}\\n\", x, 1 - x + y, 1 - x }}"']
space:
  x: {type: float, low: 0, high: 1}
  y: {type: float, low: 0, high: 1}
enqueue: [{x: 0.1, y: 0.0}, {x: 0.3, y: 0.1}, {x: 0.6, y: 0.2}, {x: 0.8, y: 0.0}, {x: 0.55, y: 0.5}]
)";
  auto done = testing::RunCommand(cluster.Ladder({"search", "start", "memtrade.yaml", "--wait"}), dir);
  ASSERT_EQ(done.exit_code, 0) << done.out << done.err;
  testing::HeadlessChromium browser(dir, "1400,2600");
  const std::string url = "http://127.0.0.1:" + std::to_string(cluster.http_port);
  browser.Open(url + "/");
  browser.Navigate(url + "/login?token=" + cluster.token + "&next=%23/search/1");
  ASSERT_TRUE(browser.WaitFor("document.body.dataset.ready === '#/search/1'")) << browser.Eval("document.body.innerHTML");
  ASSERT_TRUE(browser.WaitFor("!!(document.querySelector('#pareto').view)")) << browser.Eval("document.body.innerHTML");
  auto search = browser.Eval("fetch('/api/searches/1').then(r => r.json())")["search"];
  auto trials = browser.Eval("fetch('/api/searches/1/trials?view=table').then(r => r.json())")["trials"];
  auto view = browser.Eval("document.querySelector('#pareto').view");
  ASSERT_EQ(view["points"].size(), 5u) << view.dump();
  int infeasible = 0;
  for (const auto& t : trials) {
    auto p = std::find_if(view["points"].begin(), view["points"].end(), [&](const auto& q) { return q[2] == t["id"]; });
    ASSERT_NE(p, view["points"].end()) << t.dump();
    EXPECT_EQ((*p)[4].get<bool>(), t.value("infeasible", false)) << t.dump();
    EXPECT_EQ((*p)[3].get<bool>(), t.value("pareto", false)) << t.dump();
    EXPECT_FALSE((*p)[3].get<bool>() && (*p)[4].get<bool>()) << "an infeasible trial on the front: " << t.dump();
    infeasible += t.value("infeasible", false) ? 1 : 0;
  }
  EXPECT_EQ(infeasible, 2) << "x = 0.1 and 0.3 break mem <= 0.5";
  ASSERT_EQ(search["pareto_front"].size(), 3u) << search.dump();
  EXPECT_NE(browser.Eval("document.querySelector('#pareto .legend').textContent").get<std::string>().find(
                "3 of 5 completed trials on the front (green), 2 infeasible (red: never on the front)"),
            std::string::npos);
}

}  // namespace
}  // namespace ladder
