// Warm starts through the coordinator: a worker (in-process, with a server on port 0) forks its ladder-train
// trials from its ladder-train --zygote once that is ready, reports their metrics and exits as for cold ones, and
// stops them when the search is cancelled.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "server/server.h"
#include "tests/integration/system_support.h"
#include "tests/integration/test_support.h"
#include "worker/worker.h"
#include "tests/support/proc_stat.h"

namespace ladder {
namespace {

namespace fs = std::filesystem;


// This process's child running `ladder-train --zygote` (the in-process worker's), or 0.
int FindZygote() {
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const int pid = std::stoi(name);
    std::ifstream f(e.path() / "cmdline");
    std::string cmd((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (cmd.find(std::string("ladder-train\0--zygote", 21)) != std::string::npos &&
        testing::ReadProcStat(pid).ppid == getpid()) {
      return pid;
    }
  }
  return 0;
}

// The zygote waits for requests in poll (x86-64 syscall 7): it is ready.
bool WaitingForRequests(int pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/syscall");
  long nr = -1;
  f >> nr;
  return nr == SYS_poll || nr == SYS_ppoll;
}

template <class F>
bool Within(std::chrono::seconds limit, F done) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done() && std::chrono::steady_clock::now() < deadline) usleep(10000);
  return done();
}

class WarmStartE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::FreshDir("warm-e2e");
    server::ServerOptions so;
    so.listen = "127.0.0.1:0";
    so.db_path = (dir_ / "ladder.db").string();
    so.token = "secret-token";
    server_ = std::make_unique<server::Server>(so);
    server_->Start();
    worker::WorkerOptions wo;
    wo.server = server_->address();
    wo.token = "secret-token";
    wo.node_id = "w1";
    wo.slots = 1;
    wo.trial_dir = (dir_ / "trials").string();
    wo.search_dirs = {testing::BinDir()};
    worker_ = std::make_unique<worker::Worker>(wo);
    worker_->Start();
    ASSERT_TRUE(worker_->WaitRegistered(std::chrono::seconds(10)));
    stub_ = v1::Ladder::NewStub(grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    worker_->Stop();
    server_->Stop();
    fs::remove_all(dir_);
  }
  int64_t Create(const std::string& yaml) {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer secret-token");
    v1::CreateSearchRequest req;
    req.set_spec_yaml(yaml);
    req.set_spec_path("warm.yaml");
    v1::CreateSearchResponse resp;
    auto st = stub_->CreateSearch(&ctx, req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return resp.search().id();
  }
  std::vector<std::vector<std::string>> Query(const std::string& sql) { return testing::Query(dir_ / "ladder.db", sql); }

  fs::path dir_;
  std::unique_ptr<server::Server> server_;
  std::unique_ptr<worker::Worker> worker_;
  std::unique_ptr<v1::Ladder::Stub> stub_;
};

std::string Spec(const std::string& name, int trials, const std::string& args) {
  return "name: " + name + "\nobjective: {metric: val_loss, mode: min}\nbudget: {max_trials: " +
         std::to_string(trials) + ", parallelism: 1}\ncommand: [ladder-train, --lr, '{lr}', --prefetch, '0', " + args +
         "]\nspace:\n  lr: {type: float, low: 0.01, high: 0.1}\n";
}

TEST_F(WarmStartE2E, LadderTrainTrialsForkFromTheZygoteReportAndStop) {
  // The first trial starts the zygote (and runs cold); every trial completes with its metrics either way.
  const int64_t first = Create(Spec("short", 3, "--data, 'synthetic:256', --epochs, '2', --log-every, '1'"));
  auto done = testing::WaitForSearchEnd(*stub_, first, std::chrono::seconds(120), "secret-token");
  ASSERT_TRUE(done);
  EXPECT_EQ(done->state(), v1::SEARCH_COMPLETED) << done->error();
  EXPECT_EQ(done->completed(), 3);
  for (const auto& row : Query("SELECT t.id, (SELECT COUNT(*) FROM metrics m WHERE m.trial_id = t.id AND "
                               "m.name = 'val_loss') FROM trials t WHERE t.search_id = " + std::to_string(first))) {
    EXPECT_EQ(row[1], "2") << "trial " << row[0] << ": a val_loss per epoch";
  }
  const int zygote = FindZygote();
  ASSERT_GT(zygote, 0) << "the worker started no ladder-train --zygote";
  ASSERT_TRUE(Within(std::chrono::seconds(60), [&] { return WaitingForRequests(zygote); }));

  // A long trial now forks from the zygote: its own process group, stopped by a cancel like a cold one.
  const int64_t second = Create(Spec("long", 1, "--data, 'synthetic:4096', --epochs, '1000', --log-every, '1'"));
  std::string pid;
  ASSERT_TRUE(Within(std::chrono::seconds(60), [&] {
    auto rows = Query("SELECT e.detail FROM events e JOIN trials t ON t.id = e.trial_id WHERE e.kind = "
                      "'trial_started' AND t.search_id = " + std::to_string(second) + " AND (SELECT COUNT(*) FROM "
                      "metrics m WHERE m.trial_id = t.id) > 0");
    if (rows.empty()) return false;
    pid = rows[0][0].substr(rows[0][0].rfind(' ') + 1);  // "w1 pid N"
    return true;
  })) << "the long trial reported no metrics";
  const testing::ProcStat st = testing::ReadProcStat(std::stoi(pid));
  EXPECT_EQ(st.ppid, zygote) << "forked by the worker's zygote";
  EXPECT_EQ(st.pgrp, std::stoi(pid)) << "the leader of its own process group";
  {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer secret-token");
    v1::CancelSearchRequest req;
    req.set_search_id(second);
    v1::CancelSearchResponse resp;
    ASSERT_TRUE(stub_->CancelSearch(&ctx, req, &resp).ok());
  }
  EXPECT_TRUE(Within(std::chrono::seconds(30), [&] {
    const char s = testing::ReadProcStat(std::stoi(pid)).state;
    return s == '?' || s == 'Z';
  })) << "the cancelled trial still runs";
  EXPECT_TRUE(Within(std::chrono::seconds(30), [&] {
    return Query("SELECT COUNT(*) FROM allocations a JOIN trials t ON t.id = a.trial_id WHERE t.search_id = " +
                 std::to_string(second) + " AND a.released_at IS NULL")[0][0] == "0";
  })) << "the worker did not report the cancelled trial's exit";
}

}  // namespace
}  // namespace ladder
