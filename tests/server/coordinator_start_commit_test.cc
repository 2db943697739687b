// A large scheduling pass sends its starts in commits of starts_per_commit: the first trials are on their way while
// the rest are placed. Every start still leaves only once the run it announces is committed.
#include <sqlite3.h>

#include <algorithm>

#include "tests/server/coordinator_fixture.h"

namespace ladder::server {
namespace {

// A search that could start a trial on each of six workers at once.
constexpr const char* kWideSpec = R"(
name: wide
objective: {metric: score, mode: max}
budget: {max_trials: 6, parallelism: 6}
sampler: {type: random, seed: 3}
command: [run]
space:
  x: {type: float, low: 0.0, high: 1.0}
)";

// Runs stored (committed) in the database, as another connection sees them.
int CommittedRuns(const std::string& db) {
  sqlite3* conn = nullptr;
  int n = -1;
  if (sqlite3_open_v2(db.c_str(), &conn, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(conn, "SELECT count(*) FROM allocations", -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
      n = sqlite3_column_int(st, 0);
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(conn);
  return n;
}

// A worker link that notes, for each start it is given, how many runs were committed at that moment.
class CommitWatchingLink : public FakeLink {
 public:
  explicit CommitWatchingLink(std::string db) : db_(std::move(db)) {}
  void Send(const v1::CoordinatorMessage& m) override {
    if (m.has_start()) committed_at_start.push_back(CommittedRuns(db_));
    FakeLink::Send(m);
  }
  std::vector<int> committed_at_start;

 private:
  std::string db_;
};

TEST_F(CoordinatorTest, ALargePassSendsItsStartsInCommitsOfStartsPerCommit) {
  Close();
  options_.starts_per_commit = 2;
  Open();
  const std::string db = (dir_ / "ladder.db").string();
  std::vector<std::shared_ptr<CommitWatchingLink>> links;
  for (int i = 0; i < 6; ++i) {
    auto link = std::make_shared<CommitWatchingLink>(db);
    v1::WorkerMessage m;
    m.mutable_register_()->set_node_id("n" + std::to_string(i));
    m.mutable_register_()->mutable_resources()->set_hostname("n" + std::to_string(i));
    m.mutable_register_()->mutable_resources()->set_slots(1);
    m.mutable_register_()->mutable_resources()->set_cores(1);
    coord_->OnWorkerMessage(link, m);
    links.push_back(link);
  }
  Drain();
  CreateSearch(kWideSpec);
  std::vector<int> seen;
  for (const auto& l : links) {
    ASSERT_EQ(l->committed_at_start.size(), 1u) << "one start per worker";
    seen.push_back(l->committed_at_start[0]);
  }
  std::sort(seen.begin(), seen.end());
  // In commits of two: the first two starts left when two runs were committed, the next two at four, the last at six.
  EXPECT_EQ(seen, (std::vector<int>{2, 2, 4, 4, 6, 6}));
}

TEST_F(CoordinatorTest, EveryStartLeavesOnlyOnceItsRunIsCommitted) {
  const std::string db = (dir_ / "ladder.db").string();
  std::vector<std::shared_ptr<CommitWatchingLink>> links;
  for (int i = 0; i < 2; ++i) {
    auto link = std::make_shared<CommitWatchingLink>(db);
    v1::WorkerMessage m;
    m.mutable_register_()->set_node_id("n" + std::to_string(i));
    m.mutable_register_()->mutable_resources()->set_hostname("n" + std::to_string(i));
    m.mutable_register_()->mutable_resources()->set_slots(1);
    coord_->OnWorkerMessage(link, m);
    links.push_back(link);
  }
  Drain();
  CreateSearch();  // kSpec: parallelism 2
  for (const auto& l : links) {
    ASSERT_EQ(l->committed_at_start.size(), 1u);
    EXPECT_EQ(l->committed_at_start[0], 2) << "both runs of the pass committed before either start left";
  }
}

// A coordinator with the given start window, six free one-slot workers and a search that could start on all six.
class StartWindowTest : public CoordinatorTest {
 protected:
  std::vector<std::shared_ptr<FakeLink>> SixWorkersAndAWideSearch(int starts_in_flight) {
    Close();
    options_.starts_in_flight = starts_in_flight;
    Open();
    std::vector<std::shared_ptr<FakeLink>> links;
    for (int i = 0; i < 6; ++i) links.push_back(Connect("n" + std::to_string(i), 1));
    CreateSearch(kWideSpec);
    return links;
  }
};

// With starts_in_flight 2, a pass over six free workers starts two trials; the next pass comes when half the window
// is heard of (TrialStarted, or a metric report when the TrialStarted was lost), or when a run ends before either.
TEST_F(StartWindowTest, StartsNotYetHeardOfHoldBackTheNextStartsAtTheWindow) {
  auto links = SixWorkersAndAWideSearch(2);
  auto starts = [&] {
    std::vector<v1::StartTrial> out;
    for (const auto& l : links) {
      for (const auto& s : l->Starts()) out.push_back(s);
    }
    return out;
  };
  auto link_of = [&](const v1::StartTrial& s) {
    for (const auto& l : links) {
      for (const auto& x : l->Starts()) {
        if (x.trial_id() == s.trial_id()) return l;
      }
    }
    return std::shared_ptr<FakeLink>();
  };
  ASSERT_EQ(starts().size(), 2u) << "the window holds the pass at two starts not heard of";
  EXPECT_EQ(coord_->StartsInFlight(), 2u);
  auto s = starts();
  v1::WorkerMessage heard;
  heard.mutable_started()->set_trial_id(s[0].trial_id());
  heard.mutable_started()->set_assignment_epoch(s[0].assignment_epoch());
  coord_->OnWorkerMessage(link_of(s[0]), heard);
  Drain();
  ASSERT_EQ(starts().size(), 3u) << "one heard of (half the window): the next pass fills it again";
  // A metric report is as good as a TrialStarted (which a reconnect may have lost).
  Metric(link_of(s[1]), s[1], 0.5);
  ASSERT_EQ(starts().size(), 4u);
  // A run that ends before it is heard of frees its place too.
  s = starts();
  Exit(link_of(s[2]), s[2], 1);
  EXPECT_EQ(starts().size(), 5u);
  EXPECT_EQ(coord_->StartsInFlight(), 2u);
}

TEST_F(StartWindowTest, WithoutAStartWindowOnePassStartsEveryFreeWorker) {
  auto links = SixWorkersAndAWideSearch(0);
  size_t n = 0;
  for (const auto& l : links) n += l->Starts().size();
  EXPECT_EQ(n, 6u);
  EXPECT_EQ(coord_->StartsInFlight(), 0u);
}

}  // namespace
}  // namespace ladder::server
