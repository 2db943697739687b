// The dashboard's sessions on a real coordinator (HTTP on port 0, raw HTTP/1.1 as a browser sends it): a session
// is judged by the token it logged in with — once that token is revoked or has expired, the cookie reads nothing,
// its POST cancels nothing (CSRF token or not), its open event stream gets a last error event and closes — and a
// session ends on its own after its idle and its absolute lifetime (a clock the test moves).
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <chrono>

#include "ladder/v1/ladder.grpc.pb.h"
#include "server/http/http_server.h"
#include "server/server.h"
#include "tests/support/process.h"

namespace ladder {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
constexpr const char* kAdmin = "the-admin-token";
constexpr const char* kSpec =
    "name: s\nobjective: {metric: m, mode: max}\nbudget: {max_trials: 1}\ncommand: [/bin/true]\n"
    "space:\n  x: {type: float, low: 0, high: 1}\n";

// One request on a fresh connection: everything the server answered (status line first) until it closed.
std::string Exchange(int port, const std::string& request) {
  asio::io_context ioc;
  tcp::socket sock(ioc);
  sock.connect({asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)});
  asio::write(sock, asio::buffer(request));
  std::string out;
  char buf[4096];
  boost::system::error_code ec;
  while (!ec) out.append(buf, sock.read_some(asio::buffer(buf), ec));
  return out;
}

std::string Get(const std::string& path, const std::string& headers) {
  return "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + headers + "\r\n";
}

// The value of the ladder_session cookie a /login answer sets ("" when none).
std::string SessionCookie(const std::string& answer) {
  const std::string key = "ladder_session=";
  const size_t at = answer.find(key);
  if (at == std::string::npos) return "";
  return answer.substr(at + key.size(), answer.find(';', at) - at - key.size());
}

// Reads `sock` until the server closes it or `limit` passes; what came.
std::string ReadUntilClosed(tcp::socket& sock, std::chrono::seconds limit) {
  std::string out;
  pollfd p{sock.native_handle(), POLLIN, 0};
  for (auto until = std::chrono::steady_clock::now() + limit; std::chrono::steady_clock::now() < until;) {
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    boost::system::error_code ec;
    out.append(buf, sock.read_some(asio::buffer(buf), ec));
    if (ec) return out;
  }
  return out + "\n(still open)";
}

class DashboardSessionTest : public ::testing::Test {
 protected:
  void Start(server::SessionLimits limits = {}) {
    server::ServerOptions so;
    so.listen = "127.0.0.1:0";
    so.http_listen = "127.0.0.1:0";
    so.db_path = (dir_ / "ladder.db").string();
    so.token = kAdmin;
    so.http_sessions = limits;
    so.http_clock = [this] { return std::chrono::steady_clock::time_point(std::chrono::seconds(offset_s_.load())); };
    server_ = std::make_unique<server::Server>(so);
    server_->Start();
    port_ = server_->http()->port();
    stub_ = v1::Ladder::NewStub(grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  }
  std::unique_ptr<grpc::ClientContext> Ctx() {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->AddMetadata("authorization", std::string("Bearer ") + kAdmin);
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return ctx;
  }
  std::string CreateToken(v1::TokenRole role, const std::string& name, double expires_in_s = 0) {
    v1::CreateTokenRequest req;
    req.set_role(role);
    req.set_name(name);
    req.set_expires_in_s(expires_in_s);
    v1::CreateTokenResponse resp;
    const grpc::Status st = stub_->CreateToken(Ctx().get(), req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return resp.secret();
  }
  // Logs in with `token`: the session cookie's value.
  std::string Login(const std::string& token) {
    const std::string answer = Exchange(port_, Get("/login?token=" + token, ""));
    EXPECT_EQ(answer.rfind("HTTP/1.1 303", 0), 0u) << answer;
    return SessionCookie(answer);
  }
  std::string WithCookie(const std::string& path, const std::string& cookie) {
    return Exchange(port_, Get(path, "Cookie: ladder_session=" + cookie + "\r\n"));
  }
  v1::SearchState SearchState(int64_t id) {
    v1::GetSearchRequest req;
    req.set_search_id(id);
    v1::GetSearchResponse resp;
    EXPECT_TRUE(stub_->GetSearch(Ctx().get(), req, &resp).ok());
    return resp.search().state();
  }

  testing::TempDir dir_{"dashboard-session"};
  std::atomic<int64_t> offset_s_{1000000};  // the sessions' clock, in seconds
  std::unique_ptr<server::Server> server_;
  std::unique_ptr<v1::Ladder::Stub> stub_;
  int port_ = 0;
};

TEST_F(DashboardSessionTest, ARevokedTokensSessionReadsNothingCancelsNothingAndItsEventStreamCloses) {
  Start();
  v1::CreateSearchRequest create;
  create.set_spec_yaml(kSpec);
  v1::CreateSearchResponse created;
  ASSERT_TRUE(stub_->CreateSearch(Ctx().get(), create, &created).ok());  // no worker: it stays running
  const int64_t search = created.search().id();
  const std::string a2 = CreateToken(v1::TOKEN_ROLE_ADMIN, "a2");
  const std::string cookie = Login(a2);
  ASSERT_FALSE(cookie.empty());
  const std::string session = WithCookie("/api/session", cookie);
  ASSERT_EQ(session.rfind("HTTP/1.1 200", 0), 0u) << session;
  const size_t csrf_at = session.find("\"csrf\": \"") + 9;
  const std::string csrf = session.substr(csrf_at, session.find('"', csrf_at) - csrf_at);
  ASSERT_EQ(csrf.size(), 48u) << session;
  // An event stream with the cookie, open before the revocation.
  asio::io_context ioc;
  tcp::socket events(ioc);
  events.connect({asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port_)});
  asio::write(events, asio::buffer("GET /api/events HTTP/1.1\r\nHost: x\r\nCookie: ladder_session=" + cookie +
                                   "\r\n\r\n"));
  char head[12];
  asio::read(events, asio::buffer(head));
  ASSERT_EQ(std::string(head, 12), "HTTP/1.1 200");

  v1::RevokeTokenRequest revoke;
  revoke.set_token("a2");
  v1::RevokeTokenResponse revoked;
  ASSERT_TRUE(stub_->RevokeToken(Ctx().get(), revoke, &revoked).ok());

  const std::string rest = ReadUntilClosed(events, std::chrono::seconds(20));
  EXPECT_EQ(rest.find("(still open)"), std::string::npos) << "the event stream outlived its token";
  EXPECT_NE(rest.find("event: ended\ndata: {\"error\": \"the token was revoked"),
            std::string::npos)
      << rest;
  const std::string read = WithCookie("/api/searches", cookie);
  EXPECT_EQ(read.rfind("HTTP/1.1 401", 0), 0u) << read;
  EXPECT_NE(read.find("revoked"), std::string::npos) << read;
  const std::string cancel = Exchange(port_, "POST /api/searches/" + std::to_string(search) +
                                                 "/cancel HTTP/1.1\r\nHost: x\r\nConnection: close\r\nCookie: "
                                                 "ladder_session=" + cookie + "\r\nX-CSRF-Token: " + csrf +
                                                 "\r\nContent-Length: 0\r\n\r\n");
  EXPECT_EQ(cancel.rfind("HTTP/1.1 401", 0), 0u) << cancel;
  EXPECT_NE(cancel.find("revoked"), std::string::npos) << cancel;
  EXPECT_EQ(SearchState(search), v1::SEARCH_RUNNING) << "a revoked token's session cancelled the search";
  // The token itself, as a bearer, is told it was revoked (not that it needs one); a new event stream is refused.
  const std::string bearer = Exchange(port_, Get("/api/searches", "Authorization: Bearer " + a2 + "\r\n"));
  EXPECT_EQ(bearer.rfind("HTTP/1.1 401", 0), 0u) << bearer;
  EXPECT_NE(bearer.find("the token was revoked"), std::string::npos) << bearer;
  const std::string again = WithCookie("/api/events", cookie);
  EXPECT_EQ(again.rfind("HTTP/1.1 401", 0), 0u) << again;
  // A valid token's session is untouched.
  const std::string other = WithCookie("/api/searches", Login(kAdmin));
  EXPECT_EQ(other.rfind("HTTP/1.1 200", 0), 0u) << other;
}

TEST_F(DashboardSessionTest, AnExpiredTokensSessionIsRefusedSayingWhen) {
  Start();
  const std::string cookie = Login(CreateToken(v1::TOKEN_ROLE_VIEWER, "brief", 2));
  ASSERT_FALSE(cookie.empty());
  asio::io_context ioc;
  tcp::socket events(ioc);
  events.connect({asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port_)});
  asio::write(events, asio::buffer("GET /api/events HTTP/1.1\r\nHost: x\r\nCookie: ladder_session=" + cookie +
                                   "\r\n\r\n"));
  // The stream ends when the token expires (the coordinator's timer), with the reason as its last event.
  const std::string rest = ReadUntilClosed(events, std::chrono::seconds(30));
  EXPECT_NE(rest.find("the token expired at "), std::string::npos) << rest;
  const std::string read = WithCookie("/api/searches", cookie);
  EXPECT_EQ(read.rfind("HTTP/1.1 401", 0), 0u) << read;
  EXPECT_NE(read.find("the token expired at "), std::string::npos) << read;
}

TEST_F(DashboardSessionTest, ASessionEndsAfterItsIdleAndItsAbsoluteLifetime) {
  server::SessionLimits limits;
  limits.idle = std::chrono::minutes(30);
  limits.lifetime = std::chrono::hours(2);
  Start(limits);
  const std::string viewer = CreateToken(v1::TOKEN_ROLE_VIEWER, "v");
  std::string cookie = Login(viewer);
  offset_s_ += 29 * 60;  // a request within the idle lifetime renews it
  EXPECT_EQ(WithCookie("/api/searches", cookie).rfind("HTTP/1.1 200", 0), 0u);
  offset_s_ += 30 * 60;
  const std::string idle = WithCookie("/api/searches", cookie);
  EXPECT_EQ(idle.rfind("HTTP/1.1 401", 0), 0u) << idle;
  EXPECT_NE(idle.find("idle for longer than 30m"), std::string::npos) << idle;
  EXPECT_EQ(WithCookie("/api/searches", cookie).rfind("HTTP/1.1 401", 0), 0u) << "an ended session stays ended";

  cookie = Login(viewer);
  for (int i = 0; i < 4; ++i) {  // used every 29 minutes: never idle, 116 minutes old
    offset_s_ += 29 * 60;
    ASSERT_EQ(WithCookie("/api/searches", cookie).rfind("HTTP/1.1 200", 0), 0u) << i;
  }
  offset_s_ += 5 * 60;
  const std::string old = WithCookie("/api/searches", cookie);
  EXPECT_EQ(old.rfind("HTTP/1.1 401", 0), 0u) << old;
  EXPECT_NE(old.find("older than its lifetime of 2h"), std::string::npos) << old;
}

}  // namespace
}  // namespace ladder
