#include "common/tls_probe.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <memory>

namespace ladder {

namespace {

struct SslCtxFree {
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
};
struct SslFree {
  void operator()(SSL* s) const { SSL_free(s); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// host and port of "host:port", "[v6]:port" or gRPC's "dns:///host:port"; false for anything else (unix:...).
bool SplitServer(std::string server, std::string* host, std::string* port) {
  if (server.rfind("dns:///", 0) == 0) server = server.substr(7);
  if (server.rfind("ipv4:", 0) == 0 || server.rfind("ipv6:", 0) == 0) server = server.substr(5);
  const size_t colon = server.rfind(':');
  if (colon == std::string::npos || server.find('/') != std::string::npos) return false;
  *host = server.substr(0, colon);
  *port = server.substr(colon + 1);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') *host = host->substr(1, host->size() - 2);
  return !host->empty() && !port->empty();
}

// A TCP connection within `timeout`, as a blocking socket whose reads and writes time out after `timeout`.
int ConnectWithin(const std::string& host, const std::string& port, std::chrono::milliseconds timeout) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &list) != 0) return -1;
  int connected = -1;
  for (addrinfo* a = list; a && connected < 0; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    bool ok = connect(fd, a->ai_addr, a->ai_addrlen) == 0;
    if (!ok && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int err = 0;
      socklen_t len = sizeof err;
      ok = poll(&p, 1, static_cast<int>(timeout.count())) == 1 &&
           getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
    }
    if (!ok) {
      close(fd);
      continue;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    connected = fd;
  }
  freeaddrinfo(list);
  return connected;
}

std::string NameOf(X509_NAME* name) {
  if (!name) return "?";
  BIO* bio = BIO_new(BIO_s_mem());
  X509_NAME_print_ex(bio, name, 0, XN_FLAG_ONELINE & ~ASN1_STRFLGS_ESC_MSB);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(bio);
  return out;
}

std::string Hex(const ASN1_OCTET_STRING* s, size_t max_bytes = 8) {
  if (!s) return "";
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < s->length && static_cast<size_t>(i) < max_bytes; ++i) {
    out += digits[s->data[i] >> 4];
    out += digits[s->data[i] & 15];
  }
  return out;
}

// "'O = ladder, CN = ladder CA' (key id 0123abcd...)": a certificate's issuer, told apart from others of that name
// by the key id that signed it.
std::string IssuerOf(X509* cert) {
  std::string out = "'" + NameOf(X509_get_issuer_name(cert)) + "'";
  const std::string kid = Hex(X509_get0_authority_key_id(cert));
  return kid.empty() ? out : out + " (key id " + kid + ")";
}
std::string SubjectOf(X509* cert) {
  std::string out = "'" + NameOf(X509_get_subject_name(cert)) + "'";
  const std::string kid = Hex(X509_get0_subject_key_id(cert));
  return kid.empty() ? out : out + " (key id " + kid + ")";
}

X509Ptr ReadCert(const std::string& path) {
  FILE* f = fopen(path.c_str(), "r");
  if (!f) return nullptr;
  X509Ptr cert(PEM_read_X509(f, nullptr, nullptr, nullptr));
  fclose(f);
  return cert;
}

// The CA file's certificate, as the message names it: "the CA in FILE, 'SUBJECT' (key id ...)".
std::string OurCa(const TlsFiles& tls) {
  if (tls.ca.empty()) return "the system's CA certificates (no --tls-ca given)";
  X509Ptr ca = ReadCert(tls.ca);
  return "the CA in " + tls.ca + (ca ? ", " + SubjectOf(ca.get()) : "");
}

// The OpenSSL reason of the last error, when it is an alert the peer sent: the alert's number (RFC 8446), else -1.
int PeerAlert(unsigned long err) {
  const int reason = ERR_GET_REASON(err);
  return reason >= SSL_AD_REASON_OFFSET && reason < SSL_AD_REASON_OFFSET + 256 ? reason - SSL_AD_REASON_OFFSET : -1;
}

bool AboutCertificates(int alert) {
  return alert == SSL_AD_BAD_CERTIFICATE || alert == SSL_AD_UNSUPPORTED_CERTIFICATE ||
         alert == SSL_AD_CERTIFICATE_REVOKED || alert == SSL_AD_CERTIFICATE_EXPIRED ||
         alert == SSL_AD_CERTIFICATE_UNKNOWN || alert == SSL_AD_UNKNOWN_CA || alert == SSL_AD_ACCESS_DENIED ||
         alert == SSL_AD_HANDSHAKE_FAILURE || alert == SSL_AD_DECRYPT_ERROR || alert == 116 /* certificate_required */;
}

// The server refused our certificate (or wanted one): the sentence, naming our file and its issuer and the CA
// that signed the server's own certificate (which `ladder certs create` also makes the clients' CA).
std::string ClientRefused(const std::string& where, const TlsFiles& tls, X509* server_cert, const std::string& why) {
  std::string m = "the TLS handshake with " + where + " failed: ";
  if (tls.cert.empty()) {
    m += "the coordinator asks for a client certificate (mutual TLS) and none was given (" + why +
         "); pass --tls-cert and --tls-key (or --tls-dir DIR from `ladder certs create`) of a certificate its CA "
         "signed";
  } else {
    X509Ptr ours = ReadCert(tls.cert);
    m += "the coordinator did not accept this client's certificate " + tls.cert;
    if (ours) m += " (" + SubjectOf(ours.get()) + ", issued by " + IssuerOf(ours.get()) + ")";
    m += ": " + why + ". It accepts only certificates signed by its --tls-ca";
    if (server_cert) m += " (its own certificate is issued by " + IssuerOf(server_cert) + ")";
    m += "; pass a certificate and key from the coordinator's CA (`ladder certs create` writes them beside its "
         "ca.crt)";
  }
  return m;
}

// The server's certificate failed our verification (result `v`): the sentence, naming it and our CA.
std::string ServerNotTrusted(const std::string& where, const std::string& host, const TlsFiles& tls, X509* server_cert,
                             long v) {
  std::string m = "the TLS handshake with " + where + " failed: ";
  const std::string theirs =
      server_cert ? "the coordinator's certificate " + SubjectOf(server_cert) + ", issued by " + IssuerOf(server_cert)
                  : "the coordinator's certificate";
  if (v == X509_V_ERR_HOSTNAME_MISMATCH || v == X509_V_ERR_IP_ADDRESS_MISMATCH) {
    return m + theirs + ", does not name " + host +
           " (its subjectAltNames); dial a name it holds, or make it one that does (`ladder certs create --host " +
           host + "`)";
  }
  return m + theirs + ", is not trusted by " + OurCa(tls) + ": " + X509_verify_cert_error_string(v) +
         "; pass the --tls-ca of the coordinator's CA (the ca.crt `ladder certs create` wrote with its server.crt)";
}

// Notes whether the server sent a CertificateRequest (handshake message 13).
void NoteMessage(int write_p, int, int content_type, const void* buf, size_t len, SSL*, void* arg) {
  if (!write_p && content_type == SSL3_RT_HANDSHAKE && len > 0 && static_cast<const unsigned char*>(buf)[0] == 13) {
    *static_cast<bool*>(arg) = true;
  }
}

}  // namespace

TlsDiagnosis DiagnoseTls(const std::string& server, const TlsFiles& tls, std::chrono::milliseconds timeout) {
  TlsDiagnosis d;
  std::string host, port;
  if (!tls.enabled() || !SplitServer(server, &host, &port)) return d;
  std::unique_ptr<SSL_CTX, SslCtxFree> ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) return d;
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  // Verified by hand below (SSL_get_verify_result), so that the handshake goes on and the server's certificate
  // can be named, and a refusal of ours still be seen.
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_NONE, nullptr);
  if (tls.ca.empty() ? SSL_CTX_set_default_verify_paths(ctx.get()) != 1
                     : SSL_CTX_load_verify_locations(ctx.get(), tls.ca.c_str(), nullptr) != 1) {
    return d;  // an unreadable file is said where the credentials are made
  }
  if (!tls.cert.empty() && (SSL_CTX_use_certificate_chain_file(ctx.get(), tls.cert.c_str()) != 1 ||
                            SSL_CTX_use_PrivateKey_file(ctx.get(), tls.key.c_str(), SSL_FILETYPE_PEM) != 1)) {
    return d;
  }
  static const unsigned char kAlpn[] = {2, 'h', '2'};
  SSL_CTX_set_alpn_protos(ctx.get(), kAlpn, sizeof kAlpn);
  Fd fd(ConnectWithin(host, port, timeout));
  if (fd.get() < 0) return d;  // not a TLS matter: the caller's "cannot reach" stands
  std::unique_ptr<SSL, SslFree> ssl(SSL_new(ctx.get()));
  if (!ssl) return d;
  bool asked_for_certificate = false;
  SSL_set_msg_callback(ssl.get(), NoteMessage);
  SSL_set_msg_callback_arg(ssl.get(), &asked_for_certificate);
  in6_addr ip{};
  const bool is_ip = inet_pton(AF_INET, host.c_str(), &ip) == 1 || inet_pton(AF_INET6, host.c_str(), &ip) == 1;
  if (is_ip) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl.get()), host.c_str());
  } else {
    SSL_set_tlsext_host_name(ssl.get(), host.c_str());
    SSL_set1_host(ssl.get(), host.c_str());
  }
  SSL_set_fd(ssl.get(), fd.get());
  const std::string where = "the coordinator at " + server;
  ERR_clear_error();
  const int connected = SSL_connect(ssl.get());
  X509Ptr server_cert(SSL_get1_peer_certificate(ssl.get()));
  if (connected == 1) {
    const long v = SSL_get_verify_result(ssl.get());
    if (v != X509_V_OK) {
      d.kind = TlsDiagnosis::Kind::kServerNotTrusted;
      d.message = ServerNotTrusted(where, host, tls, server_cert.get(), v);
      return d;
    }
    // TLS 1.3: the server judges our certificate after the handshake; an accepted client gets the server's
    // HTTP/2 preface, a refused one an alert or the end of the connection.
    char byte = 0;
    ERR_clear_error();
    const int rc = SSL_read(ssl.get(), &byte, 1);
    if (rc == 1) return d;
    const int e = SSL_get_error(ssl.get(), rc);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return d;  // no answer in time: nothing known
    const int alert = PeerAlert(ERR_peek_last_error());
    if (AboutCertificates(alert) || (alert < 0 && asked_for_certificate)) {
      d.kind = TlsDiagnosis::Kind::kClientRefused;
      d.message = ClientRefused(where, tls, server_cert.get(),
                                alert >= 0 ? std::string("it answered '") + SSL_alert_desc_string_long(alert) + "'"
                                           : "it closed the connection after asking for a certificate");
    }
    return d;
  }
  const unsigned long err = ERR_peek_last_error();
  const int alert = PeerAlert(err);
  if (server_cert && SSL_get_verify_result(ssl.get()) != X509_V_OK) {
    d.kind = TlsDiagnosis::Kind::kServerNotTrusted;
    d.message = ServerNotTrusted(where, host, tls, server_cert.get(), SSL_get_verify_result(ssl.get()));
  } else if (AboutCertificates(alert) && (asked_for_certificate || alert == 116)) {
    d.kind = TlsDiagnosis::Kind::kClientRefused;
    d.message = ClientRefused(where, tls, server_cert.get(),
                              std::string("it answered '") + SSL_alert_desc_string_long(alert) + "'");
  } else {
    char buf[256];
    ERR_error_string_n(err, buf, sizeof buf);
    d.kind = TlsDiagnosis::Kind::kHandshakeFailed;
    d.message = "the TLS handshake with " + where + " failed: " + (err ? std::string(buf) : "the connection closed") +
                " (does it serve TLS on that port?)";
  }
  return d;
}

}  // namespace ladder
