#pragma once
// Why a TLS connection to a coordinator fails, found out by a handshake of our own with the same files.
//
// gRPC reports a refused certificate as a network fault ("Socket closed", "failed to connect to all
// addresses"), whichever side refused it. DiagnoseTls opens one TCP connection to the server, does the TLS
// handshake with the client's CA, certificate and key (OpenSSL, with ALPN h2 and the host name checked as gRPC
// checks it) and reads the server's first bytes, to tell apart:
//   - the server's certificate is not trusted by our CA (or does not name the host we dialled);
//   - the server did not accept our certificate (an alert about it, or the connection closed after the server
//     asked for one), or asked for one and we have none;
//   - anything else (no TCP connection, a server that does not speak TLS, a handshake that went through).
// Each message names the file(s) and the certificates' subjects and issuers (with their key ids: `ladder certs
// create` names every CA "ladder CA") and says what to pass instead; it starts with "the TLS handshake with".
//
// Blocking, at most `timeout` for the connection and as much for the handshake and the read: call it from a
// thread that may wait (the CLI after a failed call, a worker's session thread between connection attempts).
#include <chrono>
#include <string>

#include "common/tls.h"

namespace ladder {

struct TlsDiagnosis {
  enum class Kind {
    kNoFinding,           // TCP failed, or TLS went through, or no TLS files: nothing certificate-related known
    kServerNotTrusted,    // our CA does not trust the server's certificate, or it does not name the host
    kClientRefused,       // the server refused our certificate (or wanted one and we had none)
    kHandshakeFailed,     // the handshake failed otherwise (e.g. the server does not speak TLS)
  };
  Kind kind = Kind::kNoFinding;
  std::string message;  // empty for kNoFinding
  // Whether the certificate was refused (either side): the caller reports an authorization failure (exit 5).
  bool CertificateRefused() const { return kind == Kind::kServerNotTrusted || kind == Kind::kClientRefused; }
};

// `server` is host:port ([v6]:port too). With no TLS files, kNoFinding at once.
TlsDiagnosis DiagnoseTls(const std::string& server, const TlsFiles& tls,
                         std::chrono::milliseconds timeout = std::chrono::seconds(3));

}  // namespace ladder
