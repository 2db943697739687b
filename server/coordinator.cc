// Coordinator: building and wiring the parts, recovery at start, stop and fail-stop, the periodic checks and the
// scheduling pass.
#include "server/coordinator.h"

#include <boost/asio/post.hpp>
#include <filesystem>

#include "common/coordinator_loss_rule.h"
#include "common/log.h"
#include "server/store/sqlite_db.h"
#include "common/wall_clock.h"
#include "server/log_component.h"

namespace ladder::server {

Coordinator::Coordinator(boost::asio::io_context& loop, store::Store& store, CoordinatorOptions options)
    : loop_(loop),
      store_(store),
      opt_(std::move(options)),
      sched_(opt_.scheduling),
      hub_(store),
      outbox_(loop, store, opt_.flush_interval, opt_.ack_delay),
      nodes_(store, sched_, hub_, opt_, [this] { RequestSchedule(); }),
      trials_(store, sched_, nodes_, outbox_, hub_, opt_, [this] { RequestSchedule(); }),
      searches_(store, trials_, outbox_, hub_, [this] { RequestSchedule(); }),
      tick_timer_(loop) {
  if (opt_.checkpoint_root.empty()) opt_.checkpoint_root = store_.path() + ".checkpoints";
  std::error_code ec;
  auto abs = std::filesystem::absolute(opt_.checkpoint_root, ec);
  if (!ec) opt_.checkpoint_root = abs.lexically_normal().string();
  nodes_.set_listener(&trials_);
  trials_.set_owner(&searches_);
  // A hero run's own Slurm job (its workers in the search's pool) ends with the search: its workers are released.
  nodes_.set_pool_in_use([this](const std::string& pool) { return searches_.PoolInUse(pool); });
  searches_.set_on_ended([this](const v1::Search& s) {
    const std::string& pool = s.group().pool();
    if (!pool.empty() && !searches_.PoolInUse(pool)) {
      nodes_.ReleasePool(pool, "search " + std::to_string(s.id()) + " has ended");
    }
  });
  CommitOutbox::Hooks hooks;
  hooks.has_writes = [this] { return trials_.HasProgress() || hub_.HasPending(); };
  hooks.before_commit = [this] { trials_.WriteProgress(); };
  hooks.after_commit = [this] { hub_.Committed(); };
  hooks.on_fatal = [this](const std::string& what) { Fatal(what); };
  outbox_.SetHooks(std::move(hooks));
}

Coordinator::~Coordinator() = default;

void Coordinator::Start() {
  started_unix_ = WallNow();
  // Every part loads what it owns, in the order they depend on each other: searches (their specs), nodes (the
  // scheduler's cluster), trials (into both); then the scheduler takes back running groups and the searches
  // rebuild their samplers and stopping rules from the trials.
  searches_.Load();
  nodes_.Load();
  // Running trials wait for their workers longer than a worker cut off from the coordinator keeps their runs going
  // (common/coordinator_loss_rule.h): a run given away after this has stopped where it was.
  trials_.Load(Clock::now() + ReattachWindow(opt_.heartbeat_timeout));
  if (read_only()) {
    searches_.Recover();  // the best trials, as the dashboards show them; nothing is placed, nothing is written
    LogInfo(kLog, "serving " + store_.path() + " read-only: " + std::to_string(searches_.Ids().size()) +
                      " searches and " + std::to_string(trials_.count()) + " trials");
    stopped_ = true;  // no tick, no scheduling pass
    return;
  }
  trials_.AttachToScheduler();
  searches_.Recover();
  hub_.Record("coordinator_started", 0, 0, "");
  outbox_.Commit();
  if (trials_.count() > 0) {
    LogInfo(kLog, "recovered " + std::to_string(searches_.Ids().size()) + " searches and " +
                      std::to_string(trials_.count()) + " trials from " + store_.path());
  }
  outbox_.Start();
  ArmTick();
  RequestSchedule();
}

void Coordinator::Stop() {
  stopped_ = true;
  tick_timer_.cancel();
  outbox_.Stop();
  hub_.Clear();
}

void Coordinator::Fatal(const std::string& what) {
  if (outbox_.failed()) return;
  stopped_ = true;
  tick_timer_.cancel();
  outbox_.Abandon();
  hub_.Clear();  // journal entries of the dropped batch never reach a watcher
  LogError(kLog, "the database failed: " + what +
                     "; the coordinator stops (what it holds in memory may be ahead of what is stored; a restart "
                     "recovers from the database, and workers resend what was not acknowledged)");
  if (opt_.on_fatal) opt_.on_fatal(what);
}

void Coordinator::ArmTick() {
  if (stopped_) return;
  tick_timer_.expires_after(TickPeriod());
  tick_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    try {
      // How late this tick runs is how long the loop was away (stopped, busy, behind a backlog): the workers'
      // messages waited that long too, so a lease is not judged on it (NodeManager::LoopWasLate).
      const auto now = Clock::now();
      const auto late = now - tick_timer_.expiry();
      if (late > TickPeriod()) nodes_.LoopWasLate(now, late);
      Tick();
    } catch (const store::SqliteError& e) {
      return Fatal(e.what());
    } catch (const std::exception& e) {
      LogError(kLog, std::string("checking the workers' leases failed: ") + e.what());
    }
    ArmTick();
  });
}

void Coordinator::Tick() {
  auto now = Clock::now();
  store_.RenewLeaseIfDue();  // the coordinator's own lease on the database (store.h)
  nodes_.CheckLeases(now);
  trials_.CheckWatchdog(now);
  trials_.CheckReattachDeadlines(now);
  trials_.WarnInfeasibleAfterRegistration(now);
  if (sched_.queued() > 0) RequestSchedule();  // aging, and reservations coming due
}

void Coordinator::RequestSchedule() {
  if (schedule_posted_ || stopped_) return;
  schedule_posted_ = true;
  boost::asio::post(loop_, [this] { Schedule(); });
}

int Coordinator::Pause(const std::string& reason) {
  if (!paused_) LogInfo(kLog, "paused: " + reason + "; running trials stop through their checkpoints");
  paused_ = true;
  try {
    trials_.PreemptAll(reason);
  } catch (const store::SqliteError& e) {
    Fatal(e.what());
  }
  return trials_.Running();
}

void Coordinator::Schedule() {
  schedule_posted_ = false;
  if (stopped_ || paused_) return;
  try {
    searches_.CreateTrials();
    trials_.RunScheduler();
    searches_.FinishEnded();
    outbox_.CommitIfSending();  // the pass's starts leave now, not behind the loop's queue
  } catch (const store::SqliteError& e) {
    Fatal(e.what());
  } catch (const std::exception& e) {
    LogError(kLog, std::string("scheduling failed: ") + e.what());
  }
}

}  // namespace ladder::server
