// Who may do what, on a real coordinator: a refusal for every way in that must be shut — a viewer token that
// tries to change something, a revoked token, a worker token on the Ladder service, a viewer token as a worker,
// plaintext to a TLS port, a client certificate from another CA, plaintext on a non-loopback address — and the
// ways that must stay open (a viewer reads, a worker token connects a worker, the admin does everything, over
// mutual TLS). Tokens are stored hashed and their revocation survives a restart.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/certs.h"
#include "common/tls.h"
#include "common/token.h"
#include "server/server.h"
#include "tests/support/process.h"
#include "worker/worker.h"

namespace ladder {
namespace {

constexpr const char* kAdmin = "the-admin-token";
constexpr const char* kSpec =
    "name: s\nobjective: {metric: m, mode: max}\nbudget: {max_trials: 1}\ncommand: [/bin/true]\n"
    "space:\n  x: {type: float, low: 0, high: 1}\n";

std::unique_ptr<grpc::ClientContext> Ctx(const std::string& token) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  if (!token.empty()) ctx->AddMetadata("authorization", "Bearer " + token);
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  return ctx;
}

class AccessTest : public ::testing::Test {
 protected:
  void StartServer(TlsFiles tls = {}) {
    server::ServerOptions so;
    so.listen = "127.0.0.1:0";
    so.db_path = (dir_ / "ladder.db").string();
    so.token = kAdmin;
    so.tls = tls;
    server_ = std::make_unique<server::Server>(so);
    server_->Start();
    stub_ = v1::Ladder::NewStub(grpc::CreateChannel(server_->address(), MakeChannelCredentials(client_tls_)));
  }
  std::string CreateToken(v1::TokenRole role, const std::string& name = "") {
    v1::CreateTokenRequest req;
    req.set_role(role);
    req.set_name(name);
    v1::CreateTokenResponse resp;
    const grpc::Status st = stub_->CreateToken(Ctx(kAdmin).get(), req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return resp.secret();
  }
  grpc::Status List(const std::string& token) {
    v1::ListSearchesResponse resp;
    return stub_->ListSearches(Ctx(token).get(), v1::ListSearchesRequest(), &resp);
  }
  grpc::Status Create(const std::string& token) {
    v1::CreateSearchRequest req;
    req.set_spec_yaml(kSpec);
    v1::CreateSearchResponse resp;
    return stub_->CreateSearch(Ctx(token).get(), req, &resp);
  }
  // A ladder-worker (in this process) with `token`: whether the coordinator registered it within `wait`, and the
  // refusal it heard (empty when none).
  std::pair<bool, std::string> ConnectWorker(const std::string& token, TlsFiles tls, const std::string& node,
                                             std::chrono::seconds wait = std::chrono::seconds(5)) {
    worker::WorkerOptions wo;
    wo.server = server_->address();
    wo.token = token;
    wo.tls = tls;
    wo.node_id = node;
    wo.slots = 1;
    wo.trial_dir = (dir_ / ("trials-" + node)).string();
    auto refusal = std::make_shared<std::string>();
    auto mu = std::make_shared<std::mutex>();
    wo.on_refused = [refusal, mu](const std::string& why) {
      std::lock_guard<std::mutex> g(*mu);
      *refusal = why;
    };
    worker::Worker w(wo);
    w.Start();
    const bool registered = w.WaitRegistered(wait);
    w.Stop();
    std::lock_guard<std::mutex> g(*mu);
    return {registered, *refusal};
  }

  testing::TempDir dir_{"access"};
  TlsFiles client_tls_;
  std::unique_ptr<server::Server> server_;
  std::unique_ptr<v1::Ladder::Stub> stub_;
};

TEST_F(AccessTest, AViewerTokenReadsAndCannotChangeAnything) {
  StartServer();
  const std::string viewer = CreateToken(v1::TOKEN_ROLE_VIEWER, "colleague");
  ASSERT_EQ(viewer.size(), 64u);
  EXPECT_TRUE(List(viewer).ok());
  const grpc::Status create = Create(viewer);
  EXPECT_EQ(create.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(create.error_message().find("viewer token may only read"), std::string::npos) << create.error_message();
  v1::CancelSearchRequest cancel;
  cancel.set_search_id(1);
  v1::CancelSearchResponse cancelled;
  EXPECT_EQ(stub_->CancelSearch(Ctx(viewer).get(), cancel, &cancelled).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  v1::AddProbeRequest probe;  // a probe of the climb adds trials: an operator's call
  probe.set_search_id(1);
  probe.set_global_batch(256);
  probe.add_lrs(0.1);
  v1::AddProbeResponse probed;
  EXPECT_EQ(stub_->AddProbe(Ctx(viewer).get(), probe, &probed).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  v1::EnqueueTrialRequest enqueue;  // a known point adds a trial: an operator's call
  enqueue.set_search_id(1);
  (*enqueue.mutable_params())["x"] = "0.5";
  v1::EnqueueTrialResponse enqueued;
  const grpc::Status refused = stub_->EnqueueTrial(Ctx(viewer).get(), enqueue, &enqueued);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(refused.error_message().find("viewer token may only read"), std::string::npos) << refused.error_message();
  v1::CreateTokenRequest more;
  more.set_role(v1::TOKEN_ROLE_ADMIN);
  v1::CreateTokenResponse made;
  EXPECT_EQ(stub_->CreateToken(Ctx(viewer).get(), more, &made).error_code(), grpc::StatusCode::PERMISSION_DENIED)
      << "a viewer must not mint itself an admin token";
  // The admin token does all of it; no token and a made-up one are refused as unauthenticated.
  EXPECT_TRUE(Create(kAdmin).ok());
  EXPECT_EQ(List("").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(List(std::string(64, 'a')).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  // The Watch stream is a read: the viewer gets it.
  auto ctx = Ctx(viewer);
  v1::WatchRequest wr;
  auto reader = stub_->Watch(ctx.get(), wr);
  v1::Event ev;
  EXPECT_TRUE(reader->Read(&ev));
  ctx->TryCancel();
  reader->Finish();
}

TEST_F(AccessTest, ARevokedTokenIsRefusedAndStaysRevokedAfterARestart) {
  StartServer();
  const std::string t = CreateToken(v1::TOKEN_ROLE_ADMIN, "ci");
  EXPECT_TRUE(Create(t).ok());
  v1::RevokeTokenRequest req;
  req.set_token("ci");
  v1::RevokeTokenResponse resp;
  ASSERT_TRUE(stub_->RevokeToken(Ctx(kAdmin).get(), req, &resp).ok());
  EXPECT_GT(resp.token().revoked_unix(), 0);
  grpc::Status st = List(t);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(st.error_message().find("revoked"), std::string::npos) << st.error_message();
  // A coordinator restarted on the same database still refuses it, and still knows the valid ones.
  const std::string viewer = CreateToken(v1::TOKEN_ROLE_VIEWER);
  server_.reset();
  StartServer();
  EXPECT_EQ(List(t).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(List(viewer).ok());
  v1::ListTokensResponse listed;
  ASSERT_TRUE(stub_->ListTokens(Ctx(kAdmin).get(), v1::ListTokensRequest(), &listed).ok());
  ASSERT_EQ(listed.tokens_size(), 2);
  EXPECT_EQ(listed.tokens(0).name(), "ci");
  EXPECT_GT(listed.tokens(0).revoked_unix(), 0);
  EXPECT_EQ(listed.tokens(1).role(), v1::TOKEN_ROLE_VIEWER);
  EXPECT_EQ(listed.tokens(1).revoked_unix(), 0);
}

TEST_F(AccessTest, TokensAreStoredAsHashesOnly) {
  StartServer();
  const std::string t = CreateToken(v1::TOKEN_ROLE_VIEWER, "hashed");
  server_.reset();  // everything committed and the WAL checkpointed
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2((dir_ / "ladder.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT sha256 FROM tokens WHERE name='hashed'", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(sqlite3_column_text(st, 0))), Sha256Hex(t));
  sqlite3_finalize(st);
  sqlite3_close(db);
  for (const char* suffix : {"", "-wal"}) {
    std::ifstream in((dir_ / "ladder.db").string() + suffix, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    EXPECT_EQ(bytes.str().find(t), std::string::npos) << "the secret is in ladder.db" << suffix;
  }
}

TEST_F(AccessTest, AWorkerTokenSpeaksOnlyTheWorkerProtocol) {
  StartServer();
  const std::string worker_token = CreateToken(v1::TOKEN_ROLE_WORKER);
  const grpc::Status st = List(worker_token);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(st.error_message().find("worker token"), std::string::npos) << st.error_message();
  EXPECT_EQ(Create(worker_token).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  // It connects a worker; a viewer token does not.
  auto [registered, refusal] = ConnectWorker(worker_token, {}, "w1");
  EXPECT_TRUE(registered) << refusal;
  auto [viewer_registered, viewer_refusal] =
      ConnectWorker(CreateToken(v1::TOKEN_ROLE_VIEWER), {}, "v1", std::chrono::seconds(2));
  EXPECT_FALSE(viewer_registered);
  EXPECT_NE(viewer_refusal.find("cannot connect a worker"), std::string::npos) << viewer_refusal;
}

class TlsAccessTest : public AccessTest {
 protected:
  void SetUp() override {
    CertsOptions co;
    co.hosts = {"localhost", "127.0.0.1"};
    CreateCertificates((dir_ / "certs").string(), co);
    CreateCertificates((dir_ / "other").string(), co);
  }
  TlsFiles Files(const std::string& set, const std::string& who) {
    const std::string d = (dir_ / set).string();
    return {d + "/" + who + ".crt", d + "/" + who + ".key", d + "/ca.crt"};
  }
};

TEST_F(TlsAccessTest, MutualTlsAdmitsItsOwnCertificatesAndRefusesPlaintextAndOtherCas) {
  client_tls_ = Files("certs", "client");
  StartServer(Files("certs", "server"));
  EXPECT_TRUE(List(kAdmin).ok());
  auto [registered, refusal] = ConnectWorker(kAdmin, Files("certs", "worker"), "tls-worker");
  EXPECT_TRUE(registered) << refusal;

  auto call = [&](std::shared_ptr<grpc::ChannelCredentials> creds) {
    auto stub = v1::Ladder::NewStub(grpc::CreateChannel(server_->address(), creds));
    v1::ListSearchesResponse resp;
    auto ctx = Ctx(kAdmin);
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
    return stub->ListSearches(ctx.get(), v1::ListSearchesRequest(), &resp);
  };
  EXPECT_EQ(call(grpc::InsecureChannelCredentials()).error_code(), grpc::StatusCode::UNAVAILABLE)
      << "plaintext to a TLS port";
  TlsFiles no_client_cert;
  no_client_cert.ca = Files("certs", "client").ca;
  EXPECT_EQ(call(MakeChannelCredentials(no_client_cert)).error_code(), grpc::StatusCode::UNAVAILABLE)
      << "mutual TLS: a client without a certificate";
  TlsFiles foreign = Files("other", "client");
  foreign.ca = Files("certs", "client").ca;  // trusts the server, presents a certificate another CA signed
  EXPECT_EQ(call(MakeChannelCredentials(foreign)).error_code(), grpc::StatusCode::UNAVAILABLE)
      << "a client certificate from another CA";
  EXPECT_EQ(call(MakeChannelCredentials(Files("other", "client"))).error_code(), grpc::StatusCode::UNAVAILABLE)
      << "a client that trusts another CA does not accept the server";
  auto [foreign_registered, _] =
      ConnectWorker(kAdmin, Files("other", "worker"), "foreign", std::chrono::seconds(2));
  EXPECT_FALSE(foreign_registered) << "a worker certificate from another CA";
}

// The dashboard over HTTPS (curl as the browser): a viewer reads and cannot cancel; plaintext gets nothing.
TEST_F(TlsAccessTest, TheDashboardServesHttpsAndAViewerOnlyReads) {
  if (testing::RunCommand({"/usr/bin/curl", "--version"}, dir_.path).exit_code != 0) GTEST_SKIP() << "curl is not installed";
  server::ServerOptions so;
  so.listen = "127.0.0.1:0";
  so.http_listen = "127.0.0.1:0";
  so.db_path = (dir_ / "ladder.db").string();
  so.token = kAdmin;
  so.tls = Files("certs", "server");
  server_ = std::make_unique<server::Server>(so);
  server_->Start();
  client_tls_ = Files("certs", "client");
  stub_ = v1::Ladder::NewStub(grpc::CreateChannel(server_->address(), MakeChannelCredentials(client_tls_)));
  ASSERT_TRUE(Create(kAdmin).ok());
  const std::string viewer = CreateToken(v1::TOKEN_ROLE_VIEWER);
  const std::string url = server_->dashboard_url();
  ASSERT_EQ(url.rfind("https://127.0.0.1:", 0), 0u) << url;
  auto curl = [&](std::vector<std::string> extra, const std::string& path) {
    std::vector<std::string> args = {"/usr/bin/curl", "-s", "-o", "-", "-w", "\n%{http_code}", "--max-time", "5",
                                     "--cacert", Files("certs", "client").ca};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back(url + path);
    return testing::RunCommand(args, dir_.path);
  };
  auto read = curl({"-H", "Authorization: Bearer " + viewer}, "api/searches");
  EXPECT_EQ(read.exit_code, 0) << read.err;
  EXPECT_NE(read.out.find("\n200"), std::string::npos) << read.out;
  EXPECT_NE(read.out.find("\"searches\""), std::string::npos) << read.out;
  auto cancel = curl({"-X", "POST", "-H", "Authorization: Bearer " + viewer}, "api/searches/1/cancel");
  EXPECT_NE(cancel.out.find("\n403"), std::string::npos) << cancel.out;
  EXPECT_NE(cancel.out.find("may only read"), std::string::npos) << cancel.out;
  auto admin = curl({"-X", "POST", "-H", std::string("Authorization: Bearer ") + kAdmin}, "api/searches/1/cancel");
  EXPECT_NE(admin.out.find("\n200"), std::string::npos) << admin.out;
  // A viewer logs in (the session cookie carries its role), a worker token does not.
  auto login = curl({"-D", "-"}, "login?token=" + viewer);
  EXPECT_NE(login.out.find("ladder_session="), std::string::npos) << login.out;
  auto worker_login = curl({}, "login?token=" + CreateToken(v1::TOKEN_ROLE_WORKER));
  EXPECT_NE(worker_login.out.find("\n401"), std::string::npos) << worker_login.out;
  // Plaintext to the HTTPS port: no answer; a client that does not trust the CA: no connection.
  std::string plain_url = url;
  plain_url.replace(0, 5, "http");
  auto plain = testing::RunCommand({"/usr/bin/curl", "-s", "--max-time", "5", plain_url + "api/searches"}, dir_.path);
  EXPECT_NE(plain.exit_code, 0);
  EXPECT_EQ(plain.out.find("searches"), std::string::npos) << plain.out;
  auto untrusted = testing::RunCommand({"/usr/bin/curl", "-s", "--max-time", "5", "--cacert", Files("other", "client").ca,
                                        "-H", std::string("Authorization: Bearer ") + kAdmin, url + "api/searches"},
                                       dir_.path);
  EXPECT_NE(untrusted.exit_code, 0);
}

TEST(PlaintextListen, ANonLoopbackAddressWithoutTlsIsRefusedUnlessInsecure) {
  EXPECT_EQ(PlaintextListenError("127.0.0.1:50051", false, false, "gRPC"), "");
  EXPECT_EQ(PlaintextListenError("localhost:1", false, false, "gRPC"), "");
  EXPECT_EQ(PlaintextListenError("[::1]:1", false, false, "gRPC"), "");
  EXPECT_EQ(PlaintextListenError("127.9.9.9:1", false, false, "gRPC"), "");
  const std::string err = PlaintextListenError("0.0.0.0:50051", false, false, "gRPC");
  EXPECT_NE(err.find("without TLS"), std::string::npos) << err;
  EXPECT_NE(err.find("--insecure"), std::string::npos) << err;
  EXPECT_NE(PlaintextListenError("10.1.2.3:8080", false, false, "the web dashboard"), "");
  EXPECT_NE(PlaintextListenError("[::]:1", false, false, "gRPC"), "");
  EXPECT_NE(PlaintextListenError("node12:1", false, false, "gRPC"), "");
  EXPECT_EQ(PlaintextListenError("0.0.0.0:50051", true, false, "gRPC"), "");
  EXPECT_EQ(PlaintextListenError("0.0.0.0:50051", false, true, "gRPC"), "");
  // The server refuses before it creates anything.
  testing::TempDir dir("access-listen");
  server::ServerOptions so;
  so.listen = "0.0.0.0:0";
  so.db_path = (dir / "ladder.db").string();
  server::Server srv(so);
  EXPECT_THROW(srv.Start(), std::runtime_error);
  EXPECT_FALSE(std::filesystem::exists(so.db_path));
}

}  // namespace
}  // namespace ladder
