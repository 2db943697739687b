// The web dashboard as a person uses it, in Debian's headless Chromium driven over the DevTools protocol: refused
// without the token; after login the trial table lists exactly the trials `ladder trials --json` lists, every
// chart draws, a metric point a running trial sends reaches the page within a second; a screenshot of each view.
// And the HTTP side against bad input: malformed requests, huge headers, paths out of the embedded files.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <fstream>
#include <regex>
#include <thread>
#include <nlohmann/json.hpp>

#include "ladder/v1/ladder.grpc.pb.h"
#include "tests/integration/local_cluster.h"
#include "tests/support/headless_chromium.h"

namespace ladder {
namespace {

// Three quick trials, then (another search) one slow trial that prints a point every 0.1 s for a minute.
constexpr const char* kQuick = R"(name: quick
objective: {metric: score, mode: max}
budget: {max_trials: 3, parallelism: 2}
command: [/bin/sh, -c, 'for i in 1 2 3 4 5; do echo "{{\"step\": $i, \"score\": 0.$i, \"loss\": 1.$i}}"; done']
space:
  x: {type: float, low: 0, high: 1}
)";
constexpr const char* kSlow = R"(name: slow
objective: {metric: score, mode: max}
budget: {max_trials: 1}
command: [/bin/sh, -c, 'i=0; while [ $i -lt 600 ]; do i=$((i+1)); echo "{{\"step\": $i, \"score\": 0.5}}"; sleep 0.1; done']
space:
  x: {type: float, low: 0, high: 1}
)";

// An ASHA search (rungs at steps 1, 3 and 9; the trials end at 9, before max_resource) whose trials talk on stderr
// and print each rank's step time, rank 2 the slow one.
constexpr const char* kRanks = R"(name: ranks
objective: {metric: score, mode: max}
budget: {max_trials: 2, parallelism: 1}
scheduler: {type: asha, resource: step, min_resource: 1, max_resource: 27, reduction_factor: 3}
command: [/bin/sh, -c, 'echo "loading the data" >&2; for i in 1 2 3 4 5 6 7 8 9; do echo "{{\"step\": $i, \"score\": 0.$i, \"step_time_s/rank0\": 0.10, \"step_time_s/rank1\": 0.11, \"step_time_s/rank2\": 0.19, \"step_time_s/rank3\": 0.10}}"; sleep 0.05; done; echo "finished well" >&2']
space:
  x: {type: float, low: 0, high: 1}
)";

// Six trials: the first four run at once; the last two wait for the file GATE before printing anything, so a page
// can be opened on four finished trials and see two more arrive. The score is the parameter a; the command ends
// in arguments a real trainer gets (an unbroken path of 200 characters and 30 flags: a trial page must wrap them).
constexpr const char* kEdges = R"(name: edges
objective: {metric: score, mode: max}
budget: {max_trials: 6, parallelism: 2}
command: [/bin/sh, -c, 'if [ {trial_number} -ge 4 ]; then while [ ! -e GATE ]; do sleep 0.05; done; fi; for i in 1 2 3; do echo "{{\"step\": $i, \"score\": {a}}}"; done', edges, LONG]
space:
  a: {type: float, low: 0, high: 1}
  b: {type: float, low: 0.001, high: 10, log: true}
)";

// One raw HTTP exchange: what the server answered (status line first), or "" when it closed without answering.
std::string RawHttp(int port, const std::string& request) {
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::socket sock(ioc);
  boost::asio::ip::tcp::resolver resolver(ioc);
  boost::asio::connect(sock, resolver.resolve("127.0.0.1", std::to_string(port)));
  boost::system::error_code ec;
  boost::asio::write(sock, boost::asio::buffer(request), ec);
  std::string out;
  char buf[4096];
  for (;;) {
    size_t n = sock.read_some(boost::asio::buffer(buf), ec);
    out.append(buf, n);
    if (ec) break;
  }
  return out;
}

class DashboardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::HeadlessChromium::Available()) GTEST_SKIP() << "chromium is not installed (scripts/bootstrap.sh)";
    ASSERT_NO_FATAL_FAILURE(cluster_.Start(dir_, /*dashboard=*/true, "r1"));
    http_port_ = cluster_.http_port;
    token_ = cluster_.token;
    const char* out = std::getenv("LADDER_TEST_OUTPUT_DIR");
    shots_ = std::filesystem::path(out ? out : LADDER_TEST_BIN_DIR "/../tests/output") / "dashboard";
    std::filesystem::create_directories(shots_);
  }
  testing::CommandResult Ladder(std::vector<std::string> args) {
    return testing::RunCommand(cluster_.Ladder(std::move(args)), dir_);
  }
  std::string Url(const std::string& path) { return "http://127.0.0.1:" + std::to_string(http_port_) + path; }

  testing::TempDir dir_{"dashboard"};
  testing::LocalCluster cluster_;
  std::string token_;
  int http_port_ = 0;
  std::filesystem::path shots_;
};

TEST_F(DashboardTest, ABrowserSeesTheSearchLiveAfterLoggingInAndNothingBefore) {
  std::ofstream(dir_ / "quick.yaml") << kQuick;
  auto run = Ladder({"search", "start", "quick.yaml", "--wait"});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  testing::HeadlessChromium browser(dir_);
  browser.Open(Url("/api/searches"));
  ASSERT_TRUE(browser.WaitFor("document.body && document.body.innerText.length > 0"));
  EXPECT_NE(browser.Eval("document.body.innerText").get<std::string>().find("needs a token of the coordinator"),
            std::string::npos)
      << "refused without the token";

  browser.Navigate(Url("/login?token=" + token_ + "&next=%23/search/1"));
  ASSERT_TRUE(browser.WaitFor("document.body.dataset.ready === '#/search/1'")) << browser.Eval("document.body.innerHTML");
  // Exactly the trials the coordinator lists.
  auto listed = nlohmann::json::parse(Ladder({"--json", "trials", "1"}).out);
  std::vector<std::string> want;
  for (const auto& t : listed["trials"]) want.push_back(t["id"].get<std::string>());
  std::sort(want.begin(), want.end());
  auto shown = browser.Eval("[...document.querySelectorAll('#trials tbody tr')].map(r => r.dataset.id).sort()");
  EXPECT_EQ(shown.get<std::vector<std::string>>(), want);
  // Every chart draws: each canvas has painted pixels (a slice plot's dot paints about 30).
  const std::string painted =
      "[...document.querySelectorAll('canvas')].map(c => { const d = c.getContext('2d').getImageData(0, 0, c.width, "
      "c.height).data; let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n; })";
  ASSERT_TRUE(browser.WaitFor(painted + ".length >= 2 && " + painted + ".every(n => n > 20)"))
      << browser.Eval(painted).dump();
  browser.Screenshot(shots_ / "search.png");
  // The curves come in one request: 5 points of every trial.
  auto counts = browser.Eval("fetch('/api/searches/1/curves?metric=score').then(r => r.json())"
                             ".then(j => Object.values(j.trials).map(p => p.length))");
  EXPECT_EQ(counts, nlohmann::json::parse("[5, 5, 5]")) << counts.dump();

  browser.Navigate(Url("/#/trial/" + want.front()));
  ASSERT_TRUE(browser.WaitFor("document.body.dataset.ready === '#/trial/" + want.front() + "'"));
  EXPECT_TRUE(browser.WaitFor("document.querySelectorAll('#metrics canvas').length === 2")) << "score and loss";
  browser.Screenshot(shots_ / "trial.png");
  browser.Navigate(Url("/#/nodes"));
  ASSERT_TRUE(browser.WaitFor("document.body.dataset.ready === '#/nodes'"));
  EXPECT_NE(browser.Eval("document.body.innerText").get<std::string>().find("rack r1"), std::string::npos);
  browser.Screenshot(shots_ / "nodes.png");
  browser.Navigate(Url("/#/"));
  ASSERT_TRUE(browser.WaitFor("document.body.dataset.ready === '#/'"));
  EXPECT_NE(browser.Eval("document.querySelector('#searches').innerText").get<std::string>().find("quick"),
            std::string::npos);
  browser.Screenshot(shots_ / "searches.png");

  // Live: a running trial's newest point reaches the page within a second of the coordinator having it.
  std::ofstream(dir_ / "slow.yaml") << kSlow;
  auto started = Ladder({"search", "start", "slow.yaml"});
  ASSERT_EQ(started.exit_code, 0) << started.err;
  browser.Navigate(Url("/#/search/2"));
  ASSERT_TRUE(browser.WaitFor("document.body.dataset.ready === '#/search/2'"));
  // The coordinator's points as watchers get them (its Watch stream: each trial's newest, once committed).
  grpc::ClientContext watch_ctx;
  watch_ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  watch_ctx.AddMetadata("authorization", "Bearer " + token_);
  auto stub = v1::Ladder::NewStub(grpc::CreateChannel(cluster_.address, grpc::InsecureChannelCredentials()));
  v1::WatchRequest watch_req;
  watch_req.set_search_id(2);
  auto reader = stub->Watch(&watch_ctx, watch_req);
  struct EndWatch {
    grpc::ClientContext& ctx;
    std::unique_ptr<grpc::ClientReader<v1::Event>>& reader;
    ~EndWatch() {
      ctx.TryCancel();
      reader->Finish();
    }
  } end_watch{watch_ctx, reader};
  int64_t previous = 4;  // rounds start once the trial has sent 5 points, each at a later point than the last
  for (int round = 0; round < 3; ++round) {
    int64_t step = 0;
    std::string id;
    for (v1::Event ev; step <= previous && reader->Read(&ev);) {
      if (ev.kind() == v1::Event::TRIAL_METRICS) step = ev.metrics().step(), id = std::to_string(ev.trial().id());
    }
    ASSERT_GT(step, previous) << "the slow trial does not progress";
    previous = step;
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_TRUE(browser.WaitFor("(window.ladderLive.steps['" + id + "'] || 0) >= " + std::to_string(step),
                                std::chrono::milliseconds(1000)))
        << "step " << step << " not on the page within 1 s (page: " << browser.Eval("window.ladderLive").dump() << ")";
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(1100));
  }
  auto cancel = Ladder({"search", "cancel", "2"});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
}

// The JSON API answers what the gRPC calls answer (protobuf's JSON mapping of the same messages).
TEST_F(DashboardTest, TheJsonApiMirrorsTheGrpcReadCalls) {
  std::ofstream(dir_ / "quick.yaml") << kQuick;
  auto run = Ladder({"search", "start", "quick.yaml", "--wait"});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  auto get = [&](const std::string& path) {
    auto r = RawHttp(http_port_, "GET " + path + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token_ +
                                     "\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(r.rfind("HTTP/1.1 200", 0), 0u) << path << ": " << r.substr(0, 200);
    return nlohmann::json::parse(r.substr(r.find("\r\n\r\n") + 4), nullptr, false);
  };
  auto grpc_trials = nlohmann::json::parse(Ladder({"--json", "trials", "1"}).out)["trials"];
  auto http_trials = get("/api/searches/1/trials")["trials"];
  ASSERT_EQ(http_trials.size(), grpc_trials.size());
  std::map<std::string, nlohmann::json> by_id;
  for (const auto& t : http_trials) by_id[t["id"]] = t;
  for (const auto& g : grpc_trials) {
    const auto& h = by_id.at(g["id"].get<std::string>());
    // The CLI prints default values too (always_print_primitive_fields); the API leaves them out.
    for (const char* field : {"state", "objective", "params", "command", "checkpoint_dir"}) {
      EXPECT_EQ(h.value(field, nlohmann::json()), g.value(field, nlohmann::json())) << field << " of trial " << g["id"];
    }
    ASSERT_EQ(h["placement"].size(), g["placement"].size());
    for (size_t i = 0; i < g["placement"].size(); ++i) {
      EXPECT_EQ(h["placement"][i]["node_id"], g["placement"][i]["node_id"]);
      EXPECT_EQ(h["placement"][i]["slots"], g["placement"][i]["slots"]);
    }
    auto one = get("/api/trials/" + g["id"].get<std::string>() + "?metrics=1")["trial"];
    EXPECT_EQ(one["state"], g["state"]);
    EXPECT_EQ(one["metrics"].size(), 5u) << "?metrics=1: the trial's points";
  }
  auto grpc_search = nlohmann::json::parse(Ladder({"--json", "search", "show", "1"}).out);
  auto http_search = get("/api/searches/1")["search"];
  const auto& gs = grpc_search.contains("search") ? grpc_search["search"] : grpc_search;
  for (const char* field : {"name", "state", "best_objective", "best_trial_id", "completed"}) {
    EXPECT_EQ(http_search.value(field, nlohmann::json()), gs.value(field, nlohmann::json())) << field;
  }
  EXPECT_FALSE(http_search.contains("spec_yaml")) << "a spec's env may carry credentials";
  auto server = get("/api/server");
  EXPECT_EQ(server["workers"].size(), 1u);
  EXPECT_EQ(get("/api/searches")["searches"].size(), 1u);
}

// Beyond the status: the trial page shows its runs, the end of its stderr, each rank's step time with the straggler
// marked; the search page its node-hours, the best against them, and the rungs on the curves.
TEST_F(DashboardTest, ATrialShowsItsRunsLogTailRankStepTimesAndTheSearchItsCost) {
  std::ofstream(dir_ / "ranks.yaml") << kRanks;
  auto run = Ladder({"search", "start", "ranks.yaml", "--wait"});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  auto listed = nlohmann::json::parse(Ladder({"--json", "trials", "1"}).out)["trials"];
  ASSERT_EQ(listed.size(), 2u);
  const std::string id = listed[0]["id"];
  testing::HeadlessChromium browser(dir_);
  browser.Open(Url("/"));
  browser.Navigate(Url("/login?token=" + token_ + "&next=%23/trial/" + id));
  ASSERT_TRUE(browser.WaitFor("document.body.dataset.ready === '#/trial/" + id + "'")) << browser.Eval("document.body.innerHTML");
  EXPECT_EQ(browser.Eval("document.querySelector('#log-tail').innerText").get<std::string>(),
            "loading the data\nfinished well");
  EXPECT_EQ(browser.Eval("[...document.querySelectorAll('#attempts tbody tr')].map(r => r.cells[4].innerText)"),
            nlohmann::json::parse(R"(["exited"])"));
  EXPECT_EQ(browser.Eval("[...document.querySelectorAll('#rank-table tbody tr')].map(r => r.className)"),
            nlohmann::json::parse(R"(["", "", "straggler", ""])"))
      << "rank 2 (0.19 s against a median of 0.105 s) is the straggler, rank 1 (0.11) is not";
  EXPECT_TRUE(browser.WaitFor("document.querySelectorAll('#ranks-chart canvas').length === 1"));
  EXPECT_EQ(browser.Eval("document.querySelectorAll('#metrics canvas').length"), 1) << "score; the ranks have their own chart";
  const std::string kv = browser.Eval("document.querySelector('.kv').innerText");
  EXPECT_NE(kv.find("rung 3"), std::string::npos) << kv;  // reached steps 1, 3 and 9
  browser.Screenshot(shots_ / "trial-ranks.png");

  browser.Navigate(Url("/#/search/1"));
  ASSERT_TRUE(browser.WaitFor("document.body.dataset.ready === '#/search/1'"));
  const std::string painted =
      "(c => { if (!c) return 0; const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0; "
      "for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n; })(document.querySelector('#cost canvas'))";
  EXPECT_TRUE(browser.WaitFor(painted + " > 100")) << "best against node-hours draws";
  // Each trial's node-hours in the table: its wall time on its one node, as the coordinator counted it.
  auto node_h = browser.Eval("[...document.querySelectorAll('#trials tbody tr')].map(r => +r.cells[8].innerText)");
  ASSERT_EQ(node_h.size(), 2u);
  for (const auto& t : listed) {
    const double want = t["node_seconds"].get<double>() / 3600;
    EXPECT_GT(want, 0.4 / 3600) << "nine points 0.05 s apart";
    EXPECT_TRUE(std::abs(node_h[0].get<double>() - want) < 0.01 || std::abs(node_h[1].get<double>() - want) < 0.01);
  }
  // The curves carry where each trial reached a rung: steps 1 and 3.
  auto rungs = browser.Eval("fetch('/api/searches/1/curves?metric=score&rung_metric=step&rungs=1,3').then(r => r.json())"
                            ".then(j => j.rung_steps['" + id + "'])");
  EXPECT_EQ(rungs, nlohmann::json::parse("[1, 3]"));
  EXPECT_NE(browser.Eval("document.querySelector('#curves .legend').innerText").get<std::string>().find("rung"),
            std::string::npos);
  browser.Screenshot(shots_ / "search-cost.png");
}

// A canvas chart's axes as the page drew them (`el` holds one chart): in SVG units, the plot area's left and right
// (x0, x1), the first x label's left edge and the last one's right edge and text, the axis titles, the leftmost and
// rightmost columns with paint on the canvas (the data), and how far the SVG layer is off the canvas (0: the same
// units).
constexpr const char* kAxesOf = R"((el => {
  const svg = el.querySelector('svg'), canvas = el.querySelector('canvas');
  const frame = svg.querySelector('.frame').getBBox(), ticks = [...svg.querySelectorAll('.xtick')];
  const d = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
  let lo = Infinity, hi = -Infinity;
  for (let i = 3; i < d.length; i += 4) if (d[i]) { const x = ((i - 3) / 4) % canvas.width; lo = Math.min(lo, x); hi = Math.max(hi, x); }
  const s = svg.getBoundingClientRect(), c = canvas.getBoundingClientRect(), last = ticks[ticks.length - 1].getBBox();
  return {x0: frame.x, x1: frame.x + frame.width, first: ticks[0].getBBox().x, last: last.x + last.width,
          last_text: ticks[ticks.length - 1].textContent, xtitle: svg.querySelector('.xtitle').textContent,
          ytitle: svg.querySelector('.ytitle').textContent, paint_lo: lo, paint_hi: hi,
          offset: Math.abs(s.left - c.left) + Math.abs(s.top - c.top)};
}))";

// `axes` (kAxesOf's answer) has its x labels at its axis ends, within a pixel, titled `x_title` and the objective.
void ExpectEndLabelsAtTheAxisEnds(const nlohmann::json& axes, const std::string& x_title) {
  EXPECT_LT(axes["offset"].get<double>(), 0.5) << "the SVG layer lies over the canvas";
  EXPECT_NEAR(axes["last"].get<double>(), axes["x1"].get<double>(), 1.0) << axes.dump();
  EXPECT_NEAR(axes["first"].get<double>(), axes["x0"].get<double>(), 1.0) << axes.dump();
  EXPECT_EQ(axes["xtitle"], x_title);
  EXPECT_EQ(axes["ytitle"], "score");
}

// The uPlot charts in the element with id `id`: [x tick labels as drawn, x title, y title] (uPlot 1.6 keeps the
// labels it drew last in each axis's _values).
std::string UplotAxes(const std::string& id) {
  return "plots.filter(p => p.root.closest('#" + id +
         "')).map(p => [p.axes[0]._values, p.axes[0].label, p.axes[1].label])";
}

// What a screenshot of a real search showed wrong: the slice plots' right-hand label 52 px left of the axis end,
// the learning curves' title counting the trials of the first load, half trial numbers on the history's axis, no
// y-axis titles, a cancel button on an ended search, a long command widening the trial page past the window.
TEST_F(DashboardTest, ChartsLabelTheirAxesAtTheDataAndAnEndedSearchOffersNoCancel) {
  std::string spec = kEdges;
  const std::string gate = (dir_ / "gate").string();
  std::string args = "--data=/scratch/datasets/" + std::string(200, 'x');
  for (int i = 0; i < 30; ++i) args += ", --option-" + std::to_string(i) + "=value";
  spec.replace(spec.find("GATE"), 4, gate);
  spec.replace(spec.find("LONG"), 4, args);
  std::ofstream(dir_ / "edges.yaml") << spec;
  auto started = Ladder({"search", "start", "edges.yaml"});
  ASSERT_EQ(started.exit_code, 0) << started.out << started.err;
  testing::HeadlessChromium browser(dir_, "1400,2000");  // the whole search page in a screenshot
  browser.Open(Url("/"));
  browser.Navigate(Url("/login?token=" + token_ + "&next=%23/"));
  // The searches page follows the counts: four trials done, the last two waiting for the gate.
  ASSERT_TRUE(browser.WaitFor("(r => r && r.cells[3].innerText === '4/6' && r.cells[4].innerText === '2')"
                              "(document.querySelector('#searches tbody tr'))"))
      << browser.Eval("document.body.innerText");
  browser.Navigate(Url("/#/search/1"));
  ASSERT_TRUE(browser.WaitFor("document.body.dataset.ready === '#/search/1'")) << browser.Eval("document.body.innerHTML");
  const std::string curves_title = "document.querySelector('#curves .title').textContent";
  const std::string curves_in_data = "fetch('/api/searches/1/curves?metric=score').then(r => r.json())"
                                     ".then(j => Object.values(j.trials).filter(p => p.length).length)";
  EXPECT_EQ(browser.Eval(curves_in_data), 4);
  EXPECT_EQ(browser.Eval(curves_title), "learning curves: score (4 trials)");
  EXPECT_EQ(browser.Eval("!!document.querySelector('#cancel')"), true) << "a running search can be cancelled";
  browser.Screenshot(shots_ / "edges-running.png");

  std::ofstream(gate).put('\n');
  EXPECT_TRUE(browser.WaitFor("document.querySelector('#title').textContent.includes('COMPLETED: 6 completed')"))
      << browser.Eval("document.querySelector('#title').textContent");
  EXPECT_EQ(browser.Eval(curves_in_data), 6);
  EXPECT_TRUE(browser.WaitFor(curves_title + " === 'learning curves: score (6 trials)'"))
      << "the title counts the curves drawn: " << browser.Eval(curves_title);
  EXPECT_TRUE(browser.WaitFor("!document.querySelector('#cancel')")) << "the search ended while the page was open";

  // The page of the ended search, as a later visit opens it.
  browser.Navigate(Url("/#/"));
  ASSERT_TRUE(browser.WaitFor("document.body.dataset.ready === '#/'"));
  browser.Navigate(Url("/#/search/1"));
  ASSERT_TRUE(browser.WaitFor("document.body.dataset.ready === '#/search/1'"));
  EXPECT_EQ(browser.Eval("[...document.querySelectorAll('button')].filter(b => /cancel/i.test(b.textContent)).length"), 0);
  // The history's x axis counts trials: whole numbers only, and at least two of them.
  auto history = browser.Eval(UplotAxes("history"));
  ASSERT_TRUE(history.is_array() && history.size() == 1) << history.dump();
  ASSERT_GE(history[0][0].size(), 2u) << history.dump();
  for (const auto& tick : history[0][0]) {
    EXPECT_TRUE(tick.is_string() && std::regex_match(tick.get<std::string>(), std::regex("-?[0-9]+"))) << tick.dump();
  }
  EXPECT_EQ(history[0][1], "trial number");
  EXPECT_EQ(history[0][2], "score");
  EXPECT_EQ(browser.Eval(UplotAxes("cost"))[0][2], "best score");
  // The curves: the x axis ends at the last step (3), its label ends there, and the curves reach it.
  auto curves = browser.Eval(std::string(kAxesOf) + "(document.querySelector('#curves'))");
  ASSERT_TRUE(curves.is_object()) << "the learning curves' axes are in the page";
  ExpectEndLabelsAtTheAxisEnds(curves, "step");
  EXPECT_EQ(curves["last_text"], "3");
  EXPECT_NEAR(curves["paint_hi"].get<double>(), curves["x1"].get<double>(), 1.5) << curves.dump();
  // Each slice: its lowest and highest value's points sit on the axis ends (a dot of radius 3 paints 3 columns on
  // either side of its centre), and the end labels start and end there.
  auto slices = browser.Eval("[...document.querySelectorAll('#slices .card')].map(c => " + std::string(kAxesOf) + "(c))");
  ASSERT_TRUE(slices.is_array() && slices.size() == 2) << "a and b: " << slices.dump();
  for (size_t i = 0; i < 2; ++i) {
    const auto& s = slices[i];
    ExpectEndLabelsAtTheAxisEnds(s, i == 0 ? "a" : "b");
    EXPECT_NEAR(s["paint_hi"].get<double>() - 2.5, s["x1"].get<double>(), 1.5) << s.dump();
    EXPECT_NEAR(s["paint_lo"].get<double>() + 3.5, s["x0"].get<double>(), 1.5) << s.dump();
  }
  browser.Screenshot(shots_ / "edges.png");

  // A trial's page wraps its long command inside the window, and its chart has titles on both axes.
  auto trials = nlohmann::json::parse(Ladder({"--json", "trials", "1"}).out)["trials"];
  ASSERT_FALSE(trials.empty());
  const std::string id = trials[0]["id"];
  browser.Navigate(Url("/#/trial/" + id));
  ASSERT_TRUE(browser.WaitFor("document.body.dataset.ready === '#/trial/" + id + "'"));
  EXPECT_NE(browser.Eval("document.querySelector('.kv').innerText").get<std::string>().find(std::string(200, 'x')),
            std::string::npos);
  EXPECT_EQ(browser.Eval("document.documentElement.scrollWidth <= window.innerWidth"), true)
      << browser.Eval("[document.documentElement.scrollWidth, window.innerWidth]").dump();
  auto metric = browser.Eval(UplotAxes("metrics"));
  ASSERT_EQ(metric.size(), 1u) << metric.dump();
  EXPECT_EQ(metric[0][1], "step");
  EXPECT_EQ(metric[0][2], "score");
  browser.Screenshot(shots_ / "edges-trial.png");
}

// A stand-in for ladder-train in a scale sweep: ten val_loss points along its steps (4096 examples an epoch), a
// parabola in log2(lr) around a best LR of 0.05 at batch 16 that grows as B^0.7, lower the more steps it runs, with
// a little scatter from trial to trial (so that the fit's intervals are not points). The hero run (given
// --max-steps) waits for the file GATE, then reports a point every 0.1 s.
constexpr const char* kFakeTrainer = R"(#!/bin/sh
lr=0.1; b=16; steps=0; ep=2
while [ $# -gt 0 ]; do case "$1" in --lr) lr=$2;; --batch-size) b=$2;; --max-steps) steps=$2;; --epochs) ep=$2;; esac; shift; done
hero=0; if [ "$steps" -gt 0 ]; then hero=1; while [ ! -e GATE ]; do sleep 0.05; done; fi
awk -v lr="$lr" -v b="$b" -v steps="$steps" -v ep="$ep" -v hero="$hero" 'BEGIN {
  if (steps == 0) steps = int(4096 * ep / b);
  d = log(lr / (0.05 * (b / 16) ^ 0.7)) / log(2);
  for (i = 1; i <= 10; i++) {
    s = int(steps * i / 10); if (s < 1) s = 1;
    printf "{\"step\": %d, \"global_batch\": %d, \"lr\": %g, \"noise_scale\": 300, \"val_loss\": %.6f}\n", s, b, lr, 0.3 + 3 / sqrt(1 + s) + 0.05 * d * d + 0.01 * sin(997 * lr + b)
    fflush(); if (hero) system("sleep 0.1")
  }
}'
)";

// What a person opening a hero run's page after the guide's scale path saw (issue 38): the generic search views
// of one trial and a plan table without the peak LR's interval or the predicted loss. Now the page leads with the
// plan (its numbers equal to the plan's JSON), the band at full width, and the extrapolation drawn on a canvas from
// the plan's JSON, and the run's live val_loss reaches the band, the plan and the extrapolation as it comes; the
// sweep it came from keeps its views.
TEST_F(DashboardTest, AHeroRunsPageLeadsWithItsPlanItsBandAndTheExtrapolation) {
  const std::string gate = (dir_ / "gate").string();
  std::string trainer = kFakeTrainer;
  trainer.replace(trainer.find("GATE"), 4, gate);
  std::ofstream(dir_ / "fake_train.sh") << trainer;
  std::ofstream(dir_ / "sweep.yaml")
      << "name: fake-scales\nobjective: {metric: val_loss, mode: min}\nbudget: {parallelism: 2}\n"
         "scales:\n  global_batch: [16, 32, 64]\n  lr: {low: 0.0125, high: 0.1}\n  per_octave: 1\n  follow: linear\n"
         "  extend: 1\n"
         "command: [/bin/sh, " + (dir_ / "fake_train.sh").string() + ", --lr, '{lr}', --batch-size, '{global_batch}', "
         "--epochs, '2']\n";
  auto sweep = Ladder({"search", "start", "sweep.yaml", "--wait"});
  ASSERT_EQ(sweep.exit_code, 0) << sweep.out << sweep.err;
  auto hero = Ladder({"promote", "1", "--batch", "1024"});
  ASSERT_EQ(hero.exit_code, 0) << hero.out << hero.err;
  auto shown = Ladder({"--json", "search", "show", "2"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  const auto plan = nlohmann::json::parse(shown.out)["hero"]["plan"];
  const auto& x = plan["extrapolation"];
  ASSERT_TRUE(x.is_object() && x["swept"].size() == 3u) << shown.out;
  ASSERT_TRUE(plan["peak_lr"][1].is_number()) << "the plan states an interval on the LR\n" << shown.out;

  testing::HeadlessChromium browser(dir_, "1400,2200");
  browser.Open(Url("/"));
  browser.Navigate(Url("/login?token=" + token_ + "&next=%23/search/2"));
  ASSERT_TRUE(browser.WaitFor("document.body.dataset.ready === '#/search/2'")) << browser.Eval("document.body.innerHTML");
  // Before the run reports: the plan and the extrapolation, nothing reached yet.
  EXPECT_EQ(browser.Eval("document.querySelector('#reached').innerText"), "no val_loss yet");
  EXPECT_EQ(browser.Eval("window.ladderExtrapolation.hero.loss"), nullptr);
  browser.Screenshot(shots_ / "hero-waiting.png");
  // Its points reach the page live: the band chart, what the plan says it reached, the extrapolation's label.
  std::ofstream(gate).put('\n');
  EXPECT_TRUE(browser.WaitFor("document.querySelector('#title').textContent.includes('COMPLETED')",
                              std::chrono::seconds(60)))
      << browser.Eval("document.querySelector('#title').textContent");
  const std::string live_points = "plots[0].data[3].filter(v => v !== null).length";
  EXPECT_TRUE(browser.WaitFor(live_points + " === 10")) << browser.Eval(live_points);
  EXPECT_TRUE(browser.WaitFor("document.querySelector('#reached').innerText.startsWith(String(num(plots[0].data[3]"
                              ".filter(v => v !== null).at(-1))))"))
      << browser.Eval("document.querySelector('#reached').innerText");
  EXPECT_TRUE(browser.Eval("window.ladderExtrapolation.hero.loss").is_number());
  // The plan's numbers, as the page writes them (num: 4 significant digits), from the plan's JSON.
  auto num = [&](const nlohmann::json& v) { return browser.Eval("num(" + v.dump() + ")").get<std::string>(); };
  auto text = [&](const std::string& selector) {
    auto v = browser.Eval("document.querySelector('" + selector + "')?.innerText");
    return v.is_string() ? v.get<std::string>() : std::string("(absent)");
  };
  const auto& lr = plan["peak_lr"];
  EXPECT_EQ(text("#peak-lr"), num(lr[0]));
  EXPECT_EQ(text("#peak-lr + .iv"), "[" + num(lr[1]) + ", " + num(lr[2]) + "] 90% interval");
  EXPECT_EQ(browser.Eval("+document.querySelector('#peak-lr').dataset.value"), lr[0]);
  const auto& loss = plan["final_loss"];
  if (loss[0].is_number()) {
    EXPECT_EQ(text("#final-loss"), num(loss[0]));
    if (loss[1].is_number()) {
      EXPECT_EQ(text("#final-loss + .iv"), "[" + num(loss[1]) + ", " + num(loss[2]) + "] 90% interval");
    }
  } else {
    EXPECT_EQ(text("#final-loss"), "not predicted") << "and why: " << text("#final-loss + .iv");
  }
  EXPECT_NE(text("#reached"), "no val_loss yet") << "the hero run has ended";
  EXPECT_NE(text("#plan-why").find(plan["lr_rule"].get<std::string>()), std::string::npos) << text("#plan-why");
  EXPECT_NE(text("#plan-why").find("no probes"), std::string::npos) << text("#plan-why");
  // Not the generic views of a search: one trial has no history, parameters or slices to show.
  EXPECT_EQ(browser.Eval("document.querySelectorAll('#history, #curves, #cost, #parallel, #importance, #slices').length"), 0);
  EXPECT_EQ(browser.Eval("document.querySelectorAll('#trials tbody tr').length"), 1) << "its one trial is listed";
  // The band chart spans the page (not the 900 px of a search's charts).
  EXPECT_GT(browser.Eval("document.querySelector('#band .uplot').offsetWidth").get<double>(), 1200);

  // The extrapolation: painted, and what it drew is the plan's JSON.
  auto painted = browser.Eval(
      "(() => { const c = document.getElementById('extrapolation-canvas'); if (!c) return -1;"
      " const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0;"
      " for (let i = 3; i < d.length; i += 4) n += d[i] > 0; return n; })()");
  EXPECT_GT(painted.get<int>(), 2000) << "the canvas has the curves and points on it";
  auto drawn = browser.Eval("window.ladderExtrapolation");
  ASSERT_TRUE(drawn.is_object()) << drawn.dump();
  ASSERT_EQ(drawn["swept"].size(), 3u) << drawn.dump();
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(drawn["swept"][i]["batch"], x["swept"][i]["batch"]);
    EXPECT_EQ(drawn["swept"][i]["lr"], x["swept"][i]["lr"]);
    const double px = drawn["swept"][i]["x"], py = drawn["swept"][i]["y"];
    // The optimum's dot is painted where the page says it drew it.
    EXPECT_GT(browser.Eval("document.getElementById('extrapolation-canvas').getContext('2d').getImageData(" +
                           std::to_string(static_cast<int>(px)) + ", " + std::to_string(static_cast<int>(py)) +
                           ", 1, 1).data[3]").get<int>(), 0) << i;
    EXPECT_NE(std::find(drawn["xlabels"].begin(), drawn["xlabels"].end(), std::to_string(x["swept"][i]["batch"].get<int>())),
              drawn["xlabels"].end()) << "the x axis is labelled at each swept batch: " << drawn["xlabels"];
  }
  EXPECT_EQ(drawn["target"]["batch"], 1024);
  EXPECT_EQ(drawn["target"]["lr"], plan["peak_lr"]);
  EXPECT_NE(std::find(drawn["xlabels"].begin(), drawn["xlabels"].end(), "1024"), drawn["xlabels"].end()) << drawn;
  EXPECT_NE(std::find(drawn["ylabels"].begin(), drawn["ylabels"].end(), num(lr[0])), drawn["ylabels"].end())
      << "the y axis names the plan's LR: " << drawn["ylabels"];
  ASSERT_EQ(drawn["laws"].size(), x["laws"].size());
  int chosen = 0;
  for (size_t i = 0; i < x["laws"].size(); ++i) {
    auto law = std::find_if(drawn["laws"].begin(), drawn["laws"].end(), [&](const auto& l) { return l["name"] == x["laws"][i]["name"]; });
    ASSERT_NE(law, drawn["laws"].end()) << x["laws"][i]["name"];
    EXPECT_EQ((*law)["points"], x["laws"][i]["points"].size());
    EXPECT_EQ((*law)["chosen"], x["laws"][i]["chosen"]);
    chosen += (*law)["chosen"].get<bool>();
  }
  EXPECT_EQ(chosen, 1);
  // The climb's verdict under the laws' table: flagged or not, and where undecided the probe that decides.
  const auto& verdict = x["verdict"];
  ASSERT_TRUE(verdict.is_object() && verdict.contains("flagged")) << x.dump();
  const std::string said = text("#verdict");
  EXPECT_EQ(said.rfind(verdict["flagged"].get<bool>() ? "flagged: " + verdict["why"].get<std::string>() : "not flagged", 0),
            0u) << said;
  EXPECT_NE(said.find("the climb's LR at 1024: " + num(verdict["lr"])), std::string::npos) << said;
  if (verdict["undecided"].is_string()) {
    EXPECT_NE(said.find(verdict["undecided"].get<std::string>()), std::string::npos) << said;
  }
  ASSERT_TRUE(drawn["hero"].is_object()) << "the hero run's LR is drawn";
  EXPECT_NEAR(drawn["hero"]["lr"].get<double>(), lr[0].get<double>(), 1e-5 * lr[0].get<double>());
  EXPECT_TRUE(drawn["hero"]["loss"].is_number());
  browser.Screenshot(shots_ / "hero.png");

  // The sweep keeps a search's views, and has no plan.
  browser.Navigate(Url("/#/search/1"));
  ASSERT_TRUE(browser.WaitFor("document.body.dataset.ready === '#/search/1'"));
  EXPECT_EQ(browser.Eval("['#history', '#curves', '#cost', '#parallel', '#importance', '#slices']"
                         ".every(s => !!document.querySelector(s))"), true);
  EXPECT_EQ(browser.Eval("!!document.querySelector('#hero-plan, #extrapolation')"), false);
}

// A probe of the climb (ladder promote --probe) runs as trials of the sweep: the search's trial table tags each of
// them, and only them.
TEST_F(DashboardTest, TheTrialTableTagsTheProbesOfTheClimb) {
  std::string trainer = kFakeTrainer;
  trainer.replace(trainer.find("GATE"), 4, (dir_ / "gate").string());
  std::ofstream(dir_ / "fake_train.sh") << trainer;
  std::ofstream(dir_ / "sweep.yaml")
      << "name: fake-scales\nobjective: {metric: val_loss, mode: min}\nbudget: {parallelism: 2}\n"
         "scales:\n  global_batch: [16, 32]\n  lr: {low: 0.025, high: 0.1}\n  per_octave: 1\n  follow: linear\n"
         "  extend: 1\n"
         "command: [/bin/sh, " + (dir_ / "fake_train.sh").string() + ", --lr, '{lr}', --batch-size, '{global_batch}', "
         "--micro-batches, '{micro_batches}', --epochs, '2']\n";
  auto sweep = Ladder({"search", "start", "sweep.yaml", "--wait"});
  ASSERT_EQ(sweep.exit_code, 0) << sweep.out << sweep.err;
  auto probed = Ladder({"promote", "1", "--batch", "4096", "--probe"});
  ASSERT_EQ(probed.exit_code, 0) << probed.out << probed.err;
  std::vector<std::string> want;
  const auto listed = nlohmann::json::parse(Ladder({"--json", "trials", "1"}).out);
  for (const auto& t : listed["trials"]) {
    if (t["probe"].get<bool>()) want.push_back(t["id"].get<std::string>());
  }
  ASSERT_EQ(want.size(), 3u) << probed.out;
  std::sort(want.begin(), want.end());
  testing::HeadlessChromium browser(dir_);
  browser.Open(Url("/"));
  browser.Navigate(Url("/login?token=" + token_ + "&next=%23/search/1"));
  ASSERT_TRUE(browser.WaitFor("document.body.dataset.ready === '#/search/1'")) << browser.Eval("document.body.innerHTML");
  auto tagged = browser.Eval("[...document.querySelectorAll('#trials tbody tr')].filter(r => "
                             "r.querySelector('span.probe')).map(r => r.dataset.id).sort()");
  EXPECT_EQ(tagged.get<std::vector<std::string>>(), want);
  EXPECT_EQ(browser.Eval("document.querySelector('#trials span.probe').innerText"), "probe");
}

TEST_F(DashboardTest, BadRequestsGetAClearStatusAndLeaveTheCoordinatorServing) {
  const std::string host = "Host: 127.0.0.1\r\n";
  EXPECT_EQ(RawHttp(http_port_, "NONSENSE\r\n\r\n").rfind("HTTP/1.1 400", 0), 0u);
  EXPECT_EQ(RawHttp(http_port_, "GET / HTTP/1.1\r\n" + host + "X-Big: " + std::string(64 * 1024, 'a') + "\r\n\r\n")
                .rfind("HTTP/1.1 431", 0),
            0u);
  for (const char* path : {"/../../etc/passwd", "/vendor/../../ladder.db", "/%2e%2e/%2e%2e/etc/passwd", "/app.js/.."}) {
    auto r = RawHttp(http_port_, std::string("GET ") + path + " HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n");
    EXPECT_EQ(r.rfind("HTTP/1.1 404", 0), 0u) << path << ": " << r.substr(0, 200);
  }
  auto no_csrf = RawHttp(http_port_, "POST /api/searches/1/cancel HTTP/1.1\r\n" + host +
                                         "Cookie: ladder_session=forged\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
  EXPECT_EQ(no_csrf.rfind("HTTP/1.1 401", 0), 0u) << no_csrf.substr(0, 200);
  auto api = RawHttp(http_port_, "GET /api/server HTTP/1.1\r\n" + host + "Authorization: Bearer " + token_ +
                                     "\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(api.rfind("HTTP/1.1 200", 0), 0u) << api.substr(0, 300);
  EXPECT_NE(api.find("\"db_path\""), std::string::npos);
  auto nodes = Ladder({"nodes"});
  EXPECT_EQ(nodes.exit_code, 0) << "the coordinator still answers gRPC: " << nodes.err;
}

}  // namespace
}  // namespace ladder
