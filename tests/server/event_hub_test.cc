// EventHub: who receives which event, and the sequence numbers.
#include "server/event_hub.h"

#include <gtest/gtest.h>

#include "tests/support/process.h"
#include <unistd.h>

#include <filesystem>
#include <thread>
#include <memory>
#include <vector>

namespace ladder::server {
namespace {

v1::Trial TrialOf(int64_t search, int64_t id) {
  v1::Trial t;
  t.set_search_id(search);
  t.set_id(id);
  return t;
}

class EventHubTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::make_unique<store::Store>((dir_ / "ladder.db").string());
  }
  void TearDown() override {
    store_.reset();
  }
  testing::TempDir dir_{"hub"};
  std::unique_ptr<store::Store> store_;
};

TEST_F(EventHubTest, EventsNobodyHearsTakeNoSequenceNumber) {
  EventHub hub(*store_);
  hub.Trial(TrialOf(1, 1));
  hub.Trial(TrialOf(1, 2));
  std::vector<v1::Event> got;
  v1::Event snap;
  snap.set_kind(v1::Event::SEARCH_UPDATED);
  hub.Subscribe(0, [&](const v1::Event& e) { got.push_back(e); }, {snap});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].seq(), 0);  // the snapshot carries the current sequence number
  v1::Search s;
  s.set_id(1);
  s.set_spec_yaml("secret: yes");
  hub.Search(s);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].seq(), 1);
  EXPECT_GT(got[1].time_unix(), 0);
  EXPECT_TRUE(got[1].search().spec_yaml().empty());  // a spec may carry credentials in its env
}

// A search completes under a watcher, which leaves with an update held back; a probe reopens the search while nobody
// watches; the next watcher starts from the running search and must not then hear the held-back "completed".
TEST_F(EventHubTest, AnUpdateHeldBackForAWatcherThatLeftNeverReachesTheNextOne) {
  EventHub hub(*store_);
  v1::Search s;
  s.set_id(1);
  s.set_state(v1::SEARCH_RUNNING);
  std::vector<v1::Event> first;
  const int64_t w1 = hub.Subscribe(1, [&](const v1::Event& e) { first.push_back(e); }, {});
  s.set_state(v1::SEARCH_COMPLETED);
  hub.Search(s);  // a state change: at once
  s.set_completed(5);
  hub.Search(s);  // the same state: held back for the next commit
  ASSERT_EQ(first.size(), 1u);
  hub.Unsubscribe(w1);
  s.set_state(v1::SEARCH_RUNNING);  // reopened, nobody watching
  hub.Search(s);
  std::vector<v1::Event> second;
  v1::Event snap;
  snap.set_kind(v1::Event::SEARCH_UPDATED);
  *snap.mutable_search() = s;
  hub.Subscribe(1, [&](const v1::Event& e) { second.push_back(e); }, {snap});
  hub.Committed();
  for (const auto& e : second) EXPECT_EQ(e.search().state(), v1::SEARCH_RUNNING) << e.DebugString();
  s.set_state(v1::SEARCH_COMPLETED);  // its probe ended: heard at once
  hub.Search(s);
  ASSERT_FALSE(second.empty());
  EXPECT_EQ(second.back().search().state(), v1::SEARCH_COMPLETED);
}

TEST_F(EventHubTest, ASearchWatcherGetsItsSearchAndEveryWorkerAClusterWatcherNoMetrics) {
  EventHub hub(*store_);
  std::vector<v1::Event> one, all;
  hub.Subscribe(1, [&](const v1::Event& e) { one.push_back(e); }, {});
  const int64_t all_id = hub.Subscribe(0, [&](const v1::Event& e) { all.push_back(e); }, {});
  hub.Trial(TrialOf(1, 10));
  hub.Trial(TrialOf(2, 20));
  hub.Metrics(TrialOf(1, 10), v1::MetricPoint());
  hub.Committed();  // a point goes out once the batch that stores it is committed
  v1::WorkerInfo w;
  w.set_node_id("n1");
  hub.Worker(w);
  ASSERT_EQ(one.size(), 3u);  // trial 10, its metrics, the worker
  EXPECT_EQ(one[0].trial().id(), 10);
  EXPECT_EQ(one[1].kind(), v1::Event::TRIAL_METRICS);
  EXPECT_EQ(one[2].worker().node_id(), "n1");
  ASSERT_EQ(all.size(), 3u);  // both trials and the worker, not the metric point
  for (const auto& e : all) EXPECT_NE(e.kind(), v1::Event::TRIAL_METRICS);
  hub.Unsubscribe(all_id);
  w.set_state(v1::WORKER_DOWN);  // a change of state goes out at once (busy slots alone are coalesced)
  hub.Worker(w);
  EXPECT_EQ(all.size(), 3u);
  EXPECT_EQ(one.size(), 4u);
}

TEST_F(EventHubTest, MetricPointsAreSentAfterTheCommitTheNewestPerTrial) {
  EventHub hub(*store_);
  std::vector<v1::Event> got;
  hub.Subscribe(1, [&](const v1::Event& e) { got.push_back(e); }, {});
  for (int step = 1; step <= 3; ++step) {
    v1::MetricPoint p;
    p.set_step(step);
    hub.Metrics(TrialOf(1, 10), p);
  }
  v1::MetricPoint other;
  other.set_step(7);
  hub.Metrics(TrialOf(1, 11), other);
  EXPECT_TRUE(got.empty()) << "nothing before the commit";
  hub.Committed();
  ASSERT_EQ(got.size(), 2u) << "one event per trial";
  EXPECT_EQ(got[0].trial().id(), 10);
  EXPECT_EQ(got[0].metrics().step(), 3) << "the newest point";
  EXPECT_EQ(got[1].metrics().step(), 7);
  hub.Committed();
  EXPECT_EQ(got.size(), 2u) << "sent once";
  // Within the interval a newer point waits; after it, it goes out.
  v1::MetricPoint later;
  later.set_step(4);
  hub.Metrics(TrialOf(1, 10), later);
  hub.Committed();
  EXPECT_EQ(got.size(), 2u);
  EXPECT_TRUE(hub.HasPending());
  std::this_thread::sleep_for(EventHub::kMetricsInterval);
  hub.Committed();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[2].metrics().step(), 4);
  EXPECT_FALSE(hub.HasPending());
}

TEST_F(EventHubTest, AJournalEntryIsStoredAtOnceAndSentOnlyOnceCommitted) {
  EventHub hub(*store_);
  std::vector<v1::Event> got;
  hub.Subscribe(2, [&](const v1::Event& e) { got.push_back(e); }, {});
  hub.Record("trial_requeued", 2, 7, "worker a disconnected");
  hub.Record("trial_requeued", 3, 8, "another search's");
  hub.Record("worker_down", 0, 0, "a: lease expired");
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(store_->LoadJournal(0, 0, 10).size(), 3u);  // in the open batch
  hub.Committed();
  ASSERT_EQ(got.size(), 2u);  // its search's entry and the node's, not search 3's
  EXPECT_EQ(got[0].journal().kind(), "trial_requeued");
  EXPECT_EQ(got[0].journal().trial_id(), 7);
  EXPECT_EQ(got[1].journal().search_id(), 0);
  EXPECT_EQ(got[1].journal().seq(), store_->LoadJournal(0, 0, 1).at(0).seq());
  hub.Record("trial_failed", 2, 7, "dropped with its batch");
  hub.Clear();  // a database failure: the batch is dropped, its entries never reach anyone
  hub.Committed();
  EXPECT_EQ(got.size(), 2u);
}

// A search's counts change with every trial that starts or ends: such updates are coalesced like metric points,
// while a change of its state (the search ended) goes out at once and replaces what waited.
TEST_F(EventHubTest, ASearchsCountsAreCoalescedItsStateIsNot) {
  EventHub hub(*store_);
  std::vector<v1::Event> got;
  hub.Subscribe(0, [&](const v1::Event& e) { got.push_back(e); }, {});
  v1::Search s;
  s.set_id(1);
  s.set_state(v1::SEARCH_RUNNING);
  hub.Search(s);
  ASSERT_EQ(got.size(), 1u) << "the first update of a search goes out at once";
  for (int running = 1; running <= 3; ++running) {
    s.set_running(running);
    hub.Search(s);
  }
  EXPECT_EQ(got.size(), 1u) << "counts only: they wait";
  EXPECT_TRUE(hub.HasPending()) << "the commit timer keeps going until they are out";
  std::this_thread::sleep_for(EventHub::kMetricsInterval);
  hub.Committed();
  ASSERT_EQ(got.size(), 2u) << "the newest of the three";
  EXPECT_EQ(got[1].search().running(), 3);
  EXPECT_FALSE(hub.HasPending());
  s.set_running(2);
  hub.Search(s);  // waits
  s.set_state(v1::SEARCH_COMPLETED);
  s.set_running(0);
  hub.Search(s);
  ASSERT_EQ(got.size(), 3u) << "a state change goes out at once";
  EXPECT_EQ(got[2].search().state(), v1::SEARCH_COMPLETED);
  std::this_thread::sleep_for(EventHub::kMetricsInterval);
  hub.Committed();
  EXPECT_EQ(got.size(), 3u) << "the older counts it replaced never follow it";
}

}  // namespace
}  // namespace ladder::server
