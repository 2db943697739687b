#include "common/tls.h"

#include <arpa/inet.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ladder {

void TlsFromEnvironment(TlsFiles* tls) {
  auto env = [](const char* name, std::string* field) {
    if (!field->empty()) return;
    if (const char* v = std::getenv(name); v && *v) *field = v;
  };
  env("LADDER_TLS_CERT", &tls->cert);
  env("LADDER_TLS_KEY", &tls->key);
  env("LADDER_TLS_CA", &tls->ca);
}

std::string ReadPem(const std::string& path, const std::string& option) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(option + " " + path + ": cannot read the file");
  std::ostringstream s;
  s << in.rdbuf();
  std::string pem = s.str();
  if (pem.find("-----BEGIN ") == std::string::npos) {
    throw std::runtime_error(option + " " + path + ": not a PEM file (no -----BEGIN line)");
  }
  return pem;
}

std::string TlsFilesError(const TlsFiles& tls, bool server) {
  if (tls.cert.empty() != tls.key.empty()) {
    return tls.cert.empty() ? "--tls-key needs --tls-cert (the certificate of that key)"
                            : "--tls-cert needs --tls-key (the certificate's private key)";
  }
  if (server && !tls.ca.empty() && tls.cert.empty()) {
    return "--tls-ca on a server needs --tls-cert and --tls-key (its own certificate)";
  }
  try {
    if (!tls.cert.empty()) ReadPem(tls.cert, "--tls-cert");
    if (!tls.key.empty()) ReadPem(tls.key, "--tls-key");
    if (!tls.ca.empty()) ReadPem(tls.ca, "--tls-ca");
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(const TlsFiles& tls) {
  if (tls.cert.empty()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions opts(tls.ca.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                                        : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  if (!tls.ca.empty()) opts.pem_root_certs = ReadPem(tls.ca, "--tls-ca");
  opts.pem_key_cert_pairs.push_back({ReadPem(tls.key, "--tls-key"), ReadPem(tls.cert, "--tls-cert")});
  return grpc::SslServerCredentials(opts);
}

std::shared_ptr<grpc::ChannelCredentials> MakeChannelCredentials(const TlsFiles& tls) {
  if (!tls.enabled()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions opts;
  if (!tls.ca.empty()) opts.pem_root_certs = ReadPem(tls.ca, "--tls-ca");
  if (!tls.cert.empty()) {
    opts.pem_cert_chain = ReadPem(tls.cert, "--tls-cert");
    opts.pem_private_key = ReadPem(tls.key, "--tls-key");
  }
  return grpc::SslCredentials(opts);
}

bool IsLoopbackAddress(const std::string& host_port) {
  std::string host = host_port.substr(0, host_port.rfind(':'));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

std::string PlaintextListenError(const std::string& listen, bool tls, bool insecure, const std::string& what) {
  if (tls || insecure || IsLoopbackAddress(listen)) return "";
  return "refusing to serve " + what + " on " + listen +
         " without TLS: anyone on that network could read the tokens and trials that cross it, or act as a "
         "worker. Give --tls-cert and --tls-key (and --tls-ca for mutual TLS; `ladder certs create DIR` makes "
         "them), listen on 127.0.0.1 (ssh -L from elsewhere), or pass --insecure on a network you trust";
}

}  // namespace ladder
