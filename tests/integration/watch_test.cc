// ladder watch as a user runs it: --plain and --json follow a search to its end; the full-screen view runs in a
// real terminal (tmux), is driven by keys, and shows the trials the coordinator holds.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <thread>
#include <nlohmann/json.hpp>

#include "tests/integration/local_cluster.h"
#include "tests/integration/tmux_support.h"
#include "tests/support/ansi_html.h"
#include "tests/support/headless_chromium.h"

namespace ladder {
namespace {

// Three trials that print a few metrics lines each (and a line on stderr); two at a time.
constexpr const char* kSpec = R"(name: watched
objective: {metric: score, mode: max}
budget: {max_trials: 3, parallelism: 2}
command: [/bin/sh, -c, 'echo "warming up" >&2; for i in 1 2 3 4; do echo "{{\"step\": $i, \"score\": 0.$i}}"; sleep 0.05; done']
space:
  x: {type: float, low: 0, high: 1}
)";

// A coordinator and one worker of 2 slots (rack r7); the search is started by StartAndWait().
class WatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(cluster_.Start(dir_, /*dashboard=*/false, "r7"));
    address_ = cluster_.address;
    std::ofstream(dir_ / "spec.yaml") << kSpec;
  }
  std::vector<std::string> Ladder(std::vector<std::string> args) { return cluster_.Ladder(std::move(args)); }
  void StartAndWait() {
    auto r = testing::RunCommand(Ladder({"search", "start", "spec.yaml", "--wait"}), dir_);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }

  // The terminal as it looks, as a PNG in the test's output directory (when Chromium is there to draw it).
  template <class T>
  void Shoot(T& tmux, const std::string& name) {
    if (!testing::HeadlessChromium::Available()) return;
    const char* out = std::getenv("LADDER_TEST_OUTPUT_DIR");
    const auto shots = std::filesystem::path(out ? out : LADDER_TEST_BIN_DIR "/../tests/output") / "watch";
    std::filesystem::create_directories(shots);
    const auto html = dir_ / (name + ".html");
    std::ofstream(html) << testing::AnsiScreenToHtml(tmux.ScreenWithEscapes(), "ladder watch");
    std::filesystem::create_directories(dir_ / name);  // a profile of its own: two shots, two browsers
    testing::HeadlessChromium browser(dir_ / name, "1290,830");  // 150 x 45 at 14 px
    browser.Open("file://" + html.string());
    browser.WaitFor("document.querySelector('pre') !== null");
    browser.Screenshot(shots / (name + ".png"));
  }

  testing::TempDir dir_{"watch"};
  testing::LocalCluster cluster_;
  std::string address_;
};

TEST_F(WatchTest, PlainFollowsASearchToItsEndOneLinePerEvent) {
  ASSERT_NO_FATAL_FAILURE(StartAndWait());
  // The search has ended: the snapshot and the journal's tail are printed, then it exits.
  auto r = testing::RunCommand(Ladder({"watch", "1", "--plain", "--tail", "100"}), dir_);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("search 1 'watched' completed: 3 completed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("node n1 up"), std::string::npos) << r.out;
  for (int id : {1, 2, 3}) {
    EXPECT_NE(r.out.find("trial " + std::to_string(id) + " (#" + std::to_string(id - 1) + ") completed"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("trial_completed search 1 trial " + std::to_string(id)), std::string::npos) << r.out;
  }
  EXPECT_NE(r.out.find("search_created search 1: watched"), std::string::npos) << "the journal's tail: " << r.out;

  auto j = testing::RunCommand(Ladder({"--json", "watch", "1", "--tail", "5"}), dir_);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  std::istringstream lines(j.out);
  int journal = 0, n = 0;
  for (std::string line; std::getline(lines, line); ++n) {
    auto ev = nlohmann::json::parse(line, nullptr, false);
    ASSERT_TRUE(ev.is_object()) << "not one JSON object: " << line;
    if (ev.value("kind", "") == "JOURNAL") ++journal;
  }
  EXPECT_GT(n, 5);
  EXPECT_EQ(journal, 5) << "--tail 5";

  auto missing = testing::RunCommand(Ladder({"watch", "99", "--plain"}), dir_);
  EXPECT_EQ(missing.exit_code, 4) << missing.err;
  EXPECT_NE(missing.err.find("no search with id 99"), std::string::npos) << missing.err;
}


bool Has(const std::string& screen, const std::string& what) { return screen.find(what) != std::string::npos; }

// tmux shows the terminal as the bytes of a frame arrive, and ncurses sends only what changed, top to bottom: a
// capture can hold the top of a new frame over the rest of the previous one (a new filter in the table's header
// above the old filter's rows). So every check waits for the whole frame it expects — each of `parts` and `more`
// — and then says which part is missing, from the last screen, when that frame never came.
std::string WaitForFrame(Tmux& tmux, const std::vector<std::string>& parts,
                         const std::function<bool(const std::string&)>& more = nullptr) {
  std::string screen = tmux.WaitFor([&](const std::string& s) {
    for (const auto& p : parts) {
      if (!Has(s, p)) return false;
    }
    return !more || more(s);
  });
  for (const auto& p : parts) EXPECT_TRUE(Has(screen, p)) << "missing: " << p << "\n" << screen;
  return screen;
}

// The row of a trial in the table: "<id> <#> <state> <nodes> ..." with any spacing.
bool HasRow(const std::string& screen, int64_t id, int number, const std::string& state) {
  std::regex row("(^|\\n)\\s+" + std::to_string(id) + "\\s+" + std::to_string(number) + "\\s+" + state + "\\s");
  return std::regex_search(screen, row);
}

TEST_F(WatchTest, TheFullScreenViewShowsTheCoordinatorsTrialsAndAnswersKeys) {
  if (!std::filesystem::exists("/usr/bin/tmux")) GTEST_SKIP() << "tmux is not installed (scripts/bootstrap.sh)";
  ASSERT_NO_FATAL_FAILURE(StartAndWait());
  Tmux tmux(dir_);
  std::string cmd;
  for (const auto& a : Ladder({"watch", "1"})) cmd += "'" + a + "' ";
  auto started = tmux.Run({"new-session", "-d", "-s", "w", "-x", "150", "-y", "45", "env TERM=screen " + cmd});
  ASSERT_EQ(started.exit_code, 0) << started.err;

  // What the coordinator holds, as `ladder trials --json` lists it: every trial with its state in a row.
  auto listed = testing::RunCommand(Ladder({"--json", "trials", "1"}), dir_);
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  auto doc = nlohmann::json::parse(listed.out, nullptr, false);
  const auto& trials = doc.is_object() && doc.contains("trials") ? doc["trials"] : doc;
  ASSERT_TRUE(trials.is_array()) << listed.out;
  ASSERT_EQ(trials.size(), 3u) << listed.out;
  auto all_rows = [&](const std::string& s) {
    for (const auto& t : trials) {
      const int64_t id = std::stoll(t["id"].is_string() ? t["id"].get<std::string>() : t["id"].dump());
      if (!HasRow(s, id, t.value("number", 0), "completed")) return false;
    }
    return true;
  };
  // The node map groups nodes by rack; the first trial is selected, its stored curve fetched and drawn (4
  // points, 0.1 .. 0.4).
  std::string screen = WaitForFrame(tmux,
                                    {"trial_completed", "node-h", "search 1 'watched' completed", "rack r7", "n1",
                                     "EVENTS", "CURVE trial 1 score", "(4 points)", "0.4 |"},
                                    all_rows);
  ASSERT_TRUE(all_rows(screen)) << screen;
  Shoot(tmux, "tui");

  tmux.Run({"send-keys", "-t", "w", "?"});
  WaitForFrame(tmux, {"ladder watch: keys", "filter: all, running", "any key: back"});
  tmux.Run({"send-keys", "-t", "w", "x"});  // any key: back
  tmux.Run({"send-keys", "-t", "w", "f"});  // filter: running — none of this search's trials runs now
  WaitForFrame(tmux, {"filter running", "(no trials in this state)", "CURVE trial 0", "EVENTS"});
  tmux.Run({"send-keys", "-t", "w", "f", "f"});  // pending, then completed
  screen = WaitForFrame(tmux, {"filter completed", "CURVE trial 1 score", "EVENTS"}, all_rows);
  EXPECT_TRUE(all_rows(screen)) << screen;
  EXPECT_FALSE(Has(screen, "(no trials in this state)")) << screen;
  tmux.Run({"send-keys", "-t", "w", "Down", "Enter"});  // the second trial's detail
  // Fetched from the coordinator (GetTrial): its run with the outcome, its journal, the end of its stderr.
  screen = WaitForFrame(tmux, {"trial 2 (#1 of search 1)", "command", "/bin/sh -c", "trial_completed",
                               "log tail (rank 0's stderr)", "   warming up"},
                        [](const std::string& s) { return std::regex_search(s, std::regex("attempt 1 .* on n1  exited")); });
  EXPECT_TRUE(std::regex_search(screen, std::regex("attempt 1 .* on n1  exited"))) << screen;
  Shoot(tmux, "tui-detail");
  tmux.Run({"send-keys", "-t", "w", "Escape"});
  // v: the timeline (one objective: no Pareto view in the cycle): the three trials ran on n1 (2 slots), each a bar
  // '[' then '=' (completed) on one of n1's lanes; v again: the curve.
  tmux.Run({"send-keys", "-t", "w", "v"});
  screen = WaitForFrame(tmux, {"TIMELINE search 1", "= completed", "EVENTS"},
                        [](const std::string& s) { return std::regex_search(s, std::regex("\\n n1 +\\|\\[=+")); });
  EXPECT_TRUE(std::regex_search(screen, std::regex("\\n n1 +\\|\\[=+"))) << screen;
  Shoot(tmux, "tui-timeline");
  tmux.Run({"send-keys", "-t", "w", "v"});
  WaitForFrame(tmux, {"CURVE trial", "EVENTS"});
  tmux.Run({"send-keys", "-t", "w", "q"});
  for (int i = 0; i < 100 && tmux.Alive(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(tmux.Alive()) << "q quits\n" << tmux.Screen();
}

}  // namespace
}  // namespace ladder

namespace ladder {
namespace {

// Any language can be a client: the Python example (Debian's python3-grpcio, stubs generated from proto/ by
// Debian's protoc and grpc_python_plugin) lists the searches and follows one to its end.
TEST_F(WatchTest, ThePythonExampleListsSearchesAndFollowsWatch) {
  auto probe = testing::RunCommand({"/usr/bin/python3", "-c", "import grpc, google.protobuf"}, dir_);
  if (probe.exit_code != 0) GTEST_SKIP() << "python3-grpcio is not installed (scripts/bootstrap.sh)";
  ASSERT_NO_FATAL_FAILURE(StartAndWait());
  auto r = testing::RunCommand({"/usr/bin/python3", std::string(LADDER_TEST_SOURCE_DIR) + "/examples/python/ladder_client.py",
                                "--server", address_, "--token-file", (dir_ / "ladder.db.token").string(), "--search",
                                "1", "--stubs", (dir_ / "stubs").string()},
                               dir_);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("search 1 'watched' completed: 3/3 completed, best score 0.4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("search_created: watched"), std::string::npos) << r.out;
  for (int id : {1, 2, 3}) {
    EXPECT_NE(r.out.find("trial_completed trial " + std::to_string(id)), std::string::npos) << r.out;
  }
  EXPECT_NE(r.out.find("search 1 SEARCH_COMPLETED"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace ladder
