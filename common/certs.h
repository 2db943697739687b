#pragma once
// `ladder certs create DIR`: a private CA and the certificates ladder's TLS needs, made with OpenSSL's libcrypto
// (ECDSA P-256, SHA-256). Files, each written atomically with mode 0600:
//   ca.crt ca.key            the CA (ca.key signs; keep it off shared storage once the others are made)
//   server.crt server.key    the coordinator: serverAuth, its host names and addresses as subjectAltNames
//   worker.crt worker.key    ladder-worker: clientAuth
//   client.crt client.key    the CLI and dashboards' gRPC clients: clientAuth
#include <string>
#include <vector>

namespace ladder {

struct CertsOptions {
  std::vector<std::string> hosts;  // the server certificate's names: DNS names or IP addresses
  int days = 825;                  // validity of the leaf certificates (the CA's: 10 years)
  bool overwrite = false;          // replace existing files (else an existing file is an error)
};

// The default server names: localhost, 127.0.0.1, ::1 and this machine's host name.
std::vector<std::string> DefaultCertHosts();
// Creates `dir` (mode 0700) when absent and writes the files; returns their paths. Throws std::runtime_error
// naming the file or the libcrypto step that failed; an existing file is refused unless overwrite.
std::vector<std::string> CreateCertificates(const std::string& dir, const CertsOptions& options);

}  // namespace ladder
