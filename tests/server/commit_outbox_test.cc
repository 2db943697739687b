// CommitOutbox: nothing leaves before the commit it rests on; acknowledgements merge; a failure drops everything.
#include "server/commit_outbox.h"

#include <gtest/gtest.h>

#include "tests/support/process.h"
#include <unistd.h>

#include <filesystem>

#include "server/store/sqlite_db.h"
#include "tests/server/coordinator_fixture.h"

namespace ladder::server {
namespace {

class CommitOutboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::make_unique<store::Store>((dir_ / "ladder.db").string());
    outbox_ = std::make_unique<CommitOutbox>(loop_, *store_, std::chrono::milliseconds(50));
  }
  void TearDown() override {
    outbox_.reset();
    store_.reset();
  }
  // Events of this kind in the database file, as another connection sees them.
  int64_t StoredEvents(const std::string& kind) {
    store::Db db((dir_ / "ladder.db").string(), /*quick_check=*/false);
    auto& st = db.Prepare("SELECT count(*) FROM events WHERE kind = ?");
    st.Bind(1, kind);
    return st.Step() ? st.Int(0) : -1;
  }
  static v1::CoordinatorMessage Cancel(int64_t trial) {
    v1::CoordinatorMessage m;
    m.mutable_cancel()->set_trial_id(trial);
    return m;
  }

  boost::asio::io_context loop_;
  testing::TempDir dir_{"outbox"};
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<CommitOutbox> outbox_;
};

// Records, at each send, how many "decided" events another connection sees in the database.
class CheckingLink : public FakeLink {
 public:
  explicit CheckingLink(std::function<int64_t()> stored) : stored_(std::move(stored)) {}
  void Send(const v1::CoordinatorMessage& m) override {
    stored_at_send.push_back(stored_());
    FakeLink::Send(m);
  }
  std::vector<int64_t> stored_at_send;

 private:
  std::function<int64_t()> stored_;
};

TEST_F(CommitOutboxTest, AStartOrCancelLeavesOnlyAfterTheCommitOfWhatItRestsOn) {
  auto link = std::make_shared<CheckingLink>([this] { return StoredEvents("decided"); });
  store_->AppendEvent("decided", 0, 0, "", 1.0);
  size_t pending_at_send = 99;
  CommitOutbox::Hooks hooks;
  hooks.before_commit = [&] { pending_at_send = store_->pending_writes(); };
  outbox_->SetHooks(std::move(hooks));
  outbox_->SendAfterCommit(link, Cancel(7));
  EXPECT_TRUE(link->sent.empty());  // not before the posted commit runs
  loop_.poll();
  ASSERT_EQ(link->sent.size(), 1u);
  EXPECT_EQ(link->sent[0].cancel().trial_id(), 7);
  EXPECT_EQ(pending_at_send, 1u);                      // the hook ran before the flush
  EXPECT_EQ(link->stored_at_send, std::vector<int64_t>{1});  // the write was committed before the send
}

TEST_F(CommitOutboxTest, AcknowledgementsOfOneStreamMergeIntoOneMessage) {
  auto link = std::make_shared<FakeLink>();
  outbox_->OweAck(link, 3, 1, 10, false);
  outbox_->OweAck(link, 3, 1, 4, true);   // an older sequence number does not go back
  outbox_->OweAck(link, 5, 2, 1, false);
  outbox_->OweAck(link, 5, 3, 2, false);  // a new assignment epoch starts over
  outbox_->Commit();
  ASSERT_EQ(link->sent.size(), 1u);
  const auto& acks = link->sent[0].ack().trials();
  ASSERT_EQ(acks.size(), 2);
  EXPECT_EQ(acks[0].trial_id(), 3);
  EXPECT_EQ(acks[0].durable_seq(), 10);
  EXPECT_TRUE(acks[0].exit_durable());
  EXPECT_EQ(acks[1].assignment_epoch(), 3);
  EXPECT_EQ(acks[1].durable_seq(), 2);
}

TEST_F(CommitOutboxTest, AfterADatabaseFailureNothingIsCommittedOrSent) {
  auto link = std::make_shared<FakeLink>();
  store_->AppendEvent("half of an operation", 0, 0, "", 1.0);
  outbox_->OweAck(link, 3, 1, 10, false);
  outbox_->SendAfterCommit(link, Cancel(7));
  outbox_->Abandon();
  EXPECT_TRUE(outbox_->failed());
  outbox_->Commit();
  loop_.poll();
  EXPECT_TRUE(link->sent.empty());
  EXPECT_EQ(StoredEvents("half of an operation"), 0);  // the batch was dropped, not committed
}

TEST_F(CommitOutboxTest, ACommitSendsStartsAndCancelsBeforeAcknowledgements) {
  auto link = std::make_shared<FakeLink>();
  outbox_->OweAck(link, 3, 1, 10, true);  // owed first...
  outbox_->SendAfterCommit(link, Cancel(7));  // ...but the worker waits on this one
  outbox_->Commit();
  ASSERT_EQ(link->sent.size(), 2u);
  EXPECT_TRUE(link->sent[0].has_cancel());
  EXPECT_TRUE(link->sent[1].has_ack());
}

TEST_F(CommitOutboxTest, CommitIfSendingCommitsWhenAStartOrCancelWaitsAndLeavesAcksToTheNext) {
  auto link = std::make_shared<FakeLink>();
  outbox_->OweAck(link, 3, 1, 10, false);
  outbox_->CommitIfSending();
  EXPECT_TRUE(link->sent.empty()) << "acknowledgements alone wait for the flush timer";
  outbox_->SendAfterCommit(link, Cancel(7));
  outbox_->CommitIfSending();
  ASSERT_EQ(link->sent.size(), 1u) << "the cancel at once, without running the loop";
  EXPECT_TRUE(link->sent[0].has_cancel());
  // The acknowledgement, committed too, leaves with the next commit (the flush), merged with what came meanwhile.
  outbox_->OweAck(link, 3, 1, 12, false);
  outbox_->Commit();
  ASSERT_EQ(link->sent.size(), 2u);
  ASSERT_TRUE(link->sent[1].has_ack());
  ASSERT_EQ(link->sent[1].ack().trials_size(), 1);
  EXPECT_EQ(link->sent[1].ack().trials(0).durable_seq(), 12);
}

// With an ack delay, a stream's acknowledgements of metric points wait (committed, still owed) until one of them is
// due: an exit's or an urgent one's leaves with the next commit and takes the stream's others with it, merged.
TEST_F(CommitOutboxTest, MetricAcknowledgementsWaitForTheDelayUnlessAnExitOrTheWorkerAsks) {
  CommitOutbox held(loop_, *store_, std::chrono::milliseconds(50), std::chrono::hours(1));
  auto a = std::make_shared<FakeLink>(), b = std::make_shared<FakeLink>(), c = std::make_shared<FakeLink>();
  held.OweAck(a, 3, 1, 10, false);
  held.OweAck(b, 4, 1, 7, false);
  held.Commit();
  EXPECT_TRUE(a->sent.empty()) << "points only: held for the delay";
  EXPECT_TRUE(b->sent.empty());
  held.OweAck(a, 3, 1, 12, false);
  held.OweAck(a, 5, 2, 0, true);  // another run on a's stream exits
  held.Commit();
  ASSERT_EQ(a->sent.size(), 1u) << "the exit's acknowledgement leaves at once, with what a's stream was owed";
  const auto& acks = a->sent[0].ack().trials();
  ASSERT_EQ(acks.size(), 2);
  EXPECT_EQ(acks[0].trial_id(), 3);
  EXPECT_EQ(acks[0].durable_seq(), 12);
  EXPECT_FALSE(acks[0].exit_durable());
  EXPECT_TRUE(acks[1].exit_durable());
  EXPECT_TRUE(b->sent.empty()) << "another stream's are not due";
  held.OweAck(c, 6, 1, 50, false, /*urgent=*/true);  // MetricReport.ack_wanted: the worker's window is half full
  held.Commit();
  ASSERT_EQ(c->sent.size(), 1u);
  EXPECT_EQ(c->sent[0].ack().trials(0).durable_seq(), 50);
  EXPECT_TRUE(b->sent.empty());
  held.Stop();  // the final commit sends every acknowledgement owed
  ASSERT_EQ(b->sent.size(), 1u);
  EXPECT_EQ(b->sent[0].ack().trials(0).durable_seq(), 7);
}

TEST_F(CommitOutboxTest, AHeldAcknowledgementLeavesWithTheFlushTimerOnceItsDelayHasPassed) {
  CommitOutbox held(loop_, *store_, std::chrono::milliseconds(20), std::chrono::milliseconds(150));
  held.Start();
  auto a = std::make_shared<FakeLink>();
  held.OweAck(a, 3, 1, 10, false);
  loop_.run_for(std::chrono::milliseconds(60));
  EXPECT_TRUE(a->sent.empty()) << "flushes ran, but the acknowledgement is not due yet";
  loop_.restart();
  loop_.run_for(std::chrono::milliseconds(600));
  ASSERT_EQ(a->sent.size(), 1u) << "a flush after the delay sends it, once";
  EXPECT_EQ(a->sent[0].ack().trials(0).durable_seq(), 10);
  held.Stop();
}

}  // namespace
}  // namespace ladder::server
