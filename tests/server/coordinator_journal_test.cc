// The journal on the Watch stream: entries reach watchers once committed, a watcher resumes after the last entry
// it saw (also across a coordinator restart), and a new one can ask for the latest few.
#include "tests/server/coordinator_fixture.h"

namespace ladder::server {
namespace {

using CoordinatorJournalTest = CoordinatorTest;

std::vector<v1::JournalEntry> Journal(const std::vector<v1::Event>& events) {
  std::vector<v1::JournalEntry> out;
  for (const auto& e : events) {
    if (e.kind() == v1::Event::JOURNAL) out.push_back(e.journal());
  }
  return out;
}

std::vector<std::string> Kinds(const std::vector<v1::JournalEntry>& entries) {
  std::vector<std::string> out;
  for (const auto& e : entries) out.push_back(e.kind());
  return out;
}

TEST_F(CoordinatorJournalTest, AWatcherHearsWhatHappenedInWordsOnceItIsCommitted) {
  std::vector<v1::Event> seen;
  coord_->AddWatcher(v1::WatchRequest(), [&](const v1::Event& e) { seen.push_back(e); });
  auto a = Connect("a", 1);
  EXPECT_TRUE(Journal(seen).empty()) << "worker_up is not committed yet (the flush timer has not run)";
  const int64_t sid = CreateSearch();  // commits: worker_up and search_created go out, in order
  auto j = Journal(seen);
  ASSERT_GE(j.size(), 2u);
  EXPECT_EQ(j[0].kind(), "worker_up");
  EXPECT_EQ(j[0].detail(), "a");
  EXPECT_EQ(j[0].search_id(), 0);
  EXPECT_EQ(j[1].kind(), "search_created");
  EXPECT_EQ(j[1].search_id(), sid);
  EXPECT_GT(j[1].seq(), j[0].seq());
  // A lost node: its trial's requeue is said with the reason.
  auto s = a->Starts().at(0);
  coord_->OnWorkerGone(a, "connection reset");
  loop_.restart();
  loop_.run_for(std::chrono::milliseconds(120));  // past the flush interval: the batch is committed
  auto kinds = Kinds(Journal(seen));
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "trial_requeued"), kinds.end());
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "worker_down"), kinds.end());
  for (const auto& e : Journal(seen)) {
    if (e.kind() == "trial_requeued") {
      EXPECT_EQ(e.trial_id(), s.trial_id());
      EXPECT_NE(e.detail().find("connection reset"), std::string::npos) << e.detail();
    }
  }
}

TEST_F(CoordinatorJournalTest, AWatcherResumesAfterTheLastEntryItSawAcrossARestart) {
  auto a = Connect("a", 1);
  const int64_t sid = CreateSearch();
  std::vector<v1::Event> first;
  v1::WatchRequest tail;
  tail.set_search_id(sid);
  tail.set_journal_tail(1);
  coord_->AddWatcher(tail, [&](const v1::Event& e) { first.push_back(e); });
  auto j = Journal(first);
  ASSERT_EQ(j.size(), 1u) << "journal_tail: the latest entry only";
  const int64_t last_seen = j[0].seq();
  // More happens while nobody watches; the coordinator restarts.
  Report(a, a->Starts().at(0), 0.5);
  Close();
  Open();
  std::vector<v1::Event> resumed;
  v1::WatchRequest resume;
  resume.set_search_id(sid);
  resume.set_after_journal_seq(last_seen);
  coord_->AddWatcher(resume, [&](const v1::Event& e) { resumed.push_back(e); });
  auto r = Journal(resumed);
  ASSERT_FALSE(r.empty());
  EXPECT_GT(r.front().seq(), last_seen);
  for (size_t i = 1; i < r.size(); ++i) EXPECT_GT(r[i].seq(), r[i - 1].seq());
  auto kinds = Kinds(r);
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "trial_completed"), kinds.end());
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "coordinator_started"), kinds.end()) << "nodes' and the "
                                                                                           "coordinator's entries "
                                                                                           "go to every watcher";
}

}  // namespace
}  // namespace ladder::server
