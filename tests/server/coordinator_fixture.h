#pragma once
// Test fixture for the coordinator without sockets: fake worker links, the loop run by hand.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <deque>
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "server/coordinator.h"

namespace ladder::server {

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
    // A parameterized test's name ends in "/N": one path component, so that TearDown removes all of it.
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(name.begin(), name.end(), '/', '_');
    dir_ = std::filesystem::temp_directory_path() / ("ladder-coord-test-" + std::to_string(getpid()) + "-" + name);
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
    CoordinatorOptions o = options_;
    o.heartbeat_timeout = lease_;
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
                                    std::vector<std::pair<int64_t, int64_t>> running = {},
                                    std::map<std::string, std::string> labels = {}) {
    auto link = std::make_shared<FakeLink>();
    v1::WorkerMessage m;
    m.mutable_register_()->set_node_id(node);
    m.mutable_register_()->mutable_resources()->set_hostname(node);
    m.mutable_register_()->mutable_resources()->set_address(node + ".addr");
    m.mutable_register_()->mutable_resources()->set_slots(slots);
    m.mutable_register_()->mutable_resources()->set_cores(slots);
    for (const auto& [k, v] : labels) (*m.mutable_register_()->mutable_resources()->mutable_labels())[k] = v;
    for (auto [id, epoch] : running) {
      auto* r = m.mutable_register_()->add_running();
      r->set_trial_id(id);
      r->set_assignment_epoch(epoch);
    }
    coord_->OnWorkerMessage(link, m);
    Drain();
    return link;
  }
  int64_t CreateSearch(const std::string& yaml = kSpec, v1::Priority priority = v1::PRIORITY_UNSPECIFIED) {
    v1::CreateSearchRequest req;
    req.set_spec_yaml(yaml);
    req.set_priority(priority);
    v1::CreateSearchResponse resp;
    auto st = coord_->CreateSearch(req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    Drain();
    return resp.search().id();
  }
  // A search of one-slot trials (retries enough), and `node` lost three times while running one of them (the
  // default quarantine_after): the node ends quarantined.
  void LoseNodeThreeTimesWhileRunning(const std::string& node) {
    CreateSearch(R"(
name: flaky
objective: {metric: score, mode: max}
budget: {max_trials: 10, parallelism: 1, max_retries: 5, max_failed_trials: 10}
command: [run]
space:
  x: {type: float, low: 0.0, high: 1.0}
)");
    for (int i = 0; i < 3; ++i) {
      auto link = Connect(node, 1);
      ASSERT_EQ(link->Starts().size(), 1u) << "round " << i;
      coord_->OnWorkerGone(link, "connection reset");
      Drain();
    }
  }
  // One metrics line of a run; with seq >= 0 it carries that sequence number (first_seq).
  void Point(const std::shared_ptr<FakeLink>& link, const v1::StartTrial& s, int64_t step,
             const std::map<std::string, double>& values, int64_t seq = -1) {
    v1::WorkerMessage m;
    auto* mr = m.mutable_metrics();
    mr->set_trial_id(s.trial_id());
    mr->set_assignment_epoch(s.assignment_epoch());
    if (seq >= 0) mr->set_first_seq(seq);
    auto* p = mr->add_points();
    p->set_step(step);
    for (const auto& [k, v] : values) (*p->mutable_values())[k] = v;
    coord_->OnWorkerMessage(link, m);
    Drain();
  }
  void Metric(const std::shared_ptr<FakeLink>& link, const v1::StartTrial& s, double score) {
    Point(link, s, 1, {{"score", score}});
  }
  // One node's run of a trial ends.
  void Exit(const std::shared_ptr<FakeLink>& link, const v1::StartTrial& s, int exit_code, bool cancelled = false) {
    v1::WorkerMessage e;
    e.mutable_exited()->set_trial_id(s.trial_id());
    e.mutable_exited()->set_assignment_epoch(s.assignment_epoch());
    e.mutable_exited()->set_exit_code(exit_code);
    e.mutable_exited()->set_cancelled(cancelled);
    coord_->OnWorkerMessage(link, e);
    Drain();
  }
  // The run reports `score` and exits.
  void Report(const std::shared_ptr<FakeLink>& link, const v1::StartTrial& s, double score, int exit_code = 0) {
    Metric(link, s, score);
    Exit(link, s, exit_code);
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

  CoordinatorOptions options_;  // what Open() starts the coordinator with (timeouts set there)
  std::chrono::milliseconds lease_{200};  // the heartbeat timeout Open() gives it (also the re-attach window)
  boost::asio::io_context loop_;
  std::filesystem::path dir_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<Coordinator> coord_;
};

}  // namespace ladder::server
