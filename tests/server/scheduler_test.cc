// NodeGroupScheduler: gang allocation, compact placement, EASY backfill, priorities and preemption, node
// states. Time is simulated: every call gets `now` explicitly.
#include "server/scheduler/scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <queue>
#include <random>
#include <set>

namespace ladder::scheduler {
namespace {

struct RackDef {
  std::string rack, sw;
  int nodes;
};

// Adds nodes n0, n1, ... rack by rack (so indices are rack-major), each with 6 GPUs and 6 slots.
void AddRacks(NodeGroupScheduler& s, const std::vector<RackDef>& racks, int gpus = 6) {
  int next = 0;
  for (const auto& r : racks) {
    for (int i = 0; i < r.nodes; ++i) {
      NodeSpec spec;
      spec.id = "n" + std::to_string(next++);
      spec.resources = {.cores = 42, .slots = 6, .gpus = gpus, .memory_bytes = int64_t{512} << 30, .pool = ""};
      spec.labels = {{"rack", r.rack}, {"switch", r.sw}};
      ASSERT_TRUE(s.AddNode(spec).ok());
    }
  }
}

GroupRequest Req(int64_t id, int nodes, std::optional<double> est = std::nullopt, Priority p = Priority::kSearch) {
  GroupRequest r;
  r.trial_id = id;
  r.nodes = nodes;
  r.ranks_per_node = 6;
  r.gpus_per_rank = 1;
  r.estimated_duration_s = est;
  r.priority = p;
  return r;
}

std::vector<int64_t> Started(const std::vector<Decision>& ds) {
  std::vector<int64_t> out;
  for (const auto& d : ds) {
    if (d.kind == Decision::Kind::kStart) out.push_back(d.trial_id);
  }
  return out;
}

std::vector<int64_t> Preempted(const std::vector<Decision>& ds) {
  std::vector<int64_t> out;
  for (const auto& d : ds) {
    if (d.kind == Decision::Kind::kPreempt) out.push_back(d.trial_id);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::set<std::string> RacksOf(const NodeGroupScheduler& s, const NodeGroup& g) {
  std::set<std::string> out;
  for (int n : g.nodes()) out.insert(s.cluster().rack_name(s.cluster().rack_of(n)));
  return out;
}

TEST(SchedulerTest, GangAllocationIsAllOrNothing) {
  NodeGroupScheduler s;
  AddRacks(s, {{"r0", "s0", 4}});
  ASSERT_TRUE(s.Submit(Req(1, 5), 0).ok());
  EXPECT_TRUE(s.Schedule(0).empty());
  // Nothing was taken for the request that does not fit.
  for (int n = 0; n < 4; ++n) EXPECT_TRUE(s.cluster().idle(n)) << n;
  EXPECT_TRUE(s.IsQueued(1));
  EXPECT_EQ(s.Feasible(Req(1, 5)).code(), Status::Code::kFailedPrecondition);

  // An infeasible request does not block the ones behind it.
  ASSERT_TRUE(s.Submit(Req(2, 4), 1).ok());
  auto ds = s.Schedule(1);
  ASSERT_EQ(Started(ds), std::vector<int64_t>{2});
  const NodeGroup& g = ds[0].group;
  ASSERT_EQ(g.size(), 4);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(g.slices[i].slots, (std::vector<int>{0, 1, 2, 3, 4, 5}));
    EXPECT_EQ(g.slices[i].gpus, (std::vector<int>{0, 1, 2, 3, 4, 5}));
    EXPECT_EQ(g.slices[i].first_rank, 6 * i);
  }
  EXPECT_EQ(g.ToString(), "n[0-3]:gpu[0-5]");
  EXPECT_EQ(s.GroupOf(2)->ToString(), "n[0-3]:gpu[0-5]");

  ASSERT_TRUE(s.Finish(2).ok());
  for (int n = 0; n < 4; ++n) EXPECT_TRUE(s.cluster().idle(n)) << n;
  EXPECT_EQ(s.Finish(2).code(), Status::Code::kNotFound);
}

// max_starts: a pass stops at that many starts, in queue order, and the next pass goes on where it stopped; the
// backfill part of a pass counts against it too.
TEST(SchedulerTest, APassStartsAtMostMaxStartsAndTheNextGoesOnInQueueOrder) {
  NodeGroupScheduler s;
  AddRacks(s, {{"r0", "s0", 6}});
  for (int64_t id = 1; id <= 5; ++id) ASSERT_TRUE(s.Submit(Req(id, 1), static_cast<double>(id)).ok());
  EXPECT_EQ(Started(s.Schedule(10, 2)), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(s.queued(), 3u);
  EXPECT_TRUE(s.Schedule(10, 0).empty());
  EXPECT_EQ(Started(s.Schedule(11, 2)), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(Started(s.Schedule(12)), (std::vector<int64_t>{5}));

  NodeGroupScheduler b;
  AddRacks(b, {{"r0", "s0", 4}});
  ASSERT_TRUE(b.Submit(Req(1, 2, 100.0), 0).ok());
  ASSERT_EQ(Started(b.Schedule(0)), std::vector<int64_t>{1});
  ASSERT_TRUE(b.Submit(Req(2, 4, 50.0), 1).ok());  // the head: waits for trial 1's nodes
  for (int64_t id = 3; id <= 5; ++id) ASSERT_TRUE(b.Submit(Req(id, 1, 10.0), static_cast<double>(id)).ok());
  EXPECT_EQ(Started(b.Schedule(5, 1)), std::vector<int64_t>{3}) << "one backfilled, at the bound";
  EXPECT_EQ(Started(b.Schedule(6, 5)), std::vector<int64_t>{4}) << "the last free node";
  EXPECT_TRUE(b.IsQueued(2));
  EXPECT_TRUE(b.IsQueued(5));
}

TEST(SchedulerTest, RejectsBadRequestsAndDuplicates) {
  NodeGroupScheduler s;
  AddRacks(s, {{"r0", "s0", 2}});
  GroupRequest bad = Req(1, 0);
  Status st = s.Submit(bad, 0);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("nodes must be >= 1"), std::string::npos) << st.message();
  EXPECT_EQ(s.Submit(Req(1, 1, -5.0), 0).code(), Status::Code::kInvalidArgument);
  ASSERT_TRUE(s.Submit(Req(1, 1), 0).ok());
  EXPECT_EQ(s.Submit(Req(1, 1), 0).code(), Status::Code::kAlreadyExists);
  ASSERT_EQ(Started(s.Schedule(0)), std::vector<int64_t>{1});
  EXPECT_EQ(s.Submit(Req(1, 1), 0).code(), Status::Code::kAlreadyExists);
  EXPECT_EQ(s.Cancel(1).code(), Status::Code::kNotFound);  // running, not queued
}

TEST(SchedulerTest, CompactPlacementFillsOneRackBestFit) {
  NodeGroupScheduler s;
  AddRacks(s, {{"ra", "s0", 4}, {"rb", "s0", 8}, {"rc", "s0", 6}});
  // 5 nodes fit in rb (8) or rc (6): best fit is rc, leaving rb whole.
  ASSERT_TRUE(s.Submit(Req(1, 5), 0).ok());
  auto ds = s.Schedule(0);
  ASSERT_EQ(Started(ds), std::vector<int64_t>{1});
  EXPECT_EQ(RacksOf(s, ds[0].group), std::set<std::string>{"rc"});
  EXPECT_EQ(s.RacksSpanned(ds[0].group), 1);
  // 8 nodes: only rb holds them in one rack.
  ASSERT_TRUE(s.Submit(Req(2, 8), 1).ok());
  ds = s.Schedule(1);
  ASSERT_EQ(Started(ds), std::vector<int64_t>{2});
  EXPECT_EQ(RacksOf(s, ds[0].group), std::set<std::string>{"rb"});
  // 5 more: 4 in ra + 1 in rc, two racks (never three).
  ASSERT_TRUE(s.Submit(Req(3, 5), 2).ok());
  ds = s.Schedule(2);
  ASSERT_EQ(Started(ds), std::vector<int64_t>{3});
  EXPECT_EQ(RacksOf(s, ds[0].group), (std::set<std::string>{"ra", "rc"}));
}

TEST(SchedulerTest, CompactPlacementSpansFewerRacksThanFirstFit) {
  std::map<PlacementPolicy, std::set<std::string>> racks;
  for (auto policy : {PlacementPolicy::kCompact, PlacementPolicy::kFirstFit}) {
    SchedulerOptions opt;
    opt.placement = policy;
    NodeGroupScheduler s(opt);
    AddRacks(s, {{"ra", "s0", 2}, {"rb", "s0", 4}});
    ASSERT_TRUE(s.Submit(Req(1, 4), 0).ok());
    auto ds = s.Schedule(0);
    ASSERT_EQ(Started(ds), std::vector<int64_t>{1});
    racks[policy] = RacksOf(s, ds[0].group);
  }
  EXPECT_EQ(racks[PlacementPolicy::kCompact], std::set<std::string>{"rb"});
  EXPECT_EQ(racks[PlacementPolicy::kFirstFit], (std::set<std::string>{"ra", "rb"}));  // lowest nodes first
}

TEST(SchedulerTest, PrefersOneSwitchInFewestRacks) {
  NodeGroupScheduler s;
  AddRacks(s, {{"r1", "s1", 5}, {"r2", "s1", 5}, {"r3", "s2", 8}, {"r4", "s2", 1}});
  // 10 nodes: only switch s1 holds them (r1 + r2); s2 has 9.
  ASSERT_TRUE(s.Submit(Req(1, 10), 0).ok());
  auto ds = s.Schedule(0);
  ASSERT_EQ(Started(ds), std::vector<int64_t>{1});
  EXPECT_EQ(RacksOf(s, ds[0].group), (std::set<std::string>{"r1", "r2"}));
  ASSERT_TRUE(s.Finish(1).ok());
  // 9 nodes: both switches need two racks; s2 (9 free) is the best fit.
  ASSERT_TRUE(s.Submit(Req(2, 9), 1).ok());
  ds = s.Schedule(1);
  ASSERT_EQ(Started(ds), std::vector<int64_t>{2});
  EXPECT_EQ(RacksOf(s, ds[0].group), (std::set<std::string>{"r3", "r4"}));
}

TEST(SchedulerTest, SingleNodeGroupsShareANodeBestFit) {
  NodeGroupScheduler s;
  AddRacks(s, {{"r0", "s0", 2}});
  GroupRequest a = Req(1, 1);
  a.ranks_per_node = 3;
  GroupRequest b = Req(2, 1);
  b.ranks_per_node = 2;
  ASSERT_TRUE(s.Submit(a, 0).ok());
  ASSERT_TRUE(s.Submit(b, 0).ok());
  auto ds = s.Schedule(0);
  ASSERT_EQ(Started(ds), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(ds[0].group.ToString(), "n0:gpu[0-2]");
  EXPECT_EQ(ds[1].group.ToString(), "n0:gpu[3-4]");  // same node: best fit, n1 stays whole
  EXPECT_TRUE(s.cluster().idle(1));
  // A 2-node group takes whole nodes: n0 is shared, so it must wait for n0.
  ASSERT_TRUE(s.Submit(Req(3, 2), 1).ok());
  EXPECT_TRUE(Started(s.Schedule(1)).empty());
  ASSERT_TRUE(s.Finish(1).ok());
  EXPECT_TRUE(Started(s.Schedule(2)).empty());
  ASSERT_TRUE(s.Finish(2).ok());
  EXPECT_EQ(Started(s.Schedule(3)), std::vector<int64_t>{3});
}

// The head of the queue gets a reservation; backfill uses only what does not delay it.
TEST(SchedulerTest, BackfillDoesNotDelayTheReservedHead) {
  NodeGroupScheduler s;
  AddRacks(s, {{"r0", "s0", 10}});
  ASSERT_TRUE(s.Submit(Req(1, 6, 100.0), 0).ok());  // A: 6 nodes until t=100
  ASSERT_EQ(Started(s.Schedule(0)), std::vector<int64_t>{1});
  ASSERT_TRUE(s.Submit(Req(2, 8, 50.0), 1).ok());    // H: the head, needs 8 → waits for A
  ASSERT_TRUE(s.Submit(Req(3, 2, 500.0), 2).ok());   // long: may only use unreserved nodes
  ASSERT_TRUE(s.Submit(Req(4, 4, 10.0), 3).ok());    // short but too big for what is left
  ASSERT_TRUE(s.Submit(Req(5, 2, 90.0), 4).ok());    // ends before t=100: may use reserved nodes
  ASSERT_TRUE(s.Submit(Req(6, 1), 5).ok());          // no estimate: conservative, nothing unreserved left
  auto ds = s.Schedule(10);
  EXPECT_EQ(Started(ds), (std::vector<int64_t>{3, 5}));
  ASSERT_TRUE(s.reservation().has_value());
  EXPECT_EQ(s.reservation()->trial_id, 2);
  EXPECT_DOUBLE_EQ(s.reservation()->start, 100.0);
  ASSERT_EQ(s.reservation()->nodes.size(), 8u);
  std::set<int> reserved(s.reservation()->nodes.begin(), s.reservation()->nodes.end());
  for (int n : s.GroupOf(3)->nodes()) EXPECT_FALSE(reserved.count(n)) << "long backfill on reserved node " << n;
  for (int n : s.GroupOf(1)->nodes()) EXPECT_TRUE(reserved.count(n)) << "A's nodes are reserved first";
  EXPECT_EQ(s.counters().backfilled, 2);

  // Trial 5 ends at 95, A at 100: H starts at exactly its reservation time.
  ASSERT_TRUE(s.Finish(5).ok());
  EXPECT_TRUE(Started(s.Schedule(95)).empty());  // 6 and 4 still must not take H's nodes
  ASSERT_TRUE(s.Finish(1).ok());
  ds = s.Schedule(100);
  ASSERT_FALSE(Started(ds).empty());
  EXPECT_EQ(Started(ds)[0], 2);
}

TEST(SchedulerTest, UpdateEstimateMovesTheReservation) {
  NodeGroupScheduler s;
  AddRacks(s, {{"r0", "s0", 4}});
  ASSERT_TRUE(s.Submit(Req(1, 4, 100.0), 0).ok());
  ASSERT_EQ(Started(s.Schedule(0)), std::vector<int64_t>{1});
  ASSERT_TRUE(s.Submit(Req(2, 4), 1).ok());
  s.Schedule(1);
  ASSERT_TRUE(s.reservation().has_value());
  EXPECT_DOUBLE_EQ(s.reservation()->start, 100.0);
  ASSERT_TRUE(s.UpdateEstimate(1, 300.0).ok());  // e.g. promoted to the next rung
  s.Schedule(2);
  ASSERT_TRUE(s.reservation().has_value());
  EXPECT_DOUBLE_EQ(s.reservation()->start, 300.0);
  EXPECT_EQ(s.UpdateEstimate(1, 0).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(s.UpdateEstimate(2, 10).code(), Status::Code::kNotFound);  // queued, not running
}

// A property over random workloads: with estimates that are upper bounds and one priority class, no head
// starts later than the first reservation it was given.
TEST(SchedulerTest, HeadsStartNoLaterThanTheirFirstReservation) {
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    NodeGroupScheduler s;
    AddRacks(s, {{"r0", "s0", 18}, {"r1", "s0", 18}, {"r2", "s1", 18}, {"r3", "s1", 18}});
    std::mt19937 rng(seed);
    std::vector<int> sizes = {1, 1, 1, 2, 2, 4, 8, 16, 32, 48};
    std::map<int64_t, double> actual;  // trial → actual duration
    using Ev = std::pair<double, int64_t>;
    std::priority_queue<Ev, std::vector<Ev>, std::greater<>> ends;
    std::map<int64_t, double> first_reservation, started_at;
    for (int64_t id = 1; id <= 400; ++id) {
      GroupRequest r = Req(id, sizes[rng() % sizes.size()]);
      double est = 10 + rng() % 200;
      r.estimated_duration_s = est;
      actual[id] = est * (0.2 + 0.8 * (rng() % 1000) / 1000.0);
      ASSERT_TRUE(s.Submit(r, 0).ok());
    }
    double now = 0;
    while (true) {
      for (const auto& d : s.Schedule(now)) {
        ASSERT_EQ(d.kind, Decision::Kind::kStart);
        started_at[d.trial_id] = now;
        ends.push({now + actual[d.trial_id], d.trial_id});
      }
      if (s.reservation()) first_reservation.emplace(s.reservation()->trial_id, s.reservation()->start);
      if (ends.empty()) break;
      now = ends.top().first;
      while (!ends.empty() && ends.top().first == now) {
        ASSERT_TRUE(s.Finish(ends.top().second).ok());
        ends.pop();
      }
    }
    EXPECT_EQ(s.queued(), 0u);
    EXPECT_EQ(started_at.size(), 400u);
    EXPECT_GT(first_reservation.size(), 10u) << "the workload should make heads wait";
    EXPECT_GT(s.counters().backfilled, 0);
    for (const auto& [trial, t] : first_reservation) {
      EXPECT_LE(started_at[trial], t + 1e-9) << "seed " << seed << " trial " << trial;
    }
  }
}

// Backfill visits request shapes, not requests: once a shape failed, every request needing as much or more
// is skipped without a placement attempt, and smaller ones behind them still start.
TEST(SchedulerTest, BackfillSkipsShapesDominatedByAFailure) {
  NodeGroupScheduler s;
  AddRacks(s, {{"r0", "s0", 18}, {"r1", "s0", 18}});
  ASSERT_TRUE(s.Submit(Req(1, 30, 100.0), 0).ok());
  ASSERT_EQ(Started(s.Schedule(0)), std::vector<int64_t>{1});
  ASSERT_TRUE(s.Submit(Req(2, 36, 100.0), 1).ok());  // the head: waits for trial 1
  int64_t id = 10;
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(s.Submit(Req(id++, 8, 1000.0), 2).ok());   // cannot fit
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(s.Submit(Req(id++, 12, 1000.0), 3).ok());  // dominated
  ASSERT_TRUE(s.Submit(Req(999, 1, 1000.0), 4).ok());
  int64_t examined_before = s.counters().examined;
  auto ds = s.Schedule(5);
  // Every free node is reserved for the head and the 1-node request would run past the reservation: nothing
  // starts, and the pass looked at a handful of requests, not 600.
  EXPECT_TRUE(Started(ds).empty());
  EXPECT_LE(s.counters().examined - examined_before, 5);
  // With room outside the reservation, the small one starts and the big ones are still skipped.
  ASSERT_TRUE(s.AddNode({.id = "extra", .resources = {.cores = 42, .slots = 6, .gpus = 6, .memory_bytes = 0, .pool = ""},
                         .labels = {{"rack", "r2"}}}).ok());
  examined_before = s.counters().examined;
  ds = s.Schedule(6);
  EXPECT_EQ(Started(ds), std::vector<int64_t>{999});
  EXPECT_LE(s.counters().examined - examined_before, 5);
  EXPECT_EQ(s.queued(), 601u);
}

TEST(SchedulerTest, StrictFifoWithoutBackfillWaitsForTheHead) {
  SchedulerOptions opt;
  opt.backfill = false;
  NodeGroupScheduler s(opt);
  AddRacks(s, {{"r0", "s0", 4}});
  ASSERT_TRUE(s.Submit(Req(1, 3, 100.0), 0).ok());
  ASSERT_TRUE(s.Submit(Req(2, 2, 100.0), 0).ok());
  ASSERT_TRUE(s.Submit(Req(3, 1, 1.0), 0).ok());
  EXPECT_EQ(Started(s.Schedule(0)), std::vector<int64_t>{1});  // 3 would fit, but FIFO stops at 2
  EXPECT_FALSE(s.reservation().has_value());
}

TEST(SchedulerTest, HigherClassPreemptsTheYoungestLowerClassGroups) {
  NodeGroupScheduler s;
  AddRacks(s, {{"r0", "s0", 8}});
  for (int64_t id = 1; id <= 4; ++id) {
    ASSERT_TRUE(s.Submit(Req(id, 2, 1000.0), id).ok());
    ASSERT_EQ(Started(s.Schedule(id)), std::vector<int64_t>{id});  // started at t = 1, 2, 3, 4
  }
  // A search-class request never preempts.
  ASSERT_TRUE(s.Submit(Req(10, 4, 10.0), 5).ok());
  EXPECT_TRUE(s.Schedule(5).empty());
  ASSERT_TRUE(s.Cancel(10).ok());

  ASSERT_TRUE(s.Submit(Req(20, 4, 3600.0, Priority::kHero), 6).ok());
  auto ds = s.Schedule(6);
  EXPECT_TRUE(Started(ds).empty());
  EXPECT_EQ(Preempted(ds), (std::vector<int64_t>{3, 4}));  // the two youngest
  for (const auto& d : ds) {
    if (d.kind == Decision::Kind::kPreempt) {
      EXPECT_EQ(d.for_trial_id, 20);
    }
  }
  EXPECT_TRUE(s.IsPreempting(3));
  EXPECT_TRUE(s.IsPreempting(4));
  EXPECT_FALSE(s.IsPreempting(1));
  // Until the victims have stopped, nothing more is preempted and nothing takes their nodes.
  ASSERT_TRUE(s.Submit(Req(30, 1, 5.0), 7).ok());
  ds = s.Schedule(7);
  EXPECT_TRUE(ds.empty());
  ASSERT_TRUE(s.Requeue(3, 900.0).ok());
  ASSERT_TRUE(s.Requeue(4, 900.0).ok());
  ds = s.Schedule(8);
  ASSERT_FALSE(Started(ds).empty());
  EXPECT_EQ(Started(ds)[0], 20);
  EXPECT_TRUE(s.IsQueued(3));
  EXPECT_TRUE(s.IsQueued(4));
  EXPECT_EQ(s.counters().preempted, 2);

  // The preempted trials resume (ahead of the later request 30: they keep their submit time).
  ASSERT_TRUE(s.Finish(20).ok());
  ds = s.Schedule(9);
  EXPECT_EQ(Started(ds), (std::vector<int64_t>{3, 4}));
  EXPECT_TRUE(s.IsQueued(30));
}

TEST(SchedulerTest, PreemptionVictimsAreCompact) {
  NodeGroupScheduler s;
  AddRacks(s, {{"ra", "s0", 4}, {"rb", "s0", 4}});
  // One 1-node search group per node, and a 2-node one.
  for (int64_t id = 1; id <= 6; ++id) {
    ASSERT_TRUE(s.Submit(Req(id, 1, 1000.0), 0).ok());
  }
  ASSERT_TRUE(s.Submit(Req(7, 2, 1000.0), 0).ok());
  ASSERT_EQ(Started(s.Schedule(0)).size(), 7u);
  ASSERT_TRUE(s.Submit(Req(10, 4, 100.0, Priority::kHero), 1).ok());
  auto ds = s.Schedule(1);
  auto victims = Preempted(ds);
  ASSERT_FALSE(victims.empty());
  std::set<std::string> racks;
  int nodes = 0;
  for (const auto& d : ds) {
    if (d.kind != Decision::Kind::kPreempt) continue;
    nodes += d.group.size();
    for (const auto& r : RacksOf(s, d.group)) racks.insert(r);
  }
  EXPECT_EQ(racks.size(), 1u) << "the hero's nodes come from one rack";
  EXPECT_EQ(nodes, 4);  // no more groups stopped than the hero needs
  for (int64_t v : victims) ASSERT_TRUE(s.Requeue(v).ok());
  ds = s.Schedule(2);
  ASSERT_FALSE(Started(ds).empty());
  EXPECT_EQ(Started(ds)[0], 10);
  EXPECT_EQ(s.RacksSpanned(*s.GroupOf(10)), 1);
}

TEST(SchedulerTest, PromotedPreemptsSearchButNotHero) {
  NodeGroupScheduler s;
  AddRacks(s, {{"r0", "s0", 4}});
  ASSERT_TRUE(s.Submit(Req(1, 2, 1000.0, Priority::kHero), 0).ok());
  ASSERT_TRUE(s.Submit(Req(2, 2, 1000.0, Priority::kSearch), 0).ok());
  ASSERT_EQ(Started(s.Schedule(0)), (std::vector<int64_t>{1, 2}));
  ASSERT_TRUE(s.Submit(Req(3, 4, 100.0, Priority::kPromoted), 1).ok());
  EXPECT_TRUE(s.Schedule(1).empty()) << "preempting the search group alone does not make room";
  ASSERT_TRUE(s.Cancel(3).ok());
  ASSERT_TRUE(s.Submit(Req(4, 2, 100.0, Priority::kPromoted), 2).ok());
  EXPECT_EQ(Preempted(s.Schedule(2)), std::vector<int64_t>{2});
}

TEST(SchedulerTest, AgingMovesLongWaitingSearchRequestsUp) {
  SchedulerOptions opt;
  opt.aging_interval_s = 100;
  opt.backfill = false;
  NodeGroupScheduler s(opt);
  AddRacks(s, {{"r0", "s0", 2}});
  ASSERT_TRUE(s.Submit(Req(1, 2, 1000.0), 0).ok());
  ASSERT_EQ(Started(s.Schedule(0)), std::vector<int64_t>{1});
  ASSERT_TRUE(s.Submit(Req(2, 2, 10.0, Priority::kSearch), 1).ok());
  ASSERT_TRUE(s.Submit(Req(3, 2, 10.0, Priority::kPromoted), 150).ok());
  ASSERT_TRUE(s.Finish(1).ok());
  // Trial 2 waited 199 s > 100 s: it now ranks as promoted, and is older than 3.
  EXPECT_EQ(Started(s.Schedule(200)), std::vector<int64_t>{2});

  NodeGroupScheduler fresh(opt);
  AddRacks(fresh, {{"r0", "s0", 2}});
  ASSERT_TRUE(fresh.Submit(Req(2, 2, 10.0, Priority::kSearch), 1).ok());
  ASSERT_TRUE(fresh.Submit(Req(3, 2, 10.0, Priority::kPromoted), 2).ok());
  EXPECT_EQ(Started(fresh.Schedule(50)), std::vector<int64_t>{3});  // not aged yet: class order
}

TEST(SchedulerTest, NodeDownReturnsAffectedGroupsAndIsNotUsed) {
  NodeGroupScheduler s;
  AddRacks(s, {{"r0", "s0", 4}});
  ASSERT_TRUE(s.Submit(Req(1, 2), 0).ok());
  GroupRequest small = Req(2, 1);
  small.ranks_per_node = 1;
  ASSERT_TRUE(s.Submit(small, 0).ok());
  auto ds = s.Schedule(0);
  ASSERT_EQ(Started(ds), (std::vector<int64_t>{1, 2}));
  int victim_node = s.GroupOf(1)->slices[1].node;
  std::vector<int64_t> affected;
  ASSERT_TRUE(s.SetNodeState(s.cluster().spec(victim_node).id, NodeState::kDown, &affected).ok());
  EXPECT_EQ(affected, std::vector<int64_t>{1});
  EXPECT_EQ(s.SetNodeState("nope", NodeState::kDown).code(), Status::Code::kNotFound);
  ASSERT_TRUE(s.Requeue(1).ok());
  // Three nodes are up, one of them shared with trial 2: the 2-node group gets the other two.
  ds = s.Schedule(1);
  ASSERT_EQ(Started(ds), std::vector<int64_t>{1});
  for (int n : ds[0].group.nodes()) {
    EXPECT_NE(n, victim_node);
    EXPECT_NE(n, s.GroupOf(2)->slices[0].node);
  }
  // A group that needs all four nodes waits until the node is back up.
  ASSERT_TRUE(s.Finish(1).ok());
  ASSERT_TRUE(s.Finish(2).ok());
  ASSERT_TRUE(s.Submit(Req(3, 4), 2).ok());
  EXPECT_TRUE(s.Schedule(2).empty());
  EXPECT_EQ(s.Feasible(Req(3, 4)).code(), Status::Code::kFailedPrecondition);
  ASSERT_TRUE(s.SetNodeState(s.cluster().spec(victim_node).id, NodeState::kUp).ok());
  EXPECT_EQ(Started(s.Schedule(3)), std::vector<int64_t>{3});
}

TEST(SchedulerTest, DrainingAndQuarantinedNodesTakeNoNewGroups) {
  NodeGroupScheduler s;
  AddRacks(s, {{"r0", "s0", 3}});
  GroupRequest one = Req(1, 1);
  ASSERT_TRUE(s.Submit(one, 0).ok());
  ASSERT_EQ(Started(s.Schedule(0)), std::vector<int64_t>{1});
  int n1 = s.GroupOf(1)->slices[0].node;
  std::vector<int64_t> affected;
  ASSERT_TRUE(s.SetNodeState(s.cluster().spec(n1).id, NodeState::kDraining, &affected).ok());
  EXPECT_TRUE(affected.empty());         // a draining node keeps its groups
  EXPECT_NE(s.GroupOf(1), nullptr);
  int other = n1 == 0 ? 1 : 0;
  ASSERT_TRUE(s.SetNodeState(s.cluster().spec(other).id, NodeState::kQuarantined, &affected).ok());
  EXPECT_TRUE(affected.empty());
  ASSERT_TRUE(s.Finish(1).ok());
  // Only one node is UP now.
  ASSERT_TRUE(s.Submit(Req(2, 2), 1).ok());
  ASSERT_TRUE(s.Submit(Req(3, 1), 1).ok());
  auto ds = s.Schedule(1);
  ASSERT_EQ(Started(ds), std::vector<int64_t>{3});
  int up = 3 - n1 - other;
  EXPECT_EQ(ds[0].group.nodes(), std::vector<int>{up});
  EXPECT_EQ(s.cluster().up_count(), 1);
}

TEST(SchedulerTest, AttachRestoresARunningGroupAfterRestart) {
  NodeGroupScheduler s;
  AddRacks(s, {{"r0", "s0", 3}});
  NodeGroup g;
  g.slices = {{.node = 1, .slots = {0, 1, 2, 3, 4, 5}, .gpus = {0, 1, 2, 3, 4, 5}, .first_rank = 0},
              {.node = 2, .slots = {0, 1, 2, 3, 4, 5}, .gpus = {0, 1, 2, 3, 4, 5}, .first_rank = 6}};
  ASSERT_TRUE(s.Attach(Req(7, 2, 100.0), g, 0).ok());
  EXPECT_EQ(s.GroupOf(7)->ToString(), "n[1-2]:gpu[0-5]");
  EXPECT_FALSE(s.cluster().idle(1));
  EXPECT_EQ(s.Attach(Req(8, 2), g, 0).code(), Status::Code::kFailedPrecondition);  // taken
  EXPECT_EQ(s.Attach(Req(7, 2), g, 0).code(), Status::Code::kAlreadyExists);
  EXPECT_EQ(s.Attach(Req(9, 3), g, 0).code(), Status::Code::kInvalidArgument);    // shape mismatch
  ASSERT_TRUE(s.Submit(Req(10, 2), 1).ok());
  EXPECT_TRUE(s.Schedule(1).empty());
  ASSERT_TRUE(s.Finish(7).ok());
  EXPECT_EQ(Started(s.Schedule(2)), std::vector<int64_t>{10});
}

TEST(SchedulerTest, HeterogeneousNodesOnlyEligibleOnesAreUsed) {
  NodeGroupScheduler s;
  AddRacks(s, {{"gpu", "s0", 2}}, 6);
  NodeSpec cpu;
  cpu.id = "cpu0";
  cpu.resources = {.cores = 64, .slots = 64, .gpus = 0, .memory_bytes = 0, .pool = ""};
  cpu.labels = {{"rack", "cpu"}};
  ASSERT_TRUE(s.AddNode(cpu).ok());
  ASSERT_TRUE(s.Submit(Req(1, 3), 0).ok());  // GPUs on 3 nodes: only 2 GPU nodes
  EXPECT_FALSE(s.Feasible(Req(1, 3)).ok());
  GroupRequest c = Req(2, 1);
  c.ranks_per_node = 32;
  c.gpus_per_rank = 0;
  ASSERT_TRUE(s.Submit(c, 0).ok());
  auto ds = s.Schedule(0);
  ASSERT_EQ(Started(ds), std::vector<int64_t>{2});
  EXPECT_EQ(ds[0].group.ToString(), "n2:slot[0-31]");
}

TEST(ClusterTest, NodeLifecycleErrors) {
  Cluster c;
  NodeSpec n;
  n.id = "a";
  EXPECT_TRUE(c.AddNode(n).ok());
  EXPECT_EQ(c.AddNode(n).code(), Status::Code::kAlreadyExists);
  NodeSpec bad;
  EXPECT_EQ(c.AddNode(bad).code(), Status::Code::kInvalidArgument);
  bad.id = "b";
  bad.resources.slots = 0;
  EXPECT_EQ(c.AddNode(bad).code(), Status::Code::kInvalidArgument);
  NodeSlice slice = c.Take(0, NodeNeed{}, 5, 0);
  NodeSpec bigger = n;
  bigger.resources.gpus = 4;
  EXPECT_EQ(c.UpdateNode(bigger).code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(c.RemoveNode("a").code(), Status::Code::kFailedPrecondition);
  c.Give(slice, NodeNeed{}, 5);
  EXPECT_TRUE(c.UpdateNode(bigger).ok());
  EXPECT_EQ(c.spec(0).resources.gpus, 4);
  EXPECT_TRUE(c.RemoveNode("a").ok());
  EXPECT_FALSE(c.IndexOf("a").has_value());
  EXPECT_EQ(c.node_count(), 0);
  EXPECT_TRUE(c.AddNode(n).ok());
  EXPECT_EQ(*c.IndexOf("a"), 0);  // the index comes back
  for (int i = 0; i < 5; ++i) {
    NodeSpec r;
    r.id = "r" + std::to_string(i);
    r.labels = {{"rack", "big"}};
    ASSERT_TRUE(c.AddNode(r).ok());
  }
  EXPECT_EQ(c.max_rack_size(), 5);
  EXPECT_EQ(c.IdealRacks(11), 3);
  ASSERT_TRUE(c.RemoveNode("r4").ok());
  EXPECT_EQ(c.max_rack_size(), 4);
}

TEST(NodeGroupTest, FormatsLikeRLite) {
  NodeGroup g;
  for (int n : {3, 4, 5, 6}) g.slices.push_back({.node = n, .slots = {0, 1, 2, 3, 4, 5}, .gpus = {0, 1, 2, 3, 4, 5}});
  EXPECT_EQ(g.ToString(), "n[3-6]:gpu[0-5]");
  g.slices.push_back({.node = 7, .slots = {0, 1}, .gpus = {0, 1}});
  g.slices.push_back({.node = 8, .slots = {0}, .gpus = {0}});
  g.slices.push_back({.node = 10, .slots = {0}, .gpus = {0}});
  EXPECT_EQ(g.ToString(), "n[3-6]:gpu[0-5] n7:gpu[0-1] n[8,10]:gpu0");
  NodeGroup cpu;
  cpu.slices.push_back({.node = 2, .slots = {0, 1, 2, 3}, .gpus = {}});
  EXPECT_EQ(cpu.ToString(), "n2:slot[0-3]");
  EXPECT_EQ(NodeGroup{}.ToString(), "");
  EXPECT_EQ(BracketIdSet({5}), "5");
  EXPECT_EQ(BracketIdSet({1, 2, 4}), "[1-2,4]");
}

// Pools (NodeResources::pool): a hero run's own Slurm job serves only the hero run, and the hero run only takes
// its job's nodes — even at hero priority it preempts nothing on the shared nodes.
TEST(SchedulerPoolTest, APoolsNodesServeOnlyItsRequestsAndItsRequestsOnlyItsNodes) {
  NodeGroupScheduler s;
  AddRacks(s, {{"r0", "s0", 2}});  // n0, n1: shared
  for (int i = 0; i < 2; ++i) {
    NodeSpec spec;
    spec.id = "hero" + std::to_string(i);
    spec.resources = {.cores = 42, .slots = 6, .gpus = 6, .memory_bytes = int64_t{512} << 30, .pool = "job-7"};
    spec.labels = {{"rack", "r9"}, {"switch", "s0"}, {"pool", "job-7"}};
    ASSERT_TRUE(s.AddNode(spec).ok());
  }
  // Three one-node search requests: two fit on the shared nodes, the third waits beside two idle pool nodes.
  for (int64_t id : {1, 2, 3}) ASSERT_TRUE(s.Submit(Req(id, 1), 0).ok());
  auto first = s.Schedule(0);
  ASSERT_EQ(Started(first), (std::vector<int64_t>{1, 2}));
  for (const auto& d : first) {
    for (int n : d.group.nodes()) EXPECT_EQ(s.cluster().spec(n).resources.pool, "") << d.trial_id;
  }
  EXPECT_TRUE(s.IsQueued(3));
  // The hero run (2 nodes, hero priority, pool job-7) starts on the pool's nodes and preempts nobody.
  GroupRequest hero = Req(10, 2, std::nullopt, Priority::kHero);
  hero.pool = "job-7";
  ASSERT_TRUE(s.Feasible(hero).ok());
  ASSERT_TRUE(s.Submit(hero, 1).ok());
  auto second = s.Schedule(1);
  EXPECT_EQ(Started(second), (std::vector<int64_t>{10}));
  EXPECT_TRUE(Preempted(second).empty());
  for (const auto& d : second) {
    for (int n : d.group.nodes()) EXPECT_EQ(s.cluster().spec(n).id.rfind("hero", 0), 0u) << "node " << n;
  }
  EXPECT_TRUE(s.IsQueued(3)) << "the search request still waits for a shared node";
  // A second hero run of the same pool waits for the pool (its hero priority takes nothing shared); one of another
  // pool no node has is infeasible, and says which pool.
  GroupRequest again = Req(11, 1, std::nullopt, Priority::kHero);
  again.pool = "job-7";
  ASSERT_TRUE(s.Submit(again, 2).ok());
  auto third = s.Schedule(2);
  EXPECT_TRUE(Started(third).empty());
  EXPECT_TRUE(Preempted(third).empty());
  GroupRequest other = Req(12, 1);
  other.pool = "job-8";
  const Status f = s.Feasible(other);
  EXPECT_EQ(f.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(f.message().find("pool 'job-8'"), std::string::npos) << f.message();
}

}  // namespace
}  // namespace ladder::scheduler
