#include "server/commit_outbox.h"

#include <boost/asio/post.hpp>
#include <algorithm>

#include "common/log.h"
#include "server/store/sqlite_db.h"
#include "server/log_component.h"

namespace ladder::server {

CommitOutbox::CommitOutbox(boost::asio::io_context& loop, store::Store& store,
                           std::chrono::milliseconds flush_interval, std::chrono::milliseconds ack_delay)
    : loop_(loop), store_(store), flush_interval_(flush_interval), ack_delay_(ack_delay), flush_timer_(loop) {}

void CommitOutbox::Start() { ArmFlushTimer(); }

void CommitOutbox::Stop() {
  stopped_ = true;
  flush_timer_.cancel();
  if (failed_) return;  // after a failure the open batch was dropped: nothing more is committed
  try {
    CommitAndSend(Acks::kAll);
  } catch (const std::exception& e) {
    LogError(kLog, std::string("final flush failed: ") + e.what());
  }
}

void CommitOutbox::Abandon() {
  failed_ = true;
  stopped_ = true;
  flush_timer_.cancel();
  store_.Abandon();
  acks_owed_.clear();
  next_ack_due_ = Clock::time_point::max();
  outbox_.clear();
}

void CommitOutbox::ArmFlushTimer() {
  if (stopped_) return;
  flush_timer_.expires_after(flush_interval_);
  flush_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    try {
      if (store_.pending_writes() || AnyAckDue(Clock::now()) || (hooks_.has_writes && hooks_.has_writes())) Commit();
    } catch (const store::SqliteError& e) {
      if (hooks_.on_fatal) hooks_.on_fatal(e.what());
      return;
    } catch (const std::exception& e) {
      LogError(kLog, std::string("flush failed: ") + e.what());
    }
    ArmFlushTimer();
  });
}

void CommitOutbox::OweAck(const std::shared_ptr<WorkerLink>& link, int64_t trial_id, int64_t epoch,
                          int64_t durable_seq, bool exit_durable, bool urgent) {
  if (!link) return;
  const auto now = Clock::now();
  auto [it, fresh] = acks_owed_.try_emplace(link.get());
  AckBatch& b = it->second;
  if (fresh) {
    b.link = link;
    b.due = now + ack_delay_;
  }
  if (exit_durable || urgent) b.due = now;
  next_ack_due_ = std::min(next_ack_due_, b.due);
  v1::TrialAck& a = b.trials[trial_id];
  if (a.assignment_epoch() != epoch) a.Clear();
  a.set_trial_id(trial_id);
  a.set_assignment_epoch(epoch);
  a.set_durable_seq(std::max(a.durable_seq(), durable_seq));
  a.set_exit_durable(a.exit_durable() || exit_durable);
}

void CommitOutbox::Commit() { CommitAndSend(Acks::kDue); }

void CommitOutbox::CommitAndSend(Acks acks) {
  if (failed_) return;  // the batch was dropped: committing now could store half of an operation
  if (hooks_.before_commit) hooks_.before_commit();
  store_.Flush();
  if (hooks_.after_commit) hooks_.after_commit();
  // Starts and cancels first: a worker waits on them, while an acknowledgement only lets it forget; each stream
  // writes in the order it is given, so a start queued behind an ack would wait for the ack's write.
  auto outbox = std::move(outbox_);
  outbox_.clear();
  for (auto& [link, msg] : outbox) link->Send(msg);
  // Every acknowledgement owed now rests on this commit; those not sent stay owed and rest on it still when they
  // leave with a later one (merged with what comes meanwhile).
  const auto now = Clock::now();
  if (acks == Acks::kNone || (acks == Acks::kDue && !AnyAckDue(now))) return;
  next_ack_due_ = Clock::time_point::max();
  for (auto it = acks_owed_.begin(); it != acks_owed_.end();) {
    AckBatch& batch = it->second;
    if (acks == Acks::kDue && batch.due > now) {
      next_ack_due_ = std::min(next_ack_due_, batch.due);
      ++it;
      continue;
    }
    v1::CoordinatorMessage msg;
    for (auto& [id, a] : batch.trials) *msg.mutable_ack()->add_trials() = std::move(a);
    batch.link->Send(msg);
    it = acks_owed_.erase(it);
  }
}

void CommitOutbox::CommitIfSending() {
  if (outbox_.empty() || stopped_ || failed_) return;
  CommitAndSend(Acks::kNone);
}

void CommitOutbox::SendAfterCommit(const std::shared_ptr<WorkerLink>& link, v1::CoordinatorMessage msg) {
  outbox_.emplace_back(link, std::move(msg));
  if (commit_posted_ || stopped_) return;
  commit_posted_ = true;
  boost::asio::post(loop_, [this] {
    commit_posted_ = false;
    if (stopped_ || outbox_.empty()) return;
    try {
      Commit();
    } catch (const store::SqliteError& e) {
      if (hooks_.on_fatal) hooks_.on_fatal(e.what());
    } catch (const std::exception& e) {
      LogError(kLog, std::string("commit before sending starts/cancels failed: ") + e.what());
    }
  });
}

}  // namespace ladder::server
