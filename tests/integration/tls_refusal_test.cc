// A certificate refused at the TLS handshake is said as such, not as a network fault: the real ladder CLI and
// ladder-worker against a real ladder-server with mutual TLS, with certificates of another CA (`ladder certs
// create` twice). The CLI exits 5 naming which side refused which certificate, the files and the CAs; the worker
// stops retrying after a few probes and exits 5 with the same account.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/integration/system_support.h"
#include "tests/support/process.h"

namespace ladder {
namespace {

class TlsRefusalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* set : {"certs", "other"}) {
      auto made = testing::RunCommand({Bin("ladder"), "certs", "create", (dir_ / set).string()}, dir_);
      ASSERT_EQ(made.exit_code, 0) << made.err;
    }
    address_ = "127.0.0.1:" + std::to_string(testing::FreePort());
    db_ = (dir_ / "ladder.db").string();
    testing::Spawn(&server_,
                   {Bin("ladder-server"), "--listen", address_, "--db", db_, "--tls-cert", File("certs", "server.crt"),
                    "--tls-key", File("certs", "server.key"), "--tls-ca", File("certs", "ca.crt")},
                   true);
    ASSERT_EQ(testing::ReadListenAddress(server_), address_);
    std::getline(std::ifstream(db_ + ".token"), token_);
  }
  static std::string Bin(const std::string& name) { return testing::BinDir() + "/" + name; }
  std::string File(const std::string& set, const std::string& name) const { return (dir_ / set / name).string(); }
  // `ladder search list` with these TLS files (ca, cert, key; empty: not passed).
  testing::CommandResult List(const std::string& ca, const std::string& cert, const std::string& key) {
    std::vector<std::string> args = {Bin("ladder"), "--server", address_, "--token", token_};
    if (!ca.empty()) args.insert(args.end(), {"--tls-ca", ca});
    if (!cert.empty()) args.insert(args.end(), {"--tls-cert", cert, "--tls-key", key});
    args.insert(args.end(), {"search", "list"});
    return testing::RunCommand(args, dir_);
  }

  testing::TempDir dir_{"tls-refusal"};
  std::string address_, db_, token_;
  testing::Child server_;
};

TEST_F(TlsRefusalTest, AClientWhoseCertificateTheCoordinatorRefusesExits5SayingSo) {
  // Its own certificates: served (the control).
  auto ok = List(File("certs", "ca.crt"), File("certs", "client.crt"), File("certs", "client.key"));
  ASSERT_EQ(ok.exit_code, 0) << ok.err;

  // A client certificate another CA signed; the client trusts the coordinator.
  auto foreign = List(File("certs", "ca.crt"), File("other", "client.crt"), File("other", "client.key"));
  EXPECT_EQ(foreign.exit_code, 5) << foreign.err;
  EXPECT_NE(foreign.err.find("the TLS handshake with the coordinator at " + address_ + " failed"), std::string::npos)
      << foreign.err;
  EXPECT_NE(foreign.err.find("did not accept this client's certificate " + File("other", "client.crt")),
            std::string::npos) << foreign.err;
  EXPECT_NE(foreign.err.find("CN = ladder CA"), std::string::npos) << "the issuer's subject\n" << foreign.err;
  EXPECT_EQ(foreign.err.find("cannot reach"), std::string::npos) << "not a network fault\n" << foreign.err;

  // A client that trusts another CA: the coordinator's certificate is what is refused, by ours.
  auto untrusting = List(File("other", "ca.crt"), File("certs", "client.crt"), File("certs", "client.key"));
  EXPECT_EQ(untrusting.exit_code, 5) << untrusting.err;
  EXPECT_NE(untrusting.err.find("is not trusted by the CA in " + File("other", "ca.crt")), std::string::npos)
      << untrusting.err;
  EXPECT_NE(untrusting.err.find("the coordinator's certificate 'O = ladder, CN = ladder-server"), std::string::npos)
      << untrusting.err;

  // No client certificate at all, to a coordinator that asks for one.
  auto none = List(File("certs", "ca.crt"), "", "");
  EXPECT_EQ(none.exit_code, 5) << none.err;
  EXPECT_NE(none.err.find("asks for a client certificate"), std::string::npos) << none.err;
}

TEST_F(TlsRefusalTest, AWorkerWithACertificateOfAnotherCaStopsRetryingAndExits5) {
  // `timeout`: a worker that kept trying would end as 124.
  auto r = testing::RunCommand({"/usr/bin/timeout", "60", Bin("ladder-worker"), "--server", address_, "--token-file",
                                db_ + ".token", "--tls-ca", File("certs", "ca.crt"), "--tls-cert",
                                File("other", "worker.crt"), "--tls-key", File("other", "worker.key"), "--node-id",
                                "foreign", "--slots", "1", "--trial-dir", (dir_ / "trials").string()},
                               dir_);
  EXPECT_EQ(r.exit_code, 5) << r.err;
  EXPECT_NE(r.err.find("refused this worker: the TLS handshake with the coordinator at " + address_),
            std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did not accept this client's certificate " + File("other", "worker.crt")), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("--token-file <db>.token"), std::string::npos) << "no token advice for a certificate\n" << r.err;
}

}  // namespace
}  // namespace ladder
