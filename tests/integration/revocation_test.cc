// A token's end reaches what it opened, on a real coordinator (gRPC on port 0, in-process workers, real trial
// processes): revoking a worker token ends that worker's stream (its running trial waits for another node without
// using an attempt, and a search started afterwards never runs there); revoking a viewer token ends its Watch
// stream with UNAUTHENTICATED "revoked"; a token created with a short expiry is refused once it expired and ends
// the streams it opened then, without anyone polling.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <future>
#include <set>

#include "server/server.h"
#include "tests/support/process.h"
#include "worker/worker.h"

namespace ladder {
namespace {

constexpr const char* kAdmin = "the-admin-token";

std::unique_ptr<grpc::ClientContext> Ctx(const std::string& token, std::chrono::seconds deadline) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->AddMetadata("authorization", "Bearer " + token);
  ctx->set_deadline(std::chrono::system_clock::now() + deadline);
  return ctx;
}

// A search of one trial that waits while `hold` exists, then reports and exits; no retries: a lost attempt fails it.
std::string HeldSpec(const std::string& name, const std::filesystem::path& hold) {
  return "name: " + name +
         "\nobjective: {metric: m, mode: max}\nbudget: {max_trials: 1, max_retries: 0}\n"
         "command: [/bin/sh, -c, 'while [ -e " + hold.string() +
         " ]; do sleep 0.05; done; echo \"{{\\\"step\\\": 1, \\\"m\\\": 1}}\"']\n"
         "space:\n  x: {type: float, low: 0, high: 1}\n";
}

class RevocationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server::ServerOptions so;
    so.listen = "127.0.0.1:0";
    so.db_path = (dir_ / "ladder.db").string();
    so.token = kAdmin;
    server_ = std::make_unique<server::Server>(so);
    server_->Start();
    stub_ = v1::Ladder::NewStub(grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    for (auto& w : workers_) w->Stop();
    server_->Stop();
  }
  v1::CreateTokenResponse CreateToken(v1::TokenRole role, const std::string& name, double expires_in_s = 0) {
    v1::CreateTokenRequest req;
    req.set_role(role);
    req.set_name(name);
    req.set_expires_in_s(expires_in_s);
    v1::CreateTokenResponse resp;
    const grpc::Status st = stub_->CreateToken(Ctx(kAdmin, std::chrono::seconds(10)).get(), req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return resp;
  }
  void Revoke(const std::string& name) {
    v1::RevokeTokenRequest req;
    req.set_token(name);
    v1::RevokeTokenResponse resp;
    const grpc::Status st = stub_->RevokeToken(Ctx(kAdmin, std::chrono::seconds(10)).get(), req, &resp);
    ASSERT_TRUE(st.ok()) << st.error_message();
  }
  int64_t CreateSearch(const std::string& yaml) {
    v1::CreateSearchRequest req;
    req.set_spec_yaml(yaml);
    v1::CreateSearchResponse resp;
    const grpc::Status st = stub_->CreateSearch(Ctx(kAdmin, std::chrono::seconds(10)).get(), req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return resp.search().id();
  }
  v1::Trial GetTrial(int64_t id) {
    v1::GetTrialRequest req;
    req.set_trial_id(id);
    v1::GetTrialResponse resp;
    const grpc::Status st = stub_->GetTrial(Ctx(kAdmin, std::chrono::seconds(10)).get(), req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return resp.trial();
  }
  // Follows the search's trials (the Watch stream's snapshot, then each update) until `done` holds for one; that
  // trial, or nullopt when the deadline passed first.
  std::optional<v1::Trial> WaitForTrial(int64_t search_id, const std::function<bool(const v1::Trial&)>& done,
                                        std::chrono::seconds deadline = std::chrono::seconds(60)) {
    auto ctx = Ctx(kAdmin, deadline);
    v1::WatchRequest req;
    req.set_search_id(search_id);
    auto reader = stub_->Watch(ctx.get(), req);
    v1::Event ev;
    while (reader->Read(&ev)) {
      if (ev.kind() == v1::Event::TRIAL_UPDATED && done(ev.trial())) {
        ctx->TryCancel();
        reader->Finish();
        return ev.trial();
      }
    }
    reader->Finish();
    return std::nullopt;
  }
  // An in-process ladder-worker on `node` with `token`; `refused` gets the coordinator's refusal when it comes.
  worker::Worker& StartWorker(const std::string& node, const std::string& token,
                              std::shared_ptr<std::promise<std::string>> refused = nullptr) {
    worker::WorkerOptions wo;
    wo.server = server_->address();
    wo.token = token;
    wo.node_id = node;
    wo.slots = 1;
    wo.trial_dir = (dir_ / ("trials-" + node)).string();
    wo.warm_starts = false;
    if (refused) wo.on_refused = [refused](const std::string& why) { refused->set_value(why); };
    workers_.push_back(std::make_unique<worker::Worker>(wo));
    workers_.back()->Start();
    EXPECT_TRUE(workers_.back()->WaitRegistered(std::chrono::seconds(20))) << node;
    return *workers_.back();
  }

  testing::TempDir dir_{"revocation"};
  std::unique_ptr<server::Server> server_;
  std::unique_ptr<v1::Ladder::Stub> stub_;
  std::vector<std::unique_ptr<worker::Worker>> workers_;
};

TEST_F(RevocationTest, RevokingAWorkerTokenEndsItsStreamAndItsTrialWaitsForAnotherNodeWithItsAttempt) {
  const std::filesystem::path hold = dir_ / "hold";
  std::ofstream(hold) << "x";
  const std::string w1 = CreateToken(v1::TOKEN_ROLE_WORKER, "w1").secret();
  auto refused = std::make_shared<std::promise<std::string>>();
  auto refusal = refused->get_future();
  worker::Worker& a = StartWorker("a", w1, refused);
  const int64_t first = CreateSearch(HeldSpec("before", hold));
  auto running = WaitForTrial(first, [](const v1::Trial& t) { return t.state() == v1::TRIAL_RUNNING; });
  ASSERT_TRUE(running.has_value());
  ASSERT_EQ(running->placement_size(), 1);
  EXPECT_EQ(running->placement(0).node_id(), "a");

  Revoke("w1");
  ASSERT_EQ(refusal.wait_for(std::chrono::seconds(20)), std::future_status::ready)
      << "the worker's stream stayed open after its token was revoked";
  const std::string why = refusal.get();
  EXPECT_NE(why.find("the token was revoked"), std::string::npos) << why;
  a.Stop();  // as ladder-worker does when refused: its trials stop, and it exits 5
  // The trial waits for another node with its attempt (max_retries is 0: a counted loss would have failed it).
  auto waiting = WaitForTrial(first, [](const v1::Trial& t) { return t.state() != v1::TRIAL_RUNNING; });
  ASSERT_TRUE(waiting.has_value());
  EXPECT_EQ(waiting->state(), v1::TRIAL_PENDING) << waiting->error();
  EXPECT_EQ(waiting->attempt(), 0);

  // A search started after the revocation runs only where a valid token is: on b, never on a.
  const int64_t second = CreateSearch(HeldSpec("after", hold));
  std::filesystem::remove(hold);
  StartWorker("b", CreateToken(v1::TOKEN_ROLE_WORKER, "w2").secret());
  for (int64_t search : {first, second}) {
    auto ended = WaitForTrial(search, [](const v1::Trial& t) { return t.state() != v1::TRIAL_PENDING && t.state() != v1::TRIAL_RUNNING; });
    ASSERT_TRUE(ended.has_value()) << "search " << search;
    EXPECT_EQ(ended->state(), v1::TRIAL_COMPLETED) << ended->error();
    v1::ListTrialsRequest req;
    req.set_search_id(search);
    v1::ListTrialsResponse trials;
    ASSERT_TRUE(stub_->ListTrials(Ctx(kAdmin, std::chrono::seconds(10)).get(), req, &trials).ok());
    ASSERT_EQ(trials.trials_size(), 1);
    const v1::Trial t = GetTrial(trials.trials(0).id());
    EXPECT_EQ(t.attempt(), 0) << "search " << search;
    ASSERT_GE(t.attempts_size(), 1);
    EXPECT_EQ(t.attempts(t.attempts_size() - 1).nodes(0), "b") << "search " << search;
    for (const auto& run : t.attempts()) {
      if (search == second) {
        EXPECT_NE(run.nodes(0), "a") << "a search started after the revocation ran on a";
      }
    }
  }
}

TEST_F(RevocationTest, RevokingAViewerTokenEndsItsWatchStreamUnauthenticated) {
  const std::string viewer = CreateToken(v1::TOKEN_ROLE_VIEWER, "colleague").secret();
  auto ctx = Ctx(viewer, std::chrono::seconds(30));
  auto reader = stub_->Watch(ctx.get(), v1::WatchRequest());
  v1::Event ev;
  ASSERT_TRUE(reader->Read(&ev));  // the snapshot: the stream is open
  Revoke("colleague");
  // The stream ends on the coordinator's loop before the next call is handled there: it never sees this search.
  const int64_t after = CreateSearch(HeldSpec("after", dir_ / "hold"));
  std::set<int64_t> searches_seen;
  while (reader->Read(&ev)) {
    if (ev.kind() == v1::Event::SEARCH_UPDATED) searches_seen.insert(ev.search().id());
  }
  const grpc::Status st = reader->Finish();
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED) << st.error_message();
  EXPECT_NE(st.error_message().find("the token was revoked"), std::string::npos) << st.error_message();
  EXPECT_EQ(searches_seen.count(after), 0u) << "a search created after the revocation reached the revoked watcher";
}

TEST_F(RevocationTest, AnExpiredTokenIsRefusedAndTheStreamsItOpenedEnd) {
  const v1::CreateTokenResponse viewer = CreateToken(v1::TOKEN_ROLE_VIEWER, "short", 4);
  const v1::CreateTokenResponse worker_token = CreateToken(v1::TOKEN_ROLE_WORKER, "short-worker", 4);
  EXPECT_NEAR(viewer.token().expires_unix() - viewer.token().created_unix(), 4, 0.01);
  v1::ListTokensResponse listed;
  ASSERT_TRUE(stub_->ListTokens(Ctx(kAdmin, std::chrono::seconds(10)).get(), v1::ListTokensRequest(), &listed).ok());
  ASSERT_EQ(listed.tokens_size(), 2);
  EXPECT_EQ(listed.tokens(0).expires_unix(), viewer.token().expires_unix());

  auto refused = std::make_shared<std::promise<std::string>>();
  auto refusal = refused->get_future();
  StartWorker("short", worker_token.secret(), refused);
  auto ctx = Ctx(viewer.secret(), std::chrono::seconds(60));
  auto reader = stub_->Watch(ctx.get(), v1::WatchRequest());
  v1::Event ev;
  while (reader->Read(&ev)) {
  }
  const grpc::Status st = reader->Finish();
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED) << st.error_message();
  EXPECT_NE(st.error_message().find("the token expired at "), std::string::npos) << st.error_message();
  EXPECT_NE(st.error_message().find(" UTC"), std::string::npos) << st.error_message();
  ASSERT_EQ(refusal.wait_for(std::chrono::seconds(30)), std::future_status::ready)
      << "the worker's stream stayed open after its token expired";
  EXPECT_NE(refusal.get().find("the token expired at "), std::string::npos);
  // A new call with it is refused the same way.
  v1::ListSearchesResponse searches;
  const grpc::Status again =
      stub_->ListSearches(Ctx(viewer.secret(), std::chrono::seconds(10)).get(), v1::ListSearchesRequest(), &searches);
  EXPECT_EQ(again.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(again.error_message().find("expired"), std::string::npos) << again.error_message();
  // Its name may be given to a new token now.
  EXPECT_FALSE(CreateToken(v1::TOKEN_ROLE_VIEWER, "short").secret().empty());
}

}  // namespace
}  // namespace ladder
