// The rendezvous store of multi-node trials (trainer/comm/bound_store.h): c10d's Store operations with TCPStore's
// semantics, a server that listens on its one address only, and a secret that keeps strangers out.
#include "trainer/comm/bound_store.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/torch.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <thread>

#include "tests/support/free_port.h"

namespace ladder::trainer::comm {
namespace {

using std::chrono::milliseconds;

std::vector<uint8_t> Bytes(const std::string& s) { return {s.begin(), s.end()}; }
std::string Text(const std::vector<uint8_t>& v) { return {v.begin(), v.end()}; }

// A port free on 127.0.0.1 just now.
uint16_t FreePort() { return static_cast<uint16_t>(testing::FreePort()); }

// connect() to ip:port; 0 or errno.
int ConnectError(const char* ip, uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, ip, &a.sin_addr);
  const int rc = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 ? 0 : errno;
  close(fd);
  return rc;
}

TEST(BoundStore, ImplementsTheStoreOperationsWithTcpStoresSemantics) {
  const uint16_t port = FreePort();
  BoundTcpStore server("127.0.0.1", port, true, "s3cret", milliseconds(10000));
  BoundTcpStore client("127.0.0.1", port, false, "s3cret", milliseconds(10000));

  // get waits for a key another rank sets later.
  auto later = std::async(std::launch::async, [&] { return Text(client.get("peer/1")); });
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(later.wait_for(milliseconds(0)), std::future_status::timeout) << "get answered before the set";
  server.set("peer/1", Bytes("10.0.0.2:4000"));
  EXPECT_EQ(later.get(), "10.0.0.2:4000");

  EXPECT_EQ(server.add("count", 2), 2);
  EXPECT_EQ(client.add("count", 3), 5);
  EXPECT_EQ(Text(server.get("count")), "5");  // counters are decimal strings, as in TCPStore
  server.set("text", Bytes("x"));
  EXPECT_THROW(client.add("text", 1), std::runtime_error);
  EXPECT_EQ(Text(client.get("text")), "x") << "the connection works again after a refused request";

  // compareSet: a missing key is created only from an empty expectation; the answer is the value afterwards.
  EXPECT_EQ(Text(client.compareSet("cas", Bytes("a"), Bytes("b"))), "a");
  EXPECT_FALSE(client.check({"cas"}));
  EXPECT_EQ(Text(client.compareSet("cas", {}, Bytes("b"))), "b");
  EXPECT_EQ(Text(client.compareSet("cas", Bytes("wrong"), Bytes("c"))), "b");
  EXPECT_EQ(Text(client.compareSet("cas", Bytes("b"), Bytes("c"))), "c");

  EXPECT_TRUE(client.check({"peer/1", "count", "cas"}));
  EXPECT_FALSE(client.check({"peer/1", "missing"}));
  EXPECT_EQ(client.getNumKeys(), 4);
  EXPECT_TRUE(client.deleteKey("cas"));
  EXPECT_FALSE(client.deleteKey("cas"));
  EXPECT_EQ(server.getNumKeys(), 3);

  // wait: answered once every key exists; a missing key times out after the given time, and the next call works.
  auto waiter = std::async(std::launch::async, [&] { client.wait({"a", "b"}); });
  server.set("a", {});
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(waiter.wait_for(milliseconds(0)), std::future_status::timeout) << "wait answered with b missing";
  server.set("b", {});
  waiter.get();
  const auto start = std::chrono::steady_clock::now();
  try {
    client.wait({"never"}, milliseconds(200));
    FAIL() << "wait for a missing key returned";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(port)), std::string::npos) << e.what();
  }
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(200));
  server.set("never", Bytes("now"));
  EXPECT_EQ(Text(client.get("never")), "now") << "the late answer to the timed-out wait was read as this one's";
}

// LibTorch 1.13's TCPStore listens on every interface; this server only on the address it was given. All of
// 127/8 reaches the loopback interface, so a server on 127.0.0.1 that also answered on 127.0.0.2 would be one
// on the wildcard address.
TEST(BoundStore, ListensOnItsOwnAddressOnly) {
  const uint16_t port = FreePort();
  BoundTcpStore server("127.0.0.1", port, true, "", milliseconds(5000));
  EXPECT_EQ(server.ListenAddress(), "127.0.0.1");
  EXPECT_EQ(ConnectError("127.0.0.1", port), 0);
  EXPECT_EQ(ConnectError("127.0.0.2", port), ECONNREFUSED);
  try {
    BoundTcpStore second("127.0.0.1", port, true, "", milliseconds(1000));
    FAIL() << "a second server bound the same address and port";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot listen on 127.0.0.1:" + std::to_string(port)), std::string::npos)
        << e.what();
  }
}

TEST(BoundStore, AConnectionWithoutTheGroupsSecretReadsAndWritesNothing) {
  const uint16_t port = FreePort();
  BoundTcpStore server("127.0.0.1", port, true, "right", milliseconds(5000));
  server.set("nccl_unique_id", Bytes("secret-bytes"));
  try {
    BoundTcpStore stranger("127.0.0.1", port, false, "wrong", milliseconds(2000));
    FAIL() << "a client with another secret was admitted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("LADDER_RENDEZVOUS_SECRET"), std::string::npos) << e.what();
  }
  // A raw client that skips the hello and sends a set (opcode 2, key "k", value "v") is closed unanswered.
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  const uint8_t set[] = {11, 0, 0, 0, 2, 1, 0, 0, 0, 'k', 1, 0, 0, 0, 'v'};
  ASSERT_EQ(send(fd, set, sizeof set, MSG_NOSIGNAL), static_cast<ssize_t>(sizeof set));
  std::string answer;
  char buf[256];
  for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) answer.append(buf, n);  // until the server closes
  close(fd);
  EXPECT_EQ(answer.find("k"), std::string::npos);
  EXPECT_FALSE(server.check({"k"}));
  EXPECT_EQ(server.getNumKeys(), 1);
}

// Gloo's process group over the store, two ranks in two threads, with each rank's pairs on the address toward
// MASTER_ADDR.
TEST(BoundStore, CarriesAGlooProcessGroupsRendezvous) {
  EXPECT_EQ(LocalAddressToward("127.0.0.1"), "127.0.0.1");
  const uint16_t port = FreePort();
  auto run = [&](int rank) {
    auto store = c10::make_intrusive<BoundTcpStore>("127.0.0.1", port, rank == 0, "g", milliseconds(20000));
    auto opts = c10d::ProcessGroupGloo::Options::create();
    opts->timeout = milliseconds(20000);
    opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(LocalAddressToward("127.0.0.1")));
    c10d::ProcessGroupGloo pg(store, rank, 2, opts);
    std::vector<at::Tensor> t = {torch::full({4}, static_cast<float>(rank + 1))};
    pg.allreduce(t)->wait();
    pg.barrier()->wait();  // rank 0's store outlives rank 1's use of it
    return t[0];
  };
  auto r1 = std::async(std::launch::async, run, 1);
  const auto t0 = run(0);
  const auto t1 = r1.get();
  EXPECT_TRUE(torch::equal(t0, torch::full({4}, 3.0f)));
  EXPECT_TRUE(torch::equal(t1, torch::full({4}, 3.0f)));
}

}  // namespace
}  // namespace ladder::trainer::comm
