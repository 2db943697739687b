// The coordinator with multi-node trials: node groups from the scheduler, launch per node or by mpirun,
// group stop on a rank crash or a lost node, preemption by priority, a stopping worker (re-attach after a restart:
// coordinator_groups_restart_test.cc).
#include <algorithm>
#include <fstream>

#include "common/trial_exit_codes.h"
#include "server/rendezvous_port.h"
#include "tests/server/coordinator_groups_support.h"

namespace ladder::server {
namespace {

TEST_F(CoordinatorGroupTest, TwoNodeTrialStartsEveryNodesRanksWithRendezvousVariablesOnOneRack) {
  // Three nodes; r1 holds two of them: the group must be compact (both on r1).
  auto a = Connect("a", 2, {}, {{"rack", "r2"}});
  auto b = Connect("b", 2, {}, {{"rack", "r1"}});
  auto c = Connect("c", 2, {}, {{"rack", "r1"}});
  auto id = CreateSearch(kTwoNodeSpec);
  ASSERT_TRUE(a->Starts().empty()) << "the group goes on the rack that holds it whole";
  ASSERT_EQ(b->Starts().size(), 1u);
  ASSERT_EQ(c->Starts().size(), 1u);
  auto sb = b->Starts()[0], sc = c->Starts()[0];
  EXPECT_EQ(sb.trial_id(), sc.trial_id());
  EXPECT_EQ(sb.assignment_epoch(), sc.assignment_epoch()) << "one assignment epoch for the whole group";
  EXPECT_EQ(sb.local_ranks(), 2);
  EXPECT_EQ(sb.first_rank(), 0);
  EXPECT_EQ(sc.first_rank(), 2);
  EXPECT_EQ(sb.env().at("RANK"), "0");
  EXPECT_EQ(sc.env().at("RANK"), "2");
  EXPECT_EQ(sc.env().at("WORLD_SIZE"), "4");
  EXPECT_EQ(sc.env().at("LOCAL_WORLD_SIZE"), "2");
  EXPECT_EQ(sb.env().at("LADDER_LAUNCHER"), "per_node");
  EXPECT_EQ(sb.env().at("MASTER_ADDR"), "b.addr") << "rank 0's node address";
  EXPECT_EQ(sc.env().at("MASTER_ADDR"), "b.addr");
  EXPECT_EQ(sb.env().at("MASTER_PORT"), sc.env().at("MASTER_PORT"));
  EXPECT_EQ(sb.env().at("MASTER_PORT"), std::to_string(29500 + sb.trial_id())) << "the default range";
  auto t = GetTrial(sb.trial_id());
  ASSERT_EQ(t.placement_size(), 2);
  EXPECT_EQ(t.placement(0).node_id(), "b");
  EXPECT_EQ(t.placement(1).node_id(), "c");
  EXPECT_EQ(t.placement(1).first_rank(), 2);

  // Only global rank 0's node reports metrics; a report from another node is fenced.
  Metric(c, sc, 0.1);
  EXPECT_EQ(GetTrial(sb.trial_id()).metric_count(), 0);
  ASSERT_FALSE(Cancels(*c).empty()) << "metrics from a node that is not rank 0's are refused";
  Metric(b, sb, 0.8);
  // The trial ends when its last node has exited.
  Exit(b, sb, 0);
  EXPECT_EQ(GetTrial(sb.trial_id()).state(), v1::TRIAL_RUNNING) << "node c still runs";
  EXPECT_EQ(b->Starts().size(), 1u) << "the group's nodes are not given out before every member stopped";
  Exit(c, sc, 0);
  t = GetTrial(sb.trial_id());
  EXPECT_EQ(t.state(), v1::TRIAL_COMPLETED);
  EXPECT_DOUBLE_EQ(t.objective(), 0.8);
  EXPECT_EQ(b->Starts().size() + c->Starts().size(), 4u) << "the second trial got the same compact pair";
  EXPECT_EQ(GetSearch(id).running(), 1);
}

TEST_F(CoordinatorGroupTest, RankCrashOnOneNodeStopsTheOtherAndFreesTheGroupOnlyWhenBothStopped) {
  auto a = Connect("a", 2);
  auto b = Connect("b", 2);
  CreateSearch(kTwoNodeSpec);
  auto sa = a->Starts().at(0), sb = b->Starts().at(0);
  Exit(b, sb, 139);  // rank 2 or 3 crashed on b
  auto t = GetTrial(sa.trial_id());
  EXPECT_EQ(t.state(), v1::TRIAL_FAILED);
  EXPECT_NE(t.error().find("node b"), std::string::npos) << t.error();
  auto ca = Cancels(*a);
  ASSERT_EQ(ca.size(), 1u) << "the rest of the group is stopped";
  EXPECT_EQ(ca[0].assignment_epoch(), sa.assignment_epoch());
  EXPECT_EQ(a->Starts().size(), 1u) << "node a still stops the old ranks: nothing new goes there yet";
  Exit(a, sa, 143, /*cancelled=*/true);
  EXPECT_EQ(a->Starts().size(), 2u) << "once every member stopped, the next trial gets the nodes";
  EXPECT_EQ(b->Starts().size(), 2u);
}

TEST_F(CoordinatorGroupTest, LostNodeStopsTheGroupElsewhereAndRequeuesOnOtherNodes) {
  auto a = Connect("a", 2);
  auto b = Connect("b", 2);
  auto c = Connect("c", 2);
  CreateSearch(kTwoNodeSpec);
  std::shared_ptr<FakeLink> lost, kept, spare;
  for (auto& l : {a, b, c}) {
    if (l->Starts().empty()) spare = l;
  }
  ASSERT_TRUE(spare);
  for (auto& l : {a, b, c}) {
    if (l != spare && !lost) lost = l; else if (l != spare) kept = l;
  }
  auto first = kept->Starts().at(0);
  coord_->OnWorkerGone(lost, "stream broken");
  Drain();
  auto t = GetTrial(first.trial_id());
  EXPECT_EQ(t.state(), v1::TRIAL_PENDING);
  EXPECT_EQ(t.attempt(), 1);
  ASSERT_EQ(Cancels(*kept).size(), 1u) << "the surviving member is stopped";
  EXPECT_TRUE(spare->Starts().empty()) << "requeued only once the surviving member stopped";
  Exit(kept, first, 143, /*cancelled=*/true);
  ASSERT_EQ(spare->Starts().size(), 1u) << "the retry runs on the two nodes that are up";
  ASSERT_EQ(kept->Starts().size(), 2u);
  EXPECT_GT(spare->Starts()[0].assignment_epoch(), first.assignment_epoch());
  // A late report from the lost node's old run is fenced.
  v1::WorkerMessage m;
  m.mutable_metrics()->set_trial_id(first.trial_id());
  m.mutable_metrics()->set_assignment_epoch(first.assignment_epoch());
  coord_->OnWorkerMessage(kept, m);
  Drain();
  EXPECT_EQ(Cancels(*kept).size(), 2u);
}

TEST_F(CoordinatorGroupTest, TheRendezvousPortComesFromTheConfiguredRange) {
  Close();
  options_.rendezvous_port_base = 40000;
  options_.rendezvous_port_span = 4;
  Open();
  auto a = Connect("a", 2);
  auto b = Connect("b", 2);
  CreateSearch(kTwoNodeSpec);
  ASSERT_EQ(a->Starts().size(), 1u);
  ASSERT_EQ(b->Starts().size(), 1u);
  const v1::StartTrial s = a->Starts()[0];  // a copy: Starts() returns a new vector
  EXPECT_EQ(s.env().at("MASTER_PORT"), std::to_string(40000 + s.trial_id() % 4));
  EXPECT_EQ(b->Starts()[0].env().at("MASTER_PORT"), s.env().at("MASTER_PORT"));
}

// launcher: srun — one Slurm step named for the trial, which the worker finds by that name to signal its tasks.
TEST_F(CoordinatorGroupTest, SrunLaunchNamesItsStepForTheWorkerThatStopsIt) {
  auto a = Connect("a", 2);
  auto b = Connect("b", 2);
  std::string spec = kTwoNodeSpec;
  spec.replace(spec.find("ranks_per_node: 2}"), 18, "ranks_per_node: 2, launcher: srun}");
  CreateSearch(spec);
  auto starts_a = a->Starts(), starts_b = b->Starts();
  ASSERT_EQ(starts_a.size() + starts_b.size(), 1u) << "only the first node's worker starts srun";
  auto st = starts_a.empty() ? starts_b[0] : starts_a[0];
  std::vector<std::string> argv(st.argv().begin(), st.argv().end());
  ASSERT_FALSE(argv.empty());
  EXPECT_EQ(argv[0], "srun");
  const std::string name = "ladder-trial-" + std::to_string(st.trial_id());
  EXPECT_NE(std::find(argv.begin(), argv.end(), "--job-name=" + name), argv.end());
  EXPECT_EQ(st.env().at("LADDER_LAUNCHER"), "srun");
  EXPECT_EQ(st.env().at("LADDER_STEP_NAME"), name);
}

TEST(RendezvousPort, FirstPortIsBasePlusIdModuloSpanAndARetryJumpsToAnotherPortOfTheRange) {
  EXPECT_EQ(RendezvousPort(29500, 3000, 7, 0), 29507);
  EXPECT_EQ(RendezvousPort(29500, 3000, 3007, 0), 29507);
  EXPECT_EQ(RendezvousPort(40000, 1, 9, 5), 40000) << "a range of one port has no other";
  std::set<int> seen;
  for (int c = 1; c <= 50; ++c) {
    const int p = RendezvousPort(29500, 3000, 7, c);
    EXPECT_GE(p, 29500);
    EXPECT_LT(p, 32500);
    EXPECT_NE(p, 29507) << "collision " << c << " is given the taken first port again";
    EXPECT_EQ(p, RendezvousPort(29500, 3000, 7, c)) << "the choice is a function of (trial, collisions)";
    seen.insert(p);
  }
  EXPECT_GT(seen.size(), 40u) << "retries spread over the range";
  for (int c = 1; c <= 20; ++c) EXPECT_NE(RendezvousPort(40000, 2, 4, c), 40000);  // span 2: always the other
}

TEST(RendezvousPort, TheDefaultRangeStaysClearOfLinuxsEphemeralPortsAndAnOverlapIsSaid) {
  const auto file = std::filesystem::temp_directory_path() / ("ladder-port-range-" + std::to_string(getpid()));
  std::ofstream(file) << "32768\t60999\n";
  const CoordinatorOptions defaults;
  EXPECT_EQ(EphemeralOverlapWarning(defaults.rendezvous_port_base, defaults.rendezvous_port_span, file.string()), "");
  const std::string w = EphemeralOverlapWarning(50000, 16, file.string());
  EXPECT_NE(w.find("50000-50015"), std::string::npos) << w;
  EXPECT_NE(w.find("32768-60999"), std::string::npos) << w;
  EXPECT_NE(w.find("--rendezvous-port-base"), std::string::npos) << w;
  EXPECT_NE(EphemeralOverlapWarning(32000, 1000, file.string()), "") << "a range that reaches into it";
  EXPECT_EQ(EphemeralOverlapWarning(50000, 16, file.string() + ".missing"), "") << "nothing known, nothing said";
  std::filesystem::remove(file);
}

TEST_F(CoordinatorGroupTest, ATakenRendezvousPortRunsTheTrialAgainOnAnotherPortWithoutUsingAnAttempt) {
  std::vector<v1::Event> seen;
  coord_->AddWatcher(v1::WatchRequest(), [&](const v1::Event& e) { seen.push_back(e); });
  auto a = Connect("a", 2);
  auto b = Connect("b", 2);
  CreateSearch(kTwoNodeSpec);
  std::shared_ptr<FakeLink> zero = a->Starts().at(0).first_rank() == 0 ? a : b, other = zero == a ? b : a;
  const v1::StartTrial first = zero->Starts().at(0), first_other = other->Starts().at(0);
  const int64_t id = first.trial_id();
  EXPECT_EQ(first.env().at("MASTER_PORT"), std::to_string(RendezvousPort(29500, 3000, id, 0)));
  Exit(zero, first, kExitRendezvousPortInUse);  // rank 0: another process holds MASTER_PORT
  auto t = GetTrial(id);
  EXPECT_EQ(t.state(), v1::TRIAL_RUNNING) << "its other member still stops";
  EXPECT_NE(t.error().find("could not listen on its rendezvous port " + first.env().at("MASTER_PORT")),
            std::string::npos) << t.error();
  ASSERT_EQ(Cancels(*other).size(), 1u) << "the rest of the group is stopped";
  Exit(other, first_other, 143, /*cancelled=*/true);
  t = GetTrial(id);
  EXPECT_EQ(t.attempt(), 0) << "a port collision never costs an attempt";
  EXPECT_EQ(t.state(), v1::TRIAL_RUNNING) << "relaunched at once on the free pair";
  ASSERT_EQ(zero->Starts().size(), 2u);
  const v1::StartTrial again = zero->Starts()[1];
  EXPECT_EQ(again.trial_id(), id);
  EXPECT_GT(again.assignment_epoch(), first.assignment_epoch());
  EXPECT_EQ(again.env().at("MASTER_PORT"), std::to_string(RendezvousPort(29500, 3000, id, 1)));
  EXPECT_NE(again.env().at("MASTER_PORT"), first.env().at("MASTER_PORT"));
  EXPECT_EQ(other->Starts().at(1).env().at("MASTER_PORT"), again.env().at("MASTER_PORT"));
  loop_.restart();
  loop_.run_for(std::chrono::milliseconds(120));  // past the flush interval: the journal is committed
  bool said = false;
  for (const auto& e : seen) {
    if (e.kind() != v1::Event::JOURNAL || e.journal().kind() != "trial_port_in_use") continue;
    said = true;
    EXPECT_EQ(e.journal().trial_id(), id);
    EXPECT_NE(e.journal().detail().find("runs again on port " + again.env().at("MASTER_PORT")), std::string::npos)
        << e.journal().detail();
  }
  EXPECT_TRUE(said) << "the journal says why the trial ran again";
  // The same exit code from a member that is not rank 0's is that rank's own failure.
  const auto& not_zero = zero->Starts()[1].first_rank() == 0 ? other : zero;
  Exit(not_zero, not_zero->Starts().at(1), kExitRendezvousPortInUse);
  t = GetTrial(id);
  EXPECT_EQ(t.state(), v1::TRIAL_FAILED);
  EXPECT_NE(t.error().find("exited with code 75"), std::string::npos) << t.error();
}

TEST_F(CoordinatorGroupTest, MpirunLaunchRunsOnTheFirstNodeOverTheGroupsHosts) {
  Close();
  options_.mpirun = {"mpirun", "--allow-run-as-root"};
  Open();
  auto a = Connect("a", 2);
  auto b = Connect("b", 2);
  std::string spec = kTwoNodeSpec;
  spec.replace(spec.find("ranks_per_node: 2}"), 18, "ranks_per_node: 2, launcher: mpirun}");
  CreateSearch(spec);
  auto starts_a = a->Starts(), starts_b = b->Starts();
  ASSERT_EQ(starts_a.size() + starts_b.size(), 1u) << "only the first node's worker starts a process";
  auto st = starts_a.empty() ? starts_b[0] : starts_a[0];
  std::vector<std::string> argv(st.argv().begin(), st.argv().end());
  ASSERT_GE(argv.size(), 8u);
  EXPECT_EQ(argv[0], "mpirun");
  EXPECT_EQ(argv[1], "--allow-run-as-root");
  EXPECT_EQ(argv[2], "-np");
  EXPECT_EQ(argv[3], "4");
  EXPECT_EQ(argv[4], "--host");
  EXPECT_TRUE(argv[5] == "a.addr:2,b.addr:2" || argv[5] == "b.addr:2,a.addr:2") << argv[5];
  EXPECT_EQ(argv[argv.size() - 2], "train");
  EXPECT_EQ(st.env().count("RANK"), 0u) << "mpirun numbers the ranks";
  EXPECT_EQ(st.env().at("LADDER_LAUNCHER"), "mpirun") << "the worker stops it through mpirun";
  EXPECT_EQ(st.env().count("LADDER_STEP_NAME"), 0u);
  EXPECT_EQ(st.local_ranks(), 1);
  auto t = GetTrial(st.trial_id());
  EXPECT_EQ(t.placement_size(), 2) << "both nodes are held";
  // mpirun's exit ends the trial; the other node had nothing to stop.
  auto& link = starts_a.empty() ? b : a;
  Metric(link, st, 0.5);
  Exit(link, st, 0);
  EXPECT_EQ(GetTrial(st.trial_id()).state(), v1::TRIAL_COMPLETED);
  EXPECT_EQ(a->Starts().size() + b->Starts().size(), 2u) << "the next trial got the nodes";
}

TEST_F(CoordinatorGroupTest, HeroSearchPreemptsASearchTrialWhichResumesAfterwards) {
  auto a = Connect("a", 2);
  constexpr const char* kOneNode = R"(
name: small
objective: {metric: score, mode: max}
budget: {max_trials: 1, parallelism: 1}
resources: {nodes: 1, ranks_per_node: 2}
command: [train, "--x={x}", "--ckpt={checkpoint_dir}"]
space:
  x: {type: float, low: 0.0, high: 1.0}
)";
  auto low = CreateSearch(kOneNode);
  ASSERT_EQ(a->Starts().size(), 1u);
  auto victim = a->Starts()[0];
  std::string hero_spec = kOneNode;
  hero_spec.replace(hero_spec.find("small"), 5, "herorun");
  auto hero = CreateSearch(hero_spec, v1::PRIORITY_HERO);
  EXPECT_EQ(GetSearch(hero).priority(), v1::PRIORITY_HERO);
  auto cancels = Cancels(*a);
  ASSERT_EQ(cancels.size(), 1u) << "the search trial is told to stop through its checkpoint";
  EXPECT_EQ(cancels[0].trial_id(), victim.trial_id());
  EXPECT_NE(cancels[0].reason().find("preempted"), std::string::npos) << cancels[0].reason();
  EXPECT_EQ(a->Starts().size(), 1u) << "the hero waits until the victim has stopped";
  Exit(a, victim, 0, /*cancelled=*/true);  // it saved its checkpoint and exited
  auto t = GetTrial(victim.trial_id());
  EXPECT_EQ(t.state(), v1::TRIAL_PENDING);
  EXPECT_EQ(t.attempt(), 0) << "a preemption is not a retry";
  EXPECT_EQ(t.preemptions(), 1);
  ASSERT_EQ(a->Starts().size(), 2u);
  auto hero_start = a->Starts()[1];
  EXPECT_NE(hero_start.trial_id(), victim.trial_id());
  Report(a, hero_start, 0.9);
  EXPECT_EQ(GetSearch(hero).state(), v1::SEARCH_COMPLETED);
  ASSERT_EQ(a->Starts().size(), 3u) << "the preempted trial resumes";
  auto resumed = a->Starts()[2];
  EXPECT_EQ(resumed.trial_id(), victim.trial_id());
  EXPECT_EQ(resumed.checkpoint_dir(), victim.checkpoint_dir()) << "from the same checkpoint directory";
  Report(a, resumed, 0.4);
  EXPECT_EQ(GetSearch(low).state(), v1::SEARCH_COMPLETED);
  EXPECT_EQ(GetTrial(victim.trial_id()).preemptions(), 1) << "stored";
}

TEST_F(CoordinatorGroupTest, GroupThatNoNodesCanHoldWaitsAndStartsWhenNodesJoin) {
  auto a = Connect("a", 2);
  CreateSearch(kTwoNodeSpec);
  EXPECT_TRUE(a->Starts().empty());
  auto b = Connect("b", 2);
  EXPECT_EQ(a->Starts().size(), 1u);
  EXPECT_EQ(b->Starts().size(), 1u);
}

// Workers register after a start (a resumed Slurm job's step, a restarted coordinator's fleet): that no node up
// can hold a search's trials is said only once the registration window has passed, and then once.
TEST_F(CoordinatorGroupTest, AGroupNoNodeCanHoldIsSaidOnlyAfterTheRegistrationWindow) {
  Close();
  options_.registration_window = std::chrono::hours(1);
  Open();
  ::testing::internal::CaptureStderr();
  CreateSearch(kTwoNodeSpec);
  loop_.restart();
  loop_.run_for(std::chrono::milliseconds(200));  // ticks, within the window
  const std::string within = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(within.find("its trials wait"), std::string::npos) << within;

  Close();
  options_.registration_window = std::chrono::milliseconds(100);
  ::testing::internal::CaptureStderr();
  Open();  // the stored search's trials are queued again at the start
  loop_.restart();
  loop_.run_for(std::chrono::milliseconds(500));  // past the window
  const std::string after = ::testing::internal::GetCapturedStderr();
  const std::string words = "search 1: its trials wait: trial ";
  const auto said = after.find(words);
  ASSERT_NE(said, std::string::npos) << after;
  EXPECT_NE(after.find("the cluster has 0 such node(s) up", said), std::string::npos) << after;
  EXPECT_EQ(after.find("its trials wait", said + words.size()), std::string::npos) << "said once:\n" << after;
}

TEST_F(CoordinatorGroupTest, WatchersSeeAWorkerComeUpAndItsSlotsFillAndEmpty) {
  std::vector<v1::WorkerInfo> seen;
  coord_->AddWatcher(v1::WatchRequest(), [&](const v1::Event& ev) {
    if (ev.kind() == v1::Event::WORKER_UPDATED) seen.push_back(ev.worker());
  });
  auto a = Connect("a", 2);
  ASSERT_FALSE(seen.empty()) << "a registration is announced";
  EXPECT_EQ(seen.back().node_id(), "a");
  EXPECT_EQ(seen.back().state(), v1::WORKER_UP);
  CreateSearch(R"(
name: one
objective: {metric: score, mode: max}
budget: {max_trials: 1}
resources: {ranks_per_node: 2}
command: [train]
space:
  x: {type: float, low: 0.0, high: 1.0}
)");
  // Busy slots alone are coalesced (EventHub): the newest goes out with a commit, within kMetricsInterval.
  auto settle = [&] {  // 400 ms of the loop, the worker heartbeating (the fixture's lease is 200 ms)
    for (int i = 0; i < 8; ++i) {
      v1::WorkerMessage hb;
      hb.mutable_heartbeat();
      coord_->OnWorkerMessage(a, hb);
      loop_.restart();
      loop_.run_for(std::chrono::milliseconds(50));
    }
  };
  settle();
  EXPECT_EQ(seen.back().busy_slots(), 2);
  Report(a, a->Starts().at(0), 0.5);
  settle();
  EXPECT_EQ(seen.back().busy_slots(), 0);
}


// The worker of one node of a running 2-node trial shuts down: its rank asks the group to stop, and the ranks leave
// through their checkpoint. Whichever way the two exits and the worker's closed stream reach the coordinator, the
// trial goes back to the queue as a preemption (no attempt) and resumes on the nodes left and a new one.
TEST_F(CoordinatorGroupTest, AStoppingWorkersMemberRequeuesTheTrialWithNoAttemptWhateverOrderTheExitsCome) {
  for (const bool stopping_first : {true, false}) {
    SCOPED_TRACE(stopping_first ? "the stopping worker's exit first" : "the other node's exit first");
    Close();  // a fresh coordinator and database each round
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    Open();
    auto a = Connect("a", 2);
    auto b = Connect("b", 2);
    CreateSearch(kTwoNodeSpec);
    ASSERT_EQ(a->Starts().size(), 1u);
    ASSERT_EQ(b->Starts().size(), 1u);
    const v1::StartTrial on_a = a->Starts()[0], on_b = b->Starts()[0];
    if (stopping_first) {
      MemberExit(*coord_, b, on_b, "stopping");
      Drain();
      ASSERT_EQ(Cancels(*a).size(), 1u) << "the other node's rank is told to stop";
      coord_->OnWorkerGone(b, "stream closed");  // the worker is gone before the other rank's exit arrives
      Drain();
      MemberExit(*coord_, a, on_a, "outside");
    } else {
      MemberExit(*coord_, a, on_a, "outside");  // rank 0 stopped with rank 1 before b's worker reported
      Drain();
      MemberExit(*coord_, b, on_b, "stopping");
      Drain();
      coord_->OnWorkerGone(b, "stream closed");
    }
    Drain();
    auto t = GetTrial(on_a.trial_id());
    EXPECT_EQ(t.state(), v1::TRIAL_PENDING) << t.error();
    EXPECT_EQ(t.attempt(), 0) << "a worker's shutdown is not the trial's failure: " << t.error();
    EXPECT_EQ(t.preemptions(), 1);
    auto c = Connect("c", 2);
    ASSERT_EQ(c->Starts().size(), 1u) << "it resumes on the node left and the new one";
    ASSERT_EQ(a->Starts().size(), 2u);
    EXPECT_EQ(a->Starts()[1].trial_id(), on_a.trial_id());
  }
}

// The worker of the node that only holds slots of a running 2-node mpirun trial (mpirun on the other node starts every
// rank) says it is stopping and closes its stream: no fault. The trial stops through mpirun and its checkpoint, and
// waits for another node with no attempt counted; the node counts no failure.
TEST_F(CoordinatorGroupTest, AnAnnouncedWorkerStopOnAnMpirunTrialsSlotNodeRequeuesItWithNoAttempt) {
  Close();
  options_.mpirun = {"mpirun", "--allow-run-as-root"};
  Open();
  auto a = Connect("a", 2);
  auto b = Connect("b", 2);
  std::string spec = kTwoNodeSpec;
  spec.replace(spec.find("ranks_per_node: 2}"), 18, "ranks_per_node: 2, launcher: mpirun}");
  CreateSearch(spec);
  auto& launching = a->Starts().empty() ? b : a;
  auto& holding = a->Starts().empty() ? a : b;
  ASSERT_EQ(launching->Starts().size(), 1u);
  const v1::StartTrial st = launching->Starts()[0];
  v1::WorkerMessage stopping;
  stopping.mutable_stopping()->set_reason("the worker is shutting down");
  coord_->OnWorkerMessage(holding, stopping);
  coord_->OnWorkerGone(holding, "stream closed");
  Drain();
  ASSERT_EQ(Cancels(*launching).size(), 1u) << "mpirun is told to stop";
  EXPECT_EQ(GetTrial(st.trial_id()).state(), v1::TRIAL_RUNNING) << "until mpirun has exited";
  Exit(launching, st, 143, /*cancelled=*/true);
  auto t = GetTrial(st.trial_id());
  EXPECT_EQ(t.state(), v1::TRIAL_PENDING) << t.error();
  EXPECT_EQ(t.attempt(), 0) << t.error();
  EXPECT_EQ(t.preemptions(), 1);
  auto c = Connect("c", 2);
  EXPECT_EQ(launching->Starts().size() + c->Starts().size(), 2u) << "it resumes on the node left and the new one";
}

}  // namespace
}  // namespace ladder::server
