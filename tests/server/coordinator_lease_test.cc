// Leases are judged on the coordinator's own time: a stall of its loop (a long handler, a backlog, a SIGSTOP of the
// process) held the workers' heartbeats back as long, so it expires no lease; a worker that stays silent once the
// loop runs again still does. The heartbeat interval, and the lease with it, grow with the fleet.
#include <thread>
#include <vector>

#include "tests/server/coordinator_fixture.h"

namespace ladder::server {
namespace {

void Heartbeat(Coordinator& coord, const std::shared_ptr<FakeLink>& link) {
  v1::WorkerMessage m;
  m.mutable_heartbeat();
  coord.OnWorkerMessage(link, m);
}

v1::WorkerState StateOf(Coordinator& coord, const std::string& node) {
  v1::ServerInfoResponse info;
  coord.ServerInfo({}, &info);
  for (const auto& w : info.workers()) {
    if (w.node_id() == node) return w.state();
  }
  return v1::WORKER_STATE_UNSPECIFIED;
}

TEST_F(CoordinatorTest, AStallOfTheCoordinatorsOwnLoopExpiresNoLease) {
  auto a = Connect("a", 1);
  auto b = Connect("b", 1);
  // The loop does not run for three leases (the fixture's lease is 200 ms): nothing is handled, as under SIGSTOP.
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  // It runs again: the overdue checks come first, then the heartbeats that waited behind the stall.
  loop_.restart();
  loop_.run_for(std::chrono::milliseconds(50));
  Heartbeat(*coord_, a);
  Heartbeat(*coord_, b);
  Drain();
  EXPECT_FALSE(a->closed) << a->close_status.error_message();
  EXPECT_FALSE(b->closed) << b->close_status.error_message();
  EXPECT_EQ(StateOf(*coord_, "a"), v1::WORKER_UP);
  EXPECT_EQ(StateOf(*coord_, "b"), v1::WORKER_UP);
}

TEST_F(CoordinatorTest, AfterAStallAWorkerThatStaysSilentStillExpires) {
  auto a = Connect("a", 1);
  auto b = Connect("b", 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  // The loop is back; b heartbeats every 50 ms, a never again: a is down once a whole lease of the loop's own
  // time has passed, b stays up.
  for (int i = 0; i < 20 && !a->closed; ++i) {
    loop_.restart();
    loop_.run_for(std::chrono::milliseconds(50));
    Heartbeat(*coord_, b);
    Drain();
  }
  EXPECT_TRUE(a->closed);
  EXPECT_EQ(a->close_status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_EQ(StateOf(*coord_, "a"), v1::WORKER_DOWN);
  EXPECT_FALSE(b->closed) << b->close_status.error_message();
  EXPECT_EQ(StateOf(*coord_, "b"), v1::WORKER_UP);
}

// A worker says it is stopping (WorkerStopping) while it runs a trial, then goes silent without closing its stream
// (frozen, its host lost mid-shutdown): its lease still expires, as that stop — the node goes down with no failure
// counted and its trial goes back to the queue keeping its attempt, as when the stream of a stopping worker ends.
TEST_F(CoordinatorTest, ALeaseThatExpiresAfterTheWorkerSaidItIsStoppingIsNoFault) {
  auto a = Connect("a", 1);
  CreateSearch();
  const auto first = a->Starts().at(0);
  v1::WorkerMessage stopping;
  stopping.mutable_stopping()->set_reason("the worker is shutting down");
  coord_->OnWorkerMessage(a, stopping);
  Drain();
  EXPECT_EQ(StateOf(*coord_, "a"), v1::WORKER_DRAINING);
  // No heartbeats: run the loop past the 200 ms lease, in slices, until the expiry has been acted on.
  loop_.restart();
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
       std::chrono::steady_clock::now() < until &&
       !(a->closed && GetTrial(first.trial_id()).state() == v1::TRIAL_PENDING);) {
    loop_.run_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(a->closed) << "the lease of a stopping worker is judged too";
  const auto t = GetTrial(first.trial_id());
  EXPECT_EQ(t.state(), v1::TRIAL_PENDING) << t.error();
  EXPECT_EQ(t.attempt(), 0) << "its worker's stop, not the trial's failure";
  v1::ServerInfoResponse info;
  coord_->ServerInfo({}, &info);
  ASSERT_EQ(info.workers_size(), 1);
  EXPECT_EQ(info.workers(0).state(), v1::WORKER_DOWN);
  EXPECT_EQ(info.workers(0).recent_failures(), 0) << "no fault of the node";
}

int IntervalOf(const FakeLink& link) {  // the last heartbeat interval the worker was told (Registered or later)
  int ms = 0;
  for (const auto& m : link.sent) {
    if (m.has_registered()) ms = m.registered().heartbeat_interval_ms();
    if (m.has_heartbeat_interval()) ms = m.heartbeat_interval().heartbeat_interval_ms();
  }
  return ms;
}

TEST_F(CoordinatorTest, TheHeartbeatIntervalAndTheLeaseGrowWithTheFleet) {
  Close();
  options_.heartbeats_per_second = 40;  // the fixture's interval is 50 ms: 2 workers are 40 heartbeats a second
  Open();
  std::vector<std::shared_ptr<FakeLink>> links;
  for (int i = 0; i < 3; ++i) links.push_back(Connect("n" + std::to_string(i), 1));
  for (const auto& l : links) EXPECT_EQ(IntervalOf(*l), 50) << "3 workers want 75 ms: under twice the interval";
  // A fourth wants 100 ms: the interval doubles, and every connected worker is told.
  links.push_back(Connect("n3", 1));
  for (const auto& l : links) EXPECT_EQ(IntervalOf(*l), 100);
  EXPECT_EQ(links[3]->sent.front().registered().heartbeat_interval_ms(), 100) << "the new one in its Registered";
  // The lease doubles with it (400 ms): silent 300 ms, past the 200 ms lease of a 50 ms interval, they stay up...
  loop_.restart();
  loop_.run_for(std::chrono::milliseconds(300));
  for (const auto& l : links) EXPECT_FALSE(l->closed) << l->close_status.error_message();
  // ...and silent past 400 ms they are down.
  for (int i = 0; i < 40 && !links[0]->closed; ++i) {
    loop_.restart();
    loop_.run_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(links[0]->closed);
  EXPECT_EQ(StateOf(*coord_, "n0"), v1::WORKER_DOWN);
}

}  // namespace
}  // namespace ladder::server
