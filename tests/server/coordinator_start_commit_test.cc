// A large scheduling pass sends its starts in commits of starts_per_commit: the first trials are on their way while
// the rest are placed. Every start still leaves only once the run it announces is committed.
#include <sqlite3.h>

#include <algorithm>

#include "tests/server/coordinator_fixture.h"

namespace ladder::server {
namespace {

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
  CreateSearch(R"(
name: wide
objective: {metric: score, mode: max}
budget: {max_trials: 6, parallelism: 6}
sampler: {type: random, seed: 3}
command: [run]
space:
  x: {type: float, low: 0.0, high: 1.0}
)");
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

}  // namespace
}  // namespace ladder::server
