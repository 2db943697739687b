// Bad input gets a clear error and nothing else (issue 22): a spec the coordinator cannot afford is refused by
// CreateSearch with its limit, and a trial whose stdout is hostile (a 10 MB line, bytes that are not UTF-8,
// NaN, a flood of lines) still completes with its metrics, its ignored lines counted and escaped, warnings that
// name it, and bounded memory. Server and worker in this process on port 0, real trial processes.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <fstream>

#include "common/printable.h"
#include "server/server.h"
#include "tests/integration/system_support.h"
#include "tests/integration/test_support.h"
#include "worker/worker.h"

namespace ladder {
namespace {

// The process's peak resident memory so far (VmHWM), in KiB.
int64_t PeakRssKb() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == "VmHWM:") {
      int64_t kb = 0;
      in >> kb;
      return kb;
    }
  }
  return -1;
}

class HostileInput : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::FreshDir("hostile");
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
    worker_ = std::make_unique<worker::Worker>(wo);
    worker_->Start();
    ASSERT_TRUE(worker_->WaitRegistered(std::chrono::seconds(10)));
    stub_ = v1::Ladder::NewStub(grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    worker_->Stop();
    server_->Stop();
    std::filesystem::remove_all(dir_);
  }
  grpc::Status Create(const std::string& yaml, v1::CreateSearchResponse* resp) {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer secret-token");
    v1::CreateSearchRequest req;
    req.set_spec_yaml(yaml);
    req.set_spec_path("hostile.yaml");
    return stub_->CreateSearch(&ctx, req, resp);
  }

  std::filesystem::path dir_;
  std::unique_ptr<server::Server> server_;
  std::unique_ptr<worker::Worker> worker_;
  std::unique_ptr<v1::Ladder::Stub> stub_;
};

constexpr const char* kHead = "name: h\nobjective: {metric: score, mode: max}\nbudget: {max_trials: 1}\ncommand: [echo]\n";

// The spec that took 'ladder search validate' over a minute (a categorical of 500,000 values) and one just past
// the per-list limit are refused by CreateSearch with the limit named; nothing is stored.
TEST_F(HostileInput, CreateSearchRefusesASpecPastItsLimits) {
  std::string huge = std::string(kHead) + "space:\n  x: {type: categorical, values: [";
  for (int i = 0; i < 500000; ++i) huge += (i ? ",v" : "v") + std::to_string(i);
  huge += "]}\n";
  v1::CreateSearchResponse resp;
  auto st = Create(huge, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(st.error_message().find("hostile.yaml:1:1: the spec is"), std::string::npos) << st.error_message();
  EXPECT_NE(st.error_message().find("the limit is 262144"), std::string::npos) << st.error_message();

  std::string wide = std::string(kHead) + "space:\n  x: {type: categorical, values: [";
  for (int i = 0; i < 10001; ++i) wide += (i ? ",v" : "v") + std::to_string(i);
  wide += "]}\n";
  st = Create(wide, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(st.error_message().find("hostile.yaml:6:"), std::string::npos) << st.error_message();
  EXPECT_NE(st.error_message().find("space.x.values: more than 10000 items"), std::string::npos) << st.error_message();

  // A terminal escape sequence (a proto string is UTF-8, so bytes that are not never reach the coordinator; the
  // CLI refuses them itself).
  st = Create(std::string(kHead) + "space:\n  x: {type: float, low: 0, high: 1}\nbad: \x1b[2J\n", &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(st.error_message().find("hostile.yaml:7:6: bad: a control character (byte \\x1b)"), std::string::npos)
      << st.error_message();
  EXPECT_TRUE(IsValidUtf8(st.error_message()));
  EXPECT_EQ(testing::Query(dir_ / "ladder.db", "SELECT COUNT(*) FROM searches")[0][0], "0");
}

// The trial prints, in order: a 10 MB line, a line that is not UTF-8, a metrics line with NaN and Infinity, a
// flood of 200,000 log lines, the bad line again, then its score, and bytes that are not UTF-8 on stderr (whose
// tail goes out with its exit: raw, it made the coordinator drop that message). The search completes with the score; the
// ignored lines are counted and the last one stored escaped; the worker warned naming the trial a handful of
// times (1st, 10th, 100th, ...), not once per line; memory stayed bounded.
TEST_F(HostileInput, HostileTrialOutputIsCountedEscapedAndWarnedAboutWithBoundedMemory) {
  const auto script = dir_ / "hostile.py";
  std::ofstream(script) << R"(import sys
out = sys.stdout.buffer
out.write(b'{"score": ' + b'1' * (10 << 20) + b'}\n')
out.write(b'{"lo\xffss": 1}\n')
out.write(b'{"step": 1, "loss": NaN, "grad": Infinity, "score": 0.5}\n')
for i in range(200000):
    out.write(b'epoch %d: training, not a metrics line\n' % i)
out.write(b'{"lo\xffss": 1}\n')
out.write(b'{"step": 2, "score": 0.75}\n')
sys.stderr.buffer.write(b'\xff\xfe binary \x1b[2J on stderr\n')
)";
  const std::string yaml = "name: hostile\nobjective: {metric: score, mode: max}\nbudget: {max_trials: 1}\n"
                           "command: [python3, " + script.string() + "]\nspace:\n  x: {type: float, low: 0, high: 1}\n";
  const int64_t rss_before = PeakRssKb();
  ::testing::internal::CaptureStderr();
  v1::CreateSearchResponse resp;
  auto st = Create(yaml, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  auto done = testing::WaitForSearchEnd(*stub_, resp.search().id(), std::chrono::seconds(120), "secret-token");
  const std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(done);
  EXPECT_EQ(done->state(), v1::SEARCH_COMPLETED) << done->error();

  auto trials = testing::Query(dir_ / "ladder.db",
                               "SELECT id, state, objective, metric_count, ignored_lines, last_ignored_line FROM trials");
  ASSERT_EQ(trials.size(), 1u);
  const auto& t = trials[0];
  EXPECT_EQ(t[1], std::to_string(v1::TRIAL_COMPLETED));
  EXPECT_DOUBLE_EQ(std::stod(t[2]), 0.75);
  EXPECT_EQ(t[3], "2") << "the NaN line's score and the last line";
  EXPECT_EQ(t[4], "200003") << "the 10 MB line, the bad line twice and the flood";
  EXPECT_EQ(t[5], "{\"lo\\xffss\": 1}") << "escaped, never raw bytes";
  EXPECT_EQ(testing::Query(dir_ / "ladder.db", "SELECT COUNT(*) FROM metrics WHERE name IN ('loss', 'grad')")[0][0],
            "0");

  const std::string who = "trial " + t[0] + ": ";
  EXPECT_NE(log.find(who + "stdout line ignored (longer than 64 KiB; 1 so far)"), std::string::npos) << log;
  EXPECT_NE(log.find(who + "stdout line ignored (not a JSON object; 100000 so far)"), std::string::npos) << log;
  EXPECT_NE(log.find(who + "'grad' is NaN or infinite, skipped (1 lines so far)"), std::string::npos) << log;
  size_t warnings = 0;
  for (size_t pos = 0; (pos = log.find(who + "stdout line ignored", pos)) != std::string::npos; ++pos) ++warnings;
  EXPECT_LE(warnings, 8u) << "the 1st, 10th, 100th, ... ignored line, not every one";
  EXPECT_TRUE(IsValidUtf8(log));
  // Neither the 10 MB line nor the flood is held: the peak grows by far less than what the trial printed (18 MB).
  const int64_t growth_kb = PeakRssKb() - rss_before;
  EXPECT_LT(growth_kb, 64 * 1024) << "peak RSS grew by " << growth_kb << " KiB";
}

}  // namespace
}  // namespace ladder
