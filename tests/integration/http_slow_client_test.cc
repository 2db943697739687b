// The dashboard's event stream and a client that stops reading: the coordinator drops that client once
// max_queued_bytes wait for it, and keeps serving everyone else (its memory does not grow with a slow browser).
// Stopping the dashboard closes the connections still open.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <chrono>

#include "server/http/http_server.h"
#include "server/server.h"
#include "tests/integration/test_support.h"
#include "tests/support/process.h"

namespace ladder {
namespace {

TEST(HttpSlowClient, AClientThatStopsReadingIsDroppedAndTheCoordinatorServesOn) {
  testing::TempDir dir("http-slow");
  server::ServerOptions so;
  so.listen = "127.0.0.1:0";
  so.db_path = (dir / "ladder.db").string();
  so.token = "t0ken";
  so.http_listen = "127.0.0.1:0";
  so.http_max_queued_bytes = 64 * 1024;
  server::Server srv(so);
  srv.Start();
  ASSERT_NE(srv.http(), nullptr);
  const int port = srv.http()->port();

  // A client with a tiny receive window asks for every event and never reads.
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::socket slow(ioc);
  slow.open(boost::asio::ip::tcp::v4());
  slow.set_option(boost::asio::socket_base::receive_buffer_size(4096));
  slow.connect({boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)});
  boost::asio::write(slow, boost::asio::buffer(std::string("GET /api/events HTTP/1.1\r\nHost: x\r\nAuthorization: "
                                                           "Bearer t0ken\r\n\r\n")));

  auto stub = v1::Ladder::NewStub(grpc::CreateChannel(srv.address(), grpc::InsecureChannelCredentials()));
  const std::string spec = "name: " + std::string(64, 'n') +
                           "\nobjective: {metric: s, mode: max}\nbudget: {max_trials: 1}\ncommand: [run]\n"
                           "space:\n  x: {type: float, low: 0, high: 1}\n";
  int created = 0;
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
       srv.http()->dropped_streams() == 0 && std::chrono::steady_clock::now() < until; ++created) {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer t0ken");
    v1::CreateSearchRequest req;
    req.set_spec_yaml(spec);
    v1::CreateSearchResponse resp;
    grpc::Status st = stub->CreateSearch(&ctx, req, &resp);
    ASSERT_TRUE(st.ok()) << st.error_message();
  }
  EXPECT_EQ(srv.http()->dropped_streams(), 1u) << "after " << created << " searches";
  // Everyone else is served: gRPC, and a new HTTP client.
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", "Bearer t0ken");
  v1::ListSearchesResponse list;
  ASSERT_TRUE(stub->ListSearches(&ctx, v1::ListSearchesRequest(), &list).ok());
  EXPECT_EQ(list.searches_size(), created);
  boost::asio::ip::tcp::socket other(ioc);
  other.connect({boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)});
  boost::asio::write(other, boost::asio::buffer(std::string("GET /api/server HTTP/1.1\r\nHost: x\r\nAuthorization: "
                                                            "Bearer t0ken\r\nConnection: close\r\n\r\n")));
  char buf[16] = {};
  boost::system::error_code ec;
  other.read_some(boost::asio::buffer(buf, 12), ec);
  EXPECT_EQ(std::string(buf, 12), "HTTP/1.1 200");
  srv.Stop();
}

// True when the peer closed `s` within `timeout` (end of file or a reset); false when nothing came.
bool ClosedByPeer(boost::asio::ip::tcp::socket& s, std::chrono::milliseconds timeout) {
  pollfd p{s.native_handle(), POLLIN, 0};
  for (auto until = std::chrono::steady_clock::now() + timeout; std::chrono::steady_clock::now() < until;) {
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    boost::system::error_code ec;
    s.read_some(boost::asio::buffer(buf), ec);  // the event stream's headers come first
    if (ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset) return true;
    if (ec) return false;
  }
  return false;
}

// Stop closes every connection still open (an idle one that sent nothing, an event stream); before, the stopped
// server's connections kept their sockets, and their memory, for the rest of the process (LeakSanitizer).
TEST(HttpSlowClient, StopClosesTheConnectionsStillOpen) {
  testing::TempDir dir("http-stop");
  server::ServerOptions so;
  so.listen = "127.0.0.1:0";
  so.db_path = (dir / "ladder.db").string();
  so.token = "t0ken";
  so.http_listen = "127.0.0.1:0";
  server::Server srv(so);
  srv.Start();
  ASSERT_NE(srv.http(), nullptr);
  const boost::asio::ip::tcp::endpoint ep(boost::asio::ip::make_address("127.0.0.1"),
                                          static_cast<unsigned short>(srv.http()->port()));
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::socket idle(ioc), stream(ioc);
  idle.connect(ep);
  stream.connect(ep);
  boost::asio::write(stream, boost::asio::buffer(std::string("GET /api/events HTTP/1.1\r\nHost: x\r\n"
                                                             "Authorization: Bearer t0ken\r\n\r\n")));
  char head[12] = {};
  boost::asio::read(stream, boost::asio::buffer(head));
  ASSERT_EQ(std::string(head, 12), "HTTP/1.1 200");
  srv.Stop();
  EXPECT_TRUE(ClosedByPeer(idle, std::chrono::seconds(10)));
  EXPECT_TRUE(ClosedByPeer(stream, std::chrono::seconds(10)));
}

}  // namespace
}  // namespace ladder
