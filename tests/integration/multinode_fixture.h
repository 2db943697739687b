#pragma once
// The fixture of the multi-node integration tests (multinode_test.cc, multinode_stops_test.cc): one coordinator
// and in-process workers, each acting as a node. Gloo trials rendezvous on ports of their own per test process;
// mpirun reaches its second "host" through an rsh agent that runs the command on this machine, as ssh would on a
// cluster.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server/server.h"
#include "tests/integration/system_support.h"
#include "tests/integration/test_support.h"
#include "worker/worker.h"

namespace ladder::testing {

class MultiNode : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = FreshDir("multinode");
    // mpirun's remote launch: the "host" argument is dropped and the command runs on this machine, with a
    // session directory of the host's own (two daemons on one machine raced for the same one: "File exists").
    agent_ = (dir_ / "fake-rsh").string();
    std::ofstream(agent_) << "#!/bin/sh\nexport OMPI_MCA_orte_tmpdir_base=\"" << dir_.string()
                          << "/ompi-$1\"\nmkdir -p \"$OMPI_MCA_orte_tmpdir_base\"\nshift\nexec sh -c \"$*\"\n";
    chmod(agent_.c_str(), 0755);
    server::ServerOptions& so = options_;
    so.listen = "127.0.0.1:0";
    so.db_path = (dir_ / "ladder.db").string();
    // Tests run side by side (ctest -j): each coordinator's trials rendezvous on ports of their own (by process),
    // not on 29500 + trial id, which every test's first trial would share; a port taken anyway costs a restart.
    // Below Linux's ephemeral ports (32768-60999), which any outgoing connection on this machine may hold.
    port_base_ = 10000 + static_cast<int>(getpid() % 1000) * kPortSpan;
    so.coordinator.rendezvous_port_base = port_base_;
    so.coordinator.rendezvous_port_span = kPortSpan;
    // Two "hosts" on one machine: their daemons would both publish the hwloc topology in shared memory at the
    // address each picked (Open MPI 4.1's rtc/hwloc; orted segfaulted in hwloc_shmem_topology_write in 8 of 40
    // runs). Not needed here.
    so.coordinator.mpirun = {"mpirun", "--allow-run-as-root", "--oversubscribe", "--mca", "plm_rsh_agent", agent_,
                             "--mca", "btl", "self,vader,tcp", "--mca", "rtc", "^hwloc"};
    server_ = std::make_unique<server::Server>(so);
    server_->Start();
    channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    stub_ = v1::Ladder::NewStub(channel_);
  }
  void TearDown() override {
    for (auto& w : workers_) w->Stop();
    server_->Stop();
    std::filesystem::remove_all(dir_);
  }
  // Two workers, "nodea" and "nodeb", one slot each, reachable at `address_a` / `address_b`.
  void StartNodes(const std::string& address_a, const std::string& address_b) {
    AddNode("nodea", address_a);
    AddNode("nodeb", address_b);
  }
  // One more worker (a node) with one slot, its trial directory under the test's.
  void AddNode(const std::string& name, const std::string& address) {
    worker::WorkerOptions wo;
    wo.server = server_->address();
    wo.node_id = name;
    wo.address = address;
    wo.slots = 1;
    wo.trial_dir = (dir_ / name).string();
    wo.search_dirs = {LADDER_TEST_BIN_DIR};
    workers_.push_back(std::make_unique<worker::Worker>(wo));
    workers_.back()->Start();
    ASSERT_TRUE(workers_.back()->WaitRegistered(std::chrono::seconds(10)));
  }
  int64_t CreateSearch(const std::string& yaml, v1::Priority priority = v1::PRIORITY_SEARCH) {
    grpc::ClientContext ctx;
    v1::CreateSearchRequest req;
    req.set_spec_yaml(yaml);
    req.set_priority(priority);
    v1::CreateSearchResponse resp;
    auto st = stub_->CreateSearch(&ctx, req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return st.ok() ? resp.search().id() : 0;
  }
  // Follows the search's events until one of its trials has points stored, or the deadline passes.
  bool WaitForMetrics(int64_t search_id, std::chrono::seconds deadline) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + deadline);
    v1::WatchRequest req;
    req.set_search_id(search_id);
    auto watch = stub_->Watch(&ctx, req);
    v1::Event ev;
    bool printing = false;
    while (!printing && watch->Read(&ev)) printing = ev.kind() == v1::Event::TRIAL_METRICS;
    ctx.TryCancel();
    watch->Finish();
    return printing;
  }
  // The processes whose environment names a directory under the test's (every rank, launcher and helper a
  // worker started here: LADDER_TRIAL_DIR and LADDER_CHECKPOINT_DIR are under it), as "pid: command".
  std::vector<std::string> TrialProcesses() const {
    std::vector<std::string> out;
    const std::string needle = dir_.string() + "/";
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
      const std::string pid = e.path().filename().string();
      if (pid.find_first_not_of("0123456789") != std::string::npos || pid == std::to_string(getpid())) continue;
      std::ifstream env(e.path() / "environ", std::ios::binary);
      const std::string text((std::istreambuf_iterator<char>(env)), std::istreambuf_iterator<char>());
      if (text.find(needle) == std::string::npos) continue;
      std::ifstream cmd(e.path() / "cmdline", std::ios::binary);
      std::string line((std::istreambuf_iterator<char>(cmd)), std::istreambuf_iterator<char>());
      for (char& c : line) c = c == '\0' ? ' ' : c;
      out.push_back(pid + ": " + line.substr(0, 200));
    }
    return out;
  }
  // Waits (up to `deadline`) until no process of TrialProcesses() is left; what is left then.
  std::vector<std::string> WaitForNoTrialProcess(std::chrono::seconds deadline) const {
    const auto until = std::chrono::steady_clock::now() + deadline;
    auto left = TrialProcesses();
    while (!left.empty() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      left = TrialProcesses();
    }
    return left;
  }
  std::optional<v1::Search> Run(const std::string& yaml, std::chrono::seconds deadline) {
    grpc::ClientContext ctx;
    v1::CreateSearchRequest req;
    req.set_spec_yaml(yaml);
    v1::CreateSearchResponse resp;
    auto st = stub_->CreateSearch(&ctx, req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    if (!st.ok()) return std::nullopt;
    return WaitForSearchEnd(*stub_, resp.search().id(), deadline);
  }
  v1::Trial OnlyTrial(int64_t search_id) {
    grpc::ClientContext ctx;
    v1::ListTrialsRequest req;
    req.set_search_id(search_id);
    v1::ListTrialsResponse resp;
    EXPECT_TRUE(stub_->ListTrials(&ctx, req, &resp).ok());
    EXPECT_EQ(resp.trials_size(), 1);
    grpc::ClientContext ctx2;
    v1::GetTrialRequest g;
    g.set_trial_id(resp.trials(0).id());
    g.set_include_metrics(true);
    v1::GetTrialResponse t;
    EXPECT_TRUE(stub_->GetTrial(&ctx2, g, &t).ok());
    return t.trial();
  }
  // The end of every trial's stderr.log under the test's directory (for failure messages).
  std::string TrialLogs() const {
    std::string out;
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(dir_, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (it->path().filename() != "stderr.log") continue;
      std::ifstream in(it->path());
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (text.size() > 3000) text = "..." + text.substr(text.size() - 3000);
      out += "\n--- " + it->path().string() + ":\n" + text;
    }
    return out;
  }
  static double LastValue(const v1::Trial& t, const std::string& name) {
    for (int i = t.metrics_size() - 1; i >= 0; --i) {
      auto it = t.metrics(i).values().find(name);
      if (it != t.metrics(i).values().end()) return it->second;
    }
    return -1;
  }
  static std::string TrainSpec(const std::string& comm, const std::string& launcher) {
    return "name: two-nodes-" + comm + "\n"
           "objective: {metric: val_accuracy, mode: max}\n"
           "budget: {max_trials: 1, max_retries: 0}\n"
           "resources: {nodes: 2, ranks_per_node: 1, launcher: " + launcher + "}\n"
           "command: [ladder-train, --comm, " + comm + ", --epochs, '3', --batch-size, '32', --lr, '{lr}',\n"
           "          --prefetch, '0']\n"
           "env: {OMP_NUM_THREADS: '1'}\n"
           "space:\n  lr: {type: categorical, values: ['0.05']}\n";
  }

  static constexpr int kPortSpan = 16;
  int port_base_ = 0;
  std::filesystem::path dir_;
  std::string agent_;
  server::ServerOptions options_;  // the coordinator's, for a restart on the same database
  std::unique_ptr<server::Server> server_;
  std::vector<std::unique_ptr<worker::Worker>> workers_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Ladder::Stub> stub_;
};

}  // namespace ladder::testing
