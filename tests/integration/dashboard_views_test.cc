// The search page's distribution, contour and timeline views (issue 42) in Debian's headless Chromium: each is
// painted, and what it drew is the API's trials — the empirical distribution's steps are the objective values, the
// contour's points the trials' two parameters and objective, the timeline's bars each trial's nodes, start and end;
// a straggler is marked, and a requeued trial is hatched with its attempts.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/integration/local_cluster.h"
#include "tests/integration/trade_spec.h"
#include "tests/support/headless_chromium.h"

namespace ladder {
namespace {

// Six trials, two at a time; the score is the parameter a. Trial 5 runs 4 s, the others about as long as a shell
// takes to echo: it is the straggler (over twice the median completed trial's time, and over a second longer; a
// trial of 11 ms beside a median of 5 ms is not one: the suite saw that once).
constexpr const char* kViews = R"(name: views
objective: {metric: score, mode: max}
budget: {max_trials: 6, parallelism: 2}
command: [/bin/sh, -c, 'if [ {trial_number} -eq 5 ]; then sleep 4; fi; echo "{{\"step\": 1, \"score\": {a}}}"']
space:
  a: {type: float, low: 0, high: 1}
  b: {type: float, low: 0.001, high: 10, log: true}
)";

// Non-blank pixels of the first canvas under a selector: the view painted something.
std::string Painted(const std::string& selector) {
  return "(c => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0;"
         " for (let i = 3; i < d.length; i += 4) n += d[i] > 0; return n; })(document.querySelector('" +
         selector + " canvas'))";
}

class DashboardViewsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::HeadlessChromium::Available()) GTEST_SKIP() << "chromium is not installed (scripts/bootstrap.sh)";
    ASSERT_NO_FATAL_FAILURE(cluster_.Start(dir_, /*dashboard=*/true, "r1"));
    const char* out = std::getenv("LADDER_TEST_OUTPUT_DIR");
    shots_ = std::filesystem::path(out ? out : LADDER_TEST_BIN_DIR "/../tests/output") / "dashboard";
    std::filesystem::create_directories(shots_);
  }
  std::string Url(const std::string& path) { return "http://127.0.0.1:" + std::to_string(cluster_.http_port) + path; }

  testing::TempDir dir_{"dashboard-views"};
  testing::LocalCluster cluster_;
  std::filesystem::path shots_;
};

TEST_F(DashboardViewsTest, TheDistributionContourAndTimelineDrawTheApisTrials) {
  std::ofstream(dir_ / "views.yaml") << kViews;
  auto done = testing::RunCommand(cluster_.Ladder({"search", "start", "views.yaml", "--wait"}), dir_);
  ASSERT_EQ(done.exit_code, 0) << done.out << done.err;
  testing::HeadlessChromium browser(dir_, "1400,2600");
  browser.Open(Url("/"));
  browser.Navigate(Url("/login?token=" + cluster_.token + "&next=%23/search/1"));
  ASSERT_TRUE(browser.WaitFor("document.body.dataset.ready === '#/search/1'")) << browser.Eval("document.body.innerHTML");
  ASSERT_TRUE(browser.WaitFor("!!(document.querySelector('#timeline').view)"));
  auto api = browser.Eval("fetch('/api/searches/1/trials?view=table&page_size=100').then(r => r.json())")["trials"];
  ASSERT_EQ(api.size(), 6u) << api.dump();

  // The distribution: a step at every objective value, in order, rising by 1/6.
  std::vector<double> objectives;
  for (const auto& t : api) objectives.push_back(t["objective"].get<double>());
  std::sort(objectives.begin(), objectives.end());
  auto edf = browser.Eval("document.querySelector('#edf').view");
  ASSERT_EQ(edf["x"].size(), 6u) << edf.dump();
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_DOUBLE_EQ(edf["x"][i].get<double>(), objectives[i]);
    EXPECT_DOUBLE_EQ(edf["y"][i].get<double>(), (i + 1) / 6.0);
  }
  EXPECT_EQ(browser.Eval("document.querySelector('#edf .u-title').textContent"), "empirical distribution: score");

  // The contour: a and b of every trial, coloured by its score; b on a log axis (it spans more than 2 decades).
  auto contour = browser.Eval("document.querySelector('#contour').view");
  ASSERT_EQ(contour["points"].size(), 6u) << contour.dump();
  EXPECT_EQ(contour["x"], "a");
  EXPECT_EQ(contour["y"], "b");
  for (const auto& t : api) {
    const double a = t["params"]["a"]["float_value"], b = t["params"]["b"]["float_value"];
    const bool found = std::any_of(contour["points"].begin(), contour["points"].end(), [&](const auto& p) {
      return p[0].template get<double>() == a && p[1].template get<double>() == b &&
             p[2].template get<double>() == t["objective"].template get<double>();
    });
    EXPECT_TRUE(found) << "trial " << t["id"] << " not among " << contour["points"].dump();
  }
  EXPECT_GT(browser.Eval(Painted("#contour")).get<int>(), 10000);

  // The timeline: one bar per trial on its node and slot (two slots: two rows), from its start to its end; trial 5
  // the straggler, alone.
  auto timeline = browser.Eval("document.querySelector('#timeline').view");
  ASSERT_EQ(timeline["bars"].size(), 6u) << timeline.dump();
  for (const auto& t : api) {
    auto bar = std::find_if(timeline["bars"].begin(), timeline["bars"].end(),
                            [&](const auto& b) { return b["trial"] == t["id"]; });
    ASSERT_NE(bar, timeline["bars"].end()) << t.dump();
    EXPECT_EQ((*bar)["node"], t["placement"][0]["node_id"]);
    EXPECT_EQ((*bar)["slot"], t["placement"][0].value("slots", nlohmann::json::array({0}))[0]);
    EXPECT_DOUBLE_EQ((*bar)["t0"].get<double>(), t["started_unix"].get<double>());
    EXPECT_DOUBLE_EQ((*bar)["t1"].get<double>(), t["finished_unix"].get<double>());
    EXPECT_EQ((*bar)["state"], "COMPLETED");
    EXPECT_EQ((*bar)["straggler"].get<bool>(), t.value("number", 0) == 5) << t.dump() << timeline["median"];
  }
  EXPECT_EQ(timeline["rows"], nlohmann::json::array({"n1 s0", "n1 s1"})) << timeline.dump();
  EXPECT_GT(browser.Eval(Painted("#timeline")).get<int>(), 1000);
  EXPECT_EQ(browser.Eval("document.documentElement.scrollWidth <= window.innerWidth"), true) << "the timeline fits";
  browser.Screenshot(shots_ / "views.png");

  // A requeued trial (attempt 2, after its node was lost) is hatched and counted: drawn from a trial as the API
  // gives one, with the page's own drawing code.
  auto requeued = browser.Eval(
      "(() => { const t = {id: '99', number: 9, state: 'TRIAL_RUNNING', attempt: 2, started_unix: Date.now() / 1000 - 60,"
      " placement: [{node_id: 'n7'}, {node_id: 'n8'}]};"
      " drawTimeline({trials: new Map([['99', t]])});"
      " return document.querySelector('#timeline').view.bars; })()");
  ASSERT_EQ(requeued.size(), 2u) << requeued.dump();
  for (const auto& b : requeued) EXPECT_EQ(b["attempt"], 2);
  EXPECT_EQ(requeued[0]["row"], "n7 s0");
  EXPECT_EQ(requeued[1]["row"], "n8 s0");
  EXPECT_NE(browser.Eval("document.querySelector('#timeline .legend').textContent").get<std::string>().find("requeued"),
            std::string::npos);
}

// The Pareto view draws every completed trial at its two objectives and the coordinator's front (kTradeSpec: three
// trials on it, one dominated); a search with one objective does not show it.
TEST_F(DashboardViewsTest, TheParetoViewDrawsTheTrialsAndTheCoordinatorsFront) {
  std::ofstream(dir_ / "trade.yaml") << testing::kTradeSpec;
  auto done = testing::RunCommand(cluster_.Ladder({"search", "start", "trade.yaml", "--wait"}), dir_);
  ASSERT_EQ(done.exit_code, 0) << done.out << done.err;
  testing::HeadlessChromium browser(dir_, "1400,2600");
  browser.Open(Url("/"));
  browser.Navigate(Url("/login?token=" + cluster_.token + "&next=%23/search/1"));
  ASSERT_TRUE(browser.WaitFor("document.body.dataset.ready === '#/search/1'")) << browser.Eval("document.body.innerHTML");
  ASSERT_TRUE(browser.WaitFor("!!(document.querySelector('#pareto').view)")) << browser.Eval("document.body.innerHTML");
  auto search = browser.Eval("fetch('/api/searches/1').then(r => r.json())")["search"];
  auto trials = browser.Eval("fetch('/api/searches/1/trials?view=table').then(r => r.json())")["trials"];
  auto view = browser.Eval("document.querySelector('#pareto').view");
  ASSERT_EQ(search["pareto_front"].size(), 3u) << search.dump();
  std::vector<std::string> front;
  for (const auto& id : search["pareto_front"]) front.push_back(id.get<std::string>());
  EXPECT_EQ(view["front"].get<std::vector<std::string>>(), front);
  ASSERT_EQ(view["points"].size(), 4u) << view.dump();
  for (const auto& t : trials) {
    auto p = std::find_if(view["points"].begin(), view["points"].end(), [&](const auto& q) { return q[2] == t["id"]; });
    ASSERT_NE(p, view["points"].end()) << t.dump();
    EXPECT_DOUBLE_EQ((*p)[0].get<double>(), t["objectives"][0].get<double>());
    EXPECT_DOUBLE_EQ((*p)[1].get<double>(), t["objectives"][1].get<double>());
    EXPECT_EQ((*p)[3].get<bool>(), t.value("pareto", false)) << t.dump();
  }
  EXPECT_EQ(view["x"], "loss");
  EXPECT_EQ(view["y"], "cost");
  EXPECT_GT(browser.Eval(Painted("#pareto")).get<int>(), 1000);
  browser.Screenshot(shots_ / "pareto.png");

  // One objective: no Pareto view.
  std::ofstream(dir_ / "views.yaml") << kViews;
  auto one = testing::RunCommand(cluster_.Ladder({"search", "start", "views.yaml", "--wait"}), dir_);
  ASSERT_EQ(one.exit_code, 0) << one.out << one.err;
  browser.Navigate(Url("/#/search/2"));
  ASSERT_TRUE(browser.WaitFor("document.body.dataset.ready === '#/search/2'"));
  EXPECT_EQ(browser.Eval("document.querySelector('#pareto').style.display"), "none");
}

}  // namespace
}  // namespace ladder
