#pragma once
// CommitOutbox: the store's batch and everything that waits for it to be committed.
//
// The rule it enforces: nothing leaves the coordinator before the commit it rests on. Acknowledgements of metric
// points and exits (a worker forgets what is acknowledged) and the starts and cancels of trials (a worker acts on
// them) are queued here and sent by Commit() only after Store::Flush() returned: a coordinator crash can never
// forget something a worker was told. Commits are batched: the flush timer commits every flush_interval, and a
// queued start or cancel posts one commit to run after the current handler.
//
// Acknowledgements only let a worker forget, so a stream's are held (merged) until one of them is due: an exit's
// at once (the worker keeps the run until then), one the worker asked for (MetricReport.ack_wanted: its window is
// half full) at once, the others ack_delay after the first was owed. A trial's metric points then cost one
// acknowledgement message with its exit instead of one per flush interval (with thousands of short trials, most
// of the coordinator's messages were these).
//
// Fail-stop: a store write or commit that throws SqliteError is fatal (the batch may hold half an operation):
// Abandon() drops the batch, the acknowledgements and the outbox, and nothing is committed or sent afterwards.
// The flush timer and the posted commit report such a failure through on_fatal.
//
// Owns: the acks owed per worker stream, the outbox of starts/cancels, the flush timer. Does not know trials:
// writes that other parts keep in memory between commits (a trial's metric count) reach the batch through the
// before_commit hook.
// Thread: the coordinator's loop.
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ladder/v1/ladder.pb.h"
#include "server/store/store.h"
#include "server/worker_link.h"

namespace ladder::server {

class CommitOutbox {
 public:
  struct Hooks {
    // Whether before_commit has anything to write (the flush timer commits only when something waits).
    std::function<bool()> has_writes;
    // Writes what other parts batch in memory into the store's open batch, just before it is committed.
    std::function<void()> before_commit;
    // After a commit, before the acknowledgements and the outbox are sent.
    std::function<void()> after_commit;
    // The database failed during a commit this class started (the timer's or a posted one).
    std::function<void(const std::string&)> on_fatal;
  };

  // ack_delay: how long a stream's acknowledgements of metric points may wait for one that is due (0: none wait).
  CommitOutbox(boost::asio::io_context& loop, store::Store& store, std::chrono::milliseconds flush_interval,
               std::chrono::milliseconds ack_delay = std::chrono::milliseconds(0));

  void SetHooks(Hooks hooks) { hooks_ = std::move(hooks); }
  // Arms the flush timer.
  void Start();
  // Cancels the timer and commits what is open (unless the database failed).
  void Stop();
  // After a database failure: drops the open batch and everything waiting; commits and sends nothing more.
  void Abandon();
  bool failed() const { return failed_; }

  // Owes `link` an acknowledgement of the trial's points up to durable_seq (and of its exit) once the current
  // batch is committed. It leaves with the first commit after it is due: an exit's or an urgent one's at once,
  // the others ack_delay after the stream's oldest unsent one was owed.
  void OweAck(const std::shared_ptr<WorkerLink>& link, int64_t trial_id, int64_t epoch, int64_t durable_seq,
              bool exit_durable, bool urgent = false);
  // Queues a start or cancel; it is sent after the next commit (one is posted to run after this handler).
  void SendAfterCommit(const std::shared_ptr<WorkerLink>& link, v1::CoordinatorMessage msg);
  // Commits the store's batch (after before_commit), then sends the outbox and the acknowledgements that are due.
  // Throws SqliteError when the database fails.
  void Commit();
  // Commits now when starts or cancels wait (the scheduling pass's, at its end and every starts_per_commit
  // launches): a posted commit would wait behind every worker message queued on the loop meanwhile (thousands, with
  // thousands of workers). Sends the starts and cancels only: the acknowledgements owed, committed by it too, leave
  // with the next commit, merged with what comes meanwhile (one message per stream per flush, however many passes).
  void CommitIfSending();

 private:
  using Clock = std::chrono::steady_clock;
  // acks: none (the starts and cancels only), those that are due, or every one (the final commit).
  enum class Acks { kNone, kDue, kAll };
  void CommitAndSend(Acks acks);
  struct AckBatch {
    std::shared_ptr<WorkerLink> link;
    std::map<int64_t, v1::TrialAck> trials;
    Clock::time_point due;  // when it leaves with a commit, at the latest
  };
  bool AnyAckDue(Clock::time_point now) const { return !acks_owed_.empty() && now >= next_ack_due_; }
  void ArmFlushTimer();

  boost::asio::io_context& loop_;
  store::Store& store_;
  std::chrono::milliseconds flush_interval_, ack_delay_;
  Hooks hooks_;
  boost::asio::steady_timer flush_timer_;
  bool stopped_ = false, failed_ = false, commit_posted_ = false;
  std::map<const WorkerLink*, AckBatch> acks_owed_;
  Clock::time_point next_ack_due_ = Clock::time_point::max();  // the earliest `due` in acks_owed_
  std::vector<std::pair<std::shared_ptr<WorkerLink>, v1::CoordinatorMessage>> outbox_;
};

}  // namespace ladder::server
