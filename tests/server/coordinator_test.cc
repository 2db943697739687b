// The coordinator without sockets: fake worker links, the loop run by hand.
#include "server/coordinator.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <deque>
#include <filesystem>

namespace ladder::server {
namespace {

class FakeLink : public WorkerLink {
 public:
  void Send(const v1::CoordinatorMessage& m) override { sent.push_back(m); }
  void Close(const grpc::Status& st) override { closed = true, close_status = st; }
  std::vector<v1::StartTrial> Starts() const {
    std::vector<v1::StartTrial> out;
    for (const auto& m : sent) {
      if (m.has_start()) out.push_back(m.start());
    }
    return out;
  }
  std::deque<v1::CoordinatorMessage> sent;
  bool closed = false;
  grpc::Status close_status;
};

constexpr const char* kSpec = R"(
name: unit
objective: {metric: score, mode: max}
budget: {max_trials: 4, parallelism: 2, max_retries: 1, max_failed_trials: 2}
sampler: {type: random, seed: 3}
command: [run, "--x={x}", "--id={trial_id}"]
space:
  x: {type: float, low: 0.0, high: 1.0}
)";

class CoordinatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ladder-coord-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    Open();
  }
  void TearDown() override {
    Close();
    std::filesystem::remove_all(dir_);
  }
  void Open() {
    store_ = std::make_unique<store::Store>((dir_ / "ladder.db").string());
    CoordinatorOptions o;
    o.heartbeat_timeout = std::chrono::milliseconds(200);
    o.heartbeat_interval = std::chrono::milliseconds(50);
    coord_ = std::make_unique<Coordinator>(loop_, *store_, o);
    coord_->Start();
    Drain();
  }
  void Close() {
    if (coord_) coord_->Stop();
    Drain();
    coord_.reset();
    store_.reset();
  }
  void Drain() {
    loop_.restart();
    loop_.poll();
  }
  std::shared_ptr<FakeLink> Connect(const std::string& node, int slots,
                                    std::vector<std::pair<int64_t, int64_t>> running = {}) {
    auto link = std::make_shared<FakeLink>();
    v1::WorkerMessage m;
    m.mutable_register_()->set_node_id(node);
    m.mutable_register_()->mutable_resources()->set_hostname(node);
    m.mutable_register_()->mutable_resources()->set_slots(slots);
    for (auto [id, epoch] : running) {
      auto* r = m.mutable_register_()->add_running();
      r->set_trial_id(id);
      r->set_assignment_epoch(epoch);
    }
    coord_->OnWorkerMessage(link, m);
    Drain();
    return link;
  }
  int64_t CreateSearch(const std::string& yaml = kSpec) {
    v1::CreateSearchRequest req;
    req.set_spec_yaml(yaml);
    v1::CreateSearchResponse resp;
    auto st = coord_->CreateSearch(req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    Drain();
    return resp.search().id();
  }
  void Report(const std::shared_ptr<FakeLink>& link, const v1::StartTrial& s, double score, int exit_code = 0) {
    v1::WorkerMessage m;
    auto* mr = m.mutable_metrics();
    mr->set_trial_id(s.trial_id());
    mr->set_assignment_epoch(s.assignment_epoch());
    auto* p = mr->add_points();
    p->set_step(1);
    (*p->mutable_values())["score"] = score;
    coord_->OnWorkerMessage(link, m);
    v1::WorkerMessage e;
    e.mutable_exited()->set_trial_id(s.trial_id());
    e.mutable_exited()->set_assignment_epoch(s.assignment_epoch());
    e.mutable_exited()->set_exit_code(exit_code);
    coord_->OnWorkerMessage(link, e);
    Drain();
  }
  v1::Search GetSearch(int64_t id) {
    v1::GetSearchRequest req;
    req.set_search_id(id);
    v1::GetSearchResponse resp;
    EXPECT_TRUE(coord_->GetSearch(req, &resp).ok());
    return resp.search();
  }
  v1::Trial GetTrial(int64_t id) {
    v1::GetTrialRequest req;
    req.set_trial_id(id);
    v1::GetTrialResponse resp;
    EXPECT_TRUE(coord_->GetTrial(req, &resp).ok());
    return resp.trial();
  }

  boost::asio::io_context loop_;
  std::filesystem::path dir_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<Coordinator> coord_;
};

TEST_F(CoordinatorTest, RunsASearchToCompletionRespectingParallelism) {
  auto link = Connect("n1", 4);
  auto id = CreateSearch();
  auto starts = link->Starts();
  ASSERT_EQ(starts.size(), 2u) << "parallelism 2 even though the worker has 4 slots";
  EXPECT_EQ(starts[0].argv(0), "run");
  EXPECT_EQ(starts[0].argv(2), "--id=" + std::to_string(starts[0].trial_id()));
  EXPECT_EQ(starts[0].env().at("RANK"), "0");
  EXPECT_EQ(starts[0].env().at("WORLD_SIZE"), "1");
  EXPECT_NE(starts[0].assignment_epoch(), starts[1].assignment_epoch());
  Report(link, starts[0], 0.5);
  ASSERT_EQ(link->Starts().size(), 3u) << "a finished trial frees a place for the next";
  Report(link, starts[1], 0.9);
  starts = link->Starts();
  ASSERT_EQ(starts.size(), 4u);
  Report(link, starts[2], 0.7);
  Report(link, starts[3], 0.1);
  EXPECT_EQ(link->Starts().size(), 4u) << "budget is 4 trials";
  auto s = GetSearch(id);
  EXPECT_EQ(s.state(), v1::SEARCH_COMPLETED);
  EXPECT_EQ(s.completed(), 4);
  EXPECT_DOUBLE_EQ(s.best_objective(), 0.9);
  EXPECT_EQ(s.best_trial_id(), starts[1].trial_id());
  auto t = GetTrial(starts[1].trial_id());
  EXPECT_EQ(t.state(), v1::TRIAL_COMPLETED);
  EXPECT_EQ(t.metric_count(), 1);
}

TEST_F(CoordinatorTest, RejectsInvalidSpecNamingTheField) {
  v1::CreateSearchRequest req;
  req.set_spec_yaml("name: x\nobjective: {metric: a, mode: max}\nbudget: {max_trials: eight}\ncommand: [a]\n"
                    "space:\n  x: {type: float, low: 0, high: 1}\n");
  req.set_spec_path("bad.yaml");
  v1::CreateSearchResponse resp;
  auto st = coord_->CreateSearch(req, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(st.error_message().find("bad.yaml:3"), std::string::npos) << st.error_message();
  EXPECT_NE(st.error_message().find("max_trials"), std::string::npos) << st.error_message();
  v1::ListSearchesResponse list;
  coord_->ListSearches({}, &list);
  EXPECT_EQ(list.searches_size(), 0) << "nothing half-written";
}

TEST_F(CoordinatorTest, FailedTrialsFailTheSearchAtTheLimit) {
  auto link = Connect("n1", 2);
  auto id = CreateSearch();
  auto starts = link->Starts();
  v1::WorkerMessage e;
  e.mutable_exited()->set_trial_id(starts[0].trial_id());
  e.mutable_exited()->set_assignment_epoch(starts[0].assignment_epoch());
  e.mutable_exited()->set_exit_code(127);
  e.mutable_exited()->set_error("command 'run' not found");
  coord_->OnWorkerMessage(link, e);
  Drain();
  EXPECT_EQ(GetTrial(starts[0].trial_id()).error(), "command 'run' not found");
  EXPECT_EQ(GetSearch(id).state(), v1::SEARCH_RUNNING);
  // A trial that exits 0 without the objective also fails, with a reason.
  v1::WorkerMessage e2;
  e2.mutable_exited()->set_trial_id(starts[1].trial_id());
  e2.mutable_exited()->set_assignment_epoch(starts[1].assignment_epoch());
  coord_->OnWorkerMessage(link, e2);
  Drain();
  auto t = GetTrial(starts[1].trial_id());
  EXPECT_EQ(t.state(), v1::TRIAL_FAILED);
  EXPECT_NE(t.error().find("objective metric 'score'"), std::string::npos) << t.error();
  auto s = GetSearch(id);
  EXPECT_EQ(s.state(), v1::SEARCH_FAILED);
  EXPECT_NE(s.error().find("max_failed_trials"), std::string::npos) << s.error();
}

TEST_F(CoordinatorTest, WorkerLossRequeuesOnAnotherWorkerThenFailsWhenOutOfRetries) {
  auto a = Connect("a", 1);
  auto id = CreateSearch();
  auto first = a->Starts().at(0);
  coord_->OnWorkerGone(a, "test");
  Drain();
  auto t = GetTrial(first.trial_id());
  EXPECT_EQ(t.state(), v1::TRIAL_PENDING);
  EXPECT_EQ(t.attempt(), 1);
  auto b = Connect("b", 1);
  auto again = b->Starts().at(0);
  EXPECT_EQ(again.trial_id(), first.trial_id()) << "the requeued trial runs before new ones";
  EXPECT_GT(again.assignment_epoch(), first.assignment_epoch());
  // A late message from the fenced run is ignored and answered with a cancel.
  v1::WorkerMessage stale;
  stale.mutable_exited()->set_trial_id(first.trial_id());
  stale.mutable_exited()->set_assignment_epoch(first.assignment_epoch());
  coord_->OnWorkerMessage(b, stale);
  Drain();
  EXPECT_EQ(GetTrial(first.trial_id()).state(), v1::TRIAL_RUNNING);
  // max_retries is 1: a second loss fails it.
  coord_->OnWorkerGone(b, "test");
  Drain();
  t = GetTrial(first.trial_id());
  EXPECT_EQ(t.state(), v1::TRIAL_FAILED);
  EXPECT_NE(t.error().find("no retries left"), std::string::npos) << t.error();
  EXPECT_EQ(GetSearch(id).failed(), 1);
}

TEST_F(CoordinatorTest, LeaseExpiryMarksWorkerDown) {
  auto a = Connect("a", 1);
  CreateSearch();
  auto first = a->Starts().at(0);
  // No heartbeats: run the loop past the 200 ms lease.
  loop_.restart();
  loop_.run_for(std::chrono::milliseconds(400));
  EXPECT_TRUE(a->closed);
  EXPECT_EQ(a->close_status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_EQ(GetTrial(first.trial_id()).state(), v1::TRIAL_PENDING);
  v1::ServerInfoResponse info;
  coord_->ServerInfo({}, &info);
  ASSERT_EQ(info.workers_size(), 1);
  EXPECT_EQ(info.workers(0).state(), v1::WORKER_DOWN);
}

TEST_F(CoordinatorTest, CancelStopsRunningTrials) {
  auto a = Connect("a", 2);
  auto id = CreateSearch();
  v1::CancelSearchRequest req;
  req.set_search_id(id);
  v1::CancelSearchResponse resp;
  ASSERT_TRUE(coord_->CancelSearch(req, &resp).ok());
  Drain();
  int cancels = 0;
  for (const auto& m : a->sent) cancels += m.has_cancel();
  EXPECT_EQ(cancels, 2);
  EXPECT_EQ(GetSearch(id).state(), v1::SEARCH_CANCELLED);
  EXPECT_EQ(coord_->CancelSearch(req, &resp).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
}

TEST_F(CoordinatorTest, RestartReattachesRunningTrialsAndFinishesTheSearch) {
  auto a = Connect("a", 2);
  auto id = CreateSearch();
  auto starts = a->Starts();
  ASSERT_EQ(starts.size(), 2u);
  Report(a, starts[0], 0.4);
  auto third = a->Starts().at(2);
  // Coordinator "crash": drop it without Stop(); the store keeps what was flushed.
  store_->Flush();
  coord_.reset();
  store_.reset();
  Open();
  // The worker comes back still running trials 2 and 3.
  auto a2 = Connect("a", 2, {{starts[1].trial_id(), starts[1].assignment_epoch()},
                             {third.trial_id(), third.assignment_epoch()}});
  EXPECT_TRUE(a2->Starts().empty()) << "both slots are still busy with the re-attached trials";
  EXPECT_EQ(GetTrial(starts[1].trial_id()).state(), v1::TRIAL_RUNNING);
  Report(a2, starts[1], 0.8);
  Report(a2, third, 0.6);
  auto fourth = a2->Starts().at(0);
  Report(a2, fourth, 0.2);
  auto s = GetSearch(id);
  EXPECT_EQ(s.state(), v1::SEARCH_COMPLETED);
  EXPECT_EQ(s.completed(), 4);
  EXPECT_DOUBLE_EQ(s.best_objective(), 0.8);
}

}  // namespace
}  // namespace ladder::server
