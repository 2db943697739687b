#pragma once
// TLS for ladder's gRPC channels (and the dashboard's HTTPS): which files, the credentials made from them, and the
// rule that a coordinator never serves a non-loopback address in plaintext unless told --insecure.
//
// Server: --tls-cert + --tls-key serve TLS; adding --tls-ca asks every client for a certificate signed by that CA
// (mutual TLS: workers and the CLI present theirs; `ladder certs create DIR` makes all of them).
// Client: --tls-ca verifies the coordinator's certificate (without it, the system's roots); --tls-cert +
// --tls-key present a client certificate. Each also from LADDER_TLS_CA / LADDER_TLS_CERT / LADDER_TLS_KEY.
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>

#include <memory>
#include <string>

namespace ladder {

struct TlsFiles {
  std::string cert, key, ca;
  bool enabled() const { return !cert.empty() || !key.empty() || !ca.empty(); }
};

// Fills the empty fields from LADDER_TLS_CERT, LADDER_TLS_KEY and LADDER_TLS_CA.
void TlsFromEnvironment(TlsFiles* tls);
// "" when the files make sense for a server (cert and key together; a CA only with them) or a client (cert and
// key together), each readable; else what is wrong, naming the option and the file.
std::string TlsFilesError(const TlsFiles& tls, bool server);
// Server credentials: TLS when cert/key are given (mutual when ca is), else insecure. Throws std::runtime_error
// naming the file that cannot be read.
std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(const TlsFiles& tls);
std::shared_ptr<grpc::ChannelCredentials> MakeChannelCredentials(const TlsFiles& tls);
// A file's contents; throws std::runtime_error naming `option` and the path when it cannot be read.
std::string ReadPem(const std::string& path, const std::string& option);

// Whether host:port names a loopback address (127.0.0.0/8, ::1, localhost).
bool IsLoopbackAddress(const std::string& host_port);
// "" when `listen` may be served as asked; else why not: a non-loopback address without TLS and without
// --insecure. `what` names the listener ("gRPC", "the web dashboard").
std::string PlaintextListenError(const std::string& listen, bool tls, bool insecure, const std::string& what);

}  // namespace ladder
