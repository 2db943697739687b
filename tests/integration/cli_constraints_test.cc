// Constraints end to end (issue 42), as a user runs them against a real ladder-server and ladder-worker on
// 127.0.0.1: trials print a loss and a memory figure (mem = 1 - x, loss = x: the lowest losses break `mem <= 0.5`);
// the API and the CLI mark exactly the trials that broke it, the best trial is the best feasible one, promote
// refuses an infeasible trial naming the constraint, and TPE is told the signed values both live and when a
// restarted coordinator tells it the stored trials again: each suggestion is the one a sampler told the same
// constrained trials makes (and not the one it makes told them without constraints).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "search/samplers/sampler.h"
#include "search/spec/spec_reader.h"
#include "tests/integration/local_cluster.h"
#include "tests/integration/system_support.h"
#include "tests/integration/tmux_support.h"
#include "tests/support/headless_chromium.h"

namespace ladder {
namespace {

// Trials 0-3 are known points (two infeasible: x < 0.5), 4-6 TPE's; trial 5 waits at the `release` gate
// (testing::Gate: a lock, no polling) so that the coordinator can be restarted while it runs (trial 6 is then
// asked of the sampler the restart rebuilt).
std::string SpecText(const std::filesystem::path& release) {
  return R"(name: mem
objective: {metric: loss, mode: min}
constraints: [{metric: mem, max: 0.5}]
budget: {max_trials: 7, parallelism: 1}
sampler: {type: tpe, n_startup_trials: 4, seed: 11}
command: [/bin/sh, -c, 'if [ {trial_number} = 5 ]; then flock -s )" + release.string() + R"( true; fi; awk -v x={x} "BEGIN {{ printf \"{{\\\"loss\\\": %.17g, \\\"mem\\\": %.17g}}\\n\", x, 1 - x }}"']
space:
  x: {type: float, low: 0, high: 1}
enqueue: [{x: 0.1}, {x: 0.3}, {x: 0.7}, {x: 0.9}]
)";
}

struct Told {
  search::Params params;
  double objective = 0;
  std::vector<double> constraints;
};

// What a sampler built from the spec suggests for trial `n` once told trials 0..n-1 (with or without their
// constraint values).
double Suggest(const search::SearchSpec& spec, const std::vector<Told>& told, int n, bool constrained) {
  auto sampler = search::MakeSampler(spec);
  for (int i = 0; i < n; ++i) {
    const Told& t = told[static_cast<size_t>(i)];
    if (constrained) {
      sampler->TellConstrained(i, t.params, t.objective, t.constraints);
    } else {
      sampler->Tell(i, t.params, t.objective);
    }
  }
  return std::get<double>(sampler->Ask(n)->at("x"));
}

TEST(CliConstraints, InfeasibleTrialsAreMarkedNeverBestAndTheSamplerIsToldAgainAfterARestart) {
  testing::TempDir dir("cli-constraints");
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
  std::ofstream(dir / "mem.yaml") << spec_text;
  auto validate = ladder({"search", "validate", "mem.yaml", "--no-command-check"});
  EXPECT_NE(validate.out.find("minimize loss subject to mem <= 0.5;"), std::string::npos) << validate.out;
  auto start = ladder({"search", "start", "mem.yaml"});
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
  auto state_of = [](const nlohmann::json& trials, int number) {
    for (const auto& t : trials) {
      if (t["number"].get<int>() == number) return t["state"].get<std::string>();
    }
    return std::string();
  };
  trials_when([&](const nlohmann::json& t) { return state_of(t, 5) == "TRIAL_RUNNING"; });
  server.Kill(SIGTERM);  // trial 5 runs on while the coordinator is away
  ASSERT_TRUE(start_server());
  gate.Open();
  const nlohmann::json trials = trials_when([&](const nlohmann::json& t) {
    int completed = 0;
    for (const auto& x : t) completed += x["state"] == "TRIAL_COMPLETED" ? 1 : 0;
    return completed == 7;
  });
  ASSERT_EQ(trials.size(), 7u);

  std::vector<Told> told(7);
  for (const auto& t : trials) {
    const int n = t["number"].get<int>();
    const double x = t["params"]["x"]["float_value"].get<double>();
    Told& o = told[static_cast<size_t>(n)];
    o.params["x"] = x;
    o.objective = t["objective"].get<double>();
    ASSERT_EQ(t["constraints"].size(), 1u) << t.dump();
    o.constraints = {t["constraints"][0].get<double>()};
    // The mark is exactly the broken constraint: mem = 1 - x above 0.5.
    EXPECT_DOUBLE_EQ(o.constraints[0], (1 - x) - 0.5) << t.dump();
    EXPECT_EQ(t["infeasible"].get<bool>(), 1 - x > 0.5) << t.dump();
  }
  EXPECT_TRUE(told[0].constraints[0] > 0 && told[1].constraints[0] > 0) << "x = 0.1 and 0.3 break mem <= 0.5";

  // TPE was told the signed values: trials 4 and 5 asked live, trial 6 by the sampler the restart rebuilt.
  auto parsed = search::ParseSpec(spec_text, "mem.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.errors.front().ToString();
  for (int n : {4, 5, 6}) {
    const double want = Suggest(*parsed.spec, told, n, true);
    EXPECT_EQ(std::get<double>(told[static_cast<size_t>(n)].params["x"]), want) << "trial " << n;
    EXPECT_NE(Suggest(*parsed.spec, told, n, false), want)
        << "trial " << n << ": told without constraints the sampler would suggest the same (the check says nothing)";
  }

  // The best trial is the best feasible one, below which an infeasible trial had a lower loss.
  int best = -1;
  for (int n = 0; n < 7; ++n) {
    const Told& o = told[static_cast<size_t>(n)];
    if (o.constraints[0] <= 0 && (best < 0 || o.objective < told[static_cast<size_t>(best)].objective)) best = n;
  }
  ASSERT_GE(best, 0);
  EXPECT_LT(told[0].objective, told[static_cast<size_t>(best)].objective);
  auto show = ladder({"trials", "1"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("(trial " + std::to_string(best) + ", the best feasible)"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("constraints: mem <= 0.5; "), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("infeasible: mem 0.9 > max 0.5"), std::string::npos) << "trial 0's note\n" << show.out;
  auto leader = ladder({"trials", "1", "--top", "1", "--json"});
  ASSERT_EQ(leader.exit_code, 0) << leader.err;
  EXPECT_EQ(nlohmann::json::parse(leader.out)["trials"][0]["number"].get<int>(), best) << leader.out;

  auto refused = ladder({"promote", "1", "--pick", "0", "--dry-run"});
  EXPECT_EQ(refused.exit_code, 2) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("--pick 0: trial 0 is infeasible: it broke mem 0.9 > max 0.5 (search 1's constraints)"),
            std::string::npos)
      << refused.err;
  worker.Kill(SIGTERM);
  server.Kill(SIGTERM);
}

// A search whose completed trials all broke a constraint fails, saying so; a trial that never reports a
// constrained metric fails, naming it (nothing says the constraint held).
TEST(CliConstraints, NoFeasibleTrialFailsTheSearchAndAnUnreportedMetricFailsTheTrial) {
  testing::TempDir dir("constraints-none");
  testing::LocalCluster cluster;
  ASSERT_NO_FATAL_FAILURE(cluster.Start(dir, /*dashboard=*/false, "r1"));
  const std::string head = R"(objective: {metric: loss, mode: min}
sampler: random
command: [/bin/sh, -c, 'awk -v x={x} "BEGIN {{ printf \"{{\\\"loss\\\": %g, \\\"mem\\\": %g}}\\n\", x, 1 - x }}"']
space:
  x: {type: float, low: 0, high: 1}
)";
  std::ofstream(dir / "none.yaml") << "name: none\n" << head
                                   << "constraints: [{metric: mem, max: 0.05}]\nbudget: {max_trials: 2}\n"
                                      "enqueue: [{x: 0.3}, {x: 0.7}]\n";
  auto none = testing::RunCommand(cluster.Ladder({"search", "start", "none.yaml", "--wait"}), dir);
  EXPECT_NE(none.exit_code, 0) << none.out << none.err;
  auto shown = testing::RunCommand(cluster.Ladder({"trials", "1"}), dir);
  EXPECT_NE(shown.out.find("error: no feasible trial: each of the 2 completed trials broke a constraint"),
            std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("constraints: mem <= 0.05; 2 of 2 completed trials infeasible: no feasible trial"),
            std::string::npos) << shown.out;
  std::ofstream(dir / "unreported.yaml") << "name: unreported\n" << head
                                         << "constraints: [{metric: peak_mem_gb, max: 70}]\n"
                                            "budget: {max_trials: 1, max_failed_trials: 1}\n";
  auto unreported = testing::RunCommand(cluster.Ladder({"search", "start", "unreported.yaml", "--wait"}), dir);
  EXPECT_NE(unreported.exit_code, 0) << unreported.out << unreported.err;
  auto listed = testing::RunCommand(cluster.Ladder({"--json", "trials", "2"}), dir);
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const auto trial = nlohmann::json::parse(listed.out)["trials"][0];
  EXPECT_EQ(trial["state"], "TRIAL_FAILED") << trial.dump();
  EXPECT_EQ(trial["error"].get<std::string>().rfind("exited 0 without reporting the constrained metric 'peak_mem_gb'",
                                                    0),
            0u)
      << trial.dump();
}

// The dashboard's trial table in Debian's headless Chromium marks exactly the trials the API says are infeasible,
// and names the constraint each broke.
TEST(CliConstraints, TheDashboardsTrialTableMarksTheInfeasibleTrials) {
  if (!testing::HeadlessChromium::Available()) GTEST_SKIP() << "chromium is not installed (scripts/bootstrap.sh)";
  testing::TempDir dir("constraints-dashboard");
  testing::LocalCluster cluster;
  ASSERT_NO_FATAL_FAILURE(cluster.Start(dir, /*dashboard=*/true, "r1"));
  std::ofstream(dir / "mem.yaml") << R"(name: mem
objective: {metric: loss, mode: min}
constraints: [{metric: mem, max: 0.5}]
budget: {max_trials: 4, parallelism: 2}
sampler: random
command: [/bin/sh, -c, 'awk -v x={x} "BEGIN {{ printf \"{{\\\"loss\\\": %g, \\\"mem\\\": %g}}\\n\", x, 1 - x }}"']
space:
  x: {type: float, low: 0, high: 1}
enqueue: [{x: 0.1}, {x: 0.3}, {x: 0.7}, {x: 0.9}]
)";
  auto done = testing::RunCommand(cluster.Ladder({"search", "start", "mem.yaml", "--wait"}), dir);
  ASSERT_EQ(done.exit_code, 0) << done.out << done.err;
  std::vector<std::string> want;
  const auto listed = testing::RunCommand(cluster.Ladder({"--json", "trials", "1"}), dir);
  const nlohmann::json trials = nlohmann::json::parse(listed.out);
  for (const auto& t : trials["trials"]) {
    if (t["infeasible"].get<bool>()) want.push_back(t["id"].get<std::string>());
  }
  std::sort(want.begin(), want.end());
  ASSERT_EQ(want.size(), 2u) << "x = 0.1 and 0.3 break mem <= 0.5\n" << listed.out;
  testing::HeadlessChromium browser(dir);
  const std::string url = "http://127.0.0.1:" + std::to_string(cluster.http_port);
  browser.Open(url + "/");
  browser.Navigate(url + "/login?token=" + cluster.token + "&next=%23/search/1");
  ASSERT_TRUE(browser.WaitFor("document.body.dataset.ready === '#/search/1'")) << browser.Eval("document.body.innerHTML");
  auto tagged = browser.Eval("[...document.querySelectorAll('#trials tbody tr')].filter(r => "
                             "r.querySelector('span.infeasible')).map(r => r.dataset.id).sort()");
  EXPECT_EQ(tagged.get<std::vector<std::string>>(), want);
  EXPECT_EQ(browser.Eval("[...document.querySelectorAll('#trials tbody tr')].filter(r => "
                         "r.querySelector('span.infeasible')).map(r => r.querySelector('td.note').innerText).sort()"),
            nlohmann::json({"broke mem 0.7 > max 0.5", "broke mem 0.9 > max 0.5"}));

  // ladder watch in tmux: the rows that say [infeasible] are exactly those trials.
  if (!std::filesystem::exists("/usr/bin/tmux")) return;
  Tmux tmux(dir);
  std::string cmd = "env TERM=screen";
  for (const auto& a : cluster.Ladder({"watch", "1"})) cmd += " '" + a + "'";
  ASSERT_EQ(tmux.Run({"new-session", "-d", "-s", "w", "-x", "160", "-y", "40", cmd}).exit_code, 0);
  auto marked = [](const std::string& screen) {
    std::vector<std::string> ids;
    std::istringstream in(screen);
    std::smatch m;
    for (std::string line; std::getline(in, line);) {
      if (std::regex_search(line, m, std::regex("^\\s+(\\d+)\\s+\\d+\\s+completed\\s.*\\[infeasible\\]"))) {
        ids.push_back(m[1]);
      }
    }
    std::sort(ids.begin(), ids.end());
    return ids;
  };
  const std::string screen = tmux.WaitFor([&](const std::string& s) { return marked(s) == want; });
  EXPECT_EQ(marked(screen), want) << screen;
  tmux.Run({"send-keys", "-t", "w", "q"});
}

}  // namespace
}  // namespace ladder
