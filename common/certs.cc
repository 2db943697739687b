#include "common/certs.h"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <stdexcept>

#include "common/address.h"
#include "common/token.h"

namespace ladder {

namespace {

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using Key = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using Cert = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using Bio = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;

[[noreturn]] void Fail(const std::string& step) {
  char buf[256] = "";
  ERR_error_string_n(ERR_get_error(), buf, sizeof buf);
  throw std::runtime_error("certificate creation failed at " + step + " (libcrypto: " + buf + ")");
}
void Check(int ok, const std::string& step) {
  if (ok != 1) Fail(step);
}

Key NewKey() {
  Key key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  if (!key) Fail("EC P-256 key generation");
  return key;
}

void AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (!ext) Fail(std::string("extension ") + OBJ_nid2sn(nid) + "=" + value);
  const int ok = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  Check(ok, std::string("adding extension ") + OBJ_nid2sn(nid));
}

// A certificate for `key` named `cn`, signed by issuer_key (self-signed when issuer is null).
Cert MakeCert(EVP_PKEY* key, const std::string& cn, X509* issuer, EVP_PKEY* issuer_key, long days) {
  Cert cert(X509_new());
  if (!cert) Fail("X509_new");
  Check(X509_set_version(cert.get(), 2), "version");
  unsigned char serial[16];
  Check(RAND_bytes(serial, sizeof serial), "serial number");
  serial[0] &= 0x7f;  // positive
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  if (!bn || !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()))) Fail("serial number");
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);  // an hour of clock skew between nodes
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), days * 24 * 3600);
  X509_NAME* name = X509_get_subject_name(cert.get());
  Check(X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>("ladder"), -1,
                                   -1, 0),
        "subject O");
  Check(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(cn.c_str()),
                                   -1, -1, 0),
        "subject CN");
  Check(X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : name), "issuer");
  Check(X509_set_pubkey(cert.get(), key), "public key");
  X509* signer = issuer ? issuer : cert.get();
  AddExtension(cert.get(), signer, NID_subject_key_identifier, "hash");
  if (issuer) AddExtension(cert.get(), signer, NID_authority_key_identifier, "keyid:always");
  (void)issuer_key;
  return cert;
}

void Sign(X509* cert, EVP_PKEY* key) {
  if (X509_sign(cert, key, EVP_sha256()) <= 0) Fail("signing");
}

std::string Pem(const std::function<int(BIO*)>& write, const std::string& what) {
  Bio bio(BIO_new(BIO_s_mem()));
  if (!bio || write(bio.get()) != 1) Fail("writing " + what);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

std::string KeyPem(EVP_PKEY* key) {
  return Pem([key](BIO* b) { return PEM_write_bio_PrivateKey(b, key, nullptr, nullptr, 0, nullptr, nullptr); },
             "a private key");
}
std::string CertPem(X509* cert) {
  return Pem([cert](BIO* b) { return PEM_write_bio_X509(b, cert); }, "a certificate");
}

std::string SubjectAltNames(const std::vector<std::string>& hosts) {
  std::string san;
  for (const auto& h : hosts) {
    if (h.empty()) continue;
    unsigned char buf[16];
    const bool ip = inet_pton(AF_INET, h.c_str(), buf) == 1 || inet_pton(AF_INET6, h.c_str(), buf) == 1;
    for (char c : h) {
      if (c == ',' || (c == ':' && !ip) || static_cast<unsigned char>(c) < 0x21) {
        throw std::runtime_error("--host '" + h + "': not a host name or an IP address");
      }
    }
    if (!san.empty()) san += ",";
    san += (ip ? "IP:" : "DNS:") + h;
  }
  if (san.empty()) throw std::runtime_error("--host: the server certificate needs at least one name");
  return san;
}

}  // namespace

std::vector<std::string> DefaultCertHosts() {
  std::vector<std::string> hosts = {"localhost", "127.0.0.1", "::1"};
  if (std::string h = ThisHostname(); !h.empty() && h != "localhost") hosts.push_back(h);
  return hosts;
}

std::vector<std::string> CreateCertificates(const std::string& dir, const CertsOptions& options) {
  namespace fs = std::filesystem;
  const std::vector<std::string> names = {"ca.crt",     "ca.key",     "server.crt", "server.key",
                                          "worker.crt", "worker.key", "client.crt", "client.key"};
  std::vector<std::string> paths;
  for (const auto& n : names) paths.push_back((fs::path(dir) / n).string());
  if (!options.overwrite) {
    for (const auto& p : paths) {
      if (fs::exists(p)) throw std::runtime_error(p + " exists: pass --force to replace the certificates in " + dir);
    }
  }
  if (options.days < 1 || options.days > 3650) throw std::runtime_error("--days: must be in 1..3650");
  const std::string san = SubjectAltNames(options.hosts);
  std::error_code ec;
  if (!fs::exists(dir)) {
    if (!fs::create_directories(dir, ec)) throw std::runtime_error("cannot create " + dir + ": " + ec.message());
    ::chmod(dir.c_str(), 0700);
  }

  Key ca_key = NewKey();
  Cert ca = MakeCert(ca_key.get(), "ladder CA", nullptr, nullptr, 3650);
  AddExtension(ca.get(), ca.get(), NID_basic_constraints, "critical,CA:TRUE,pathlen:0");
  AddExtension(ca.get(), ca.get(), NID_key_usage, "critical,keyCertSign,cRLSign");
  Sign(ca.get(), ca_key.get());

  struct Leaf {
    const char* file;
    const char* cn;
    const char* eku;
  };
  std::vector<std::pair<std::string, std::string>> files = {{"ca.crt", CertPem(ca.get())},
                                                            {"ca.key", KeyPem(ca_key.get())}};
  for (const Leaf& leaf : {Leaf{"server", "ladder-server", "serverAuth"}, Leaf{"worker", "ladder-worker", "clientAuth"},
                           Leaf{"client", "ladder-client", "clientAuth"}}) {
    Key key = NewKey();
    Cert cert = MakeCert(key.get(), leaf.cn, ca.get(), ca_key.get(), options.days);
    AddExtension(cert.get(), ca.get(), NID_basic_constraints, "critical,CA:FALSE");
    AddExtension(cert.get(), ca.get(), NID_key_usage, "critical,digitalSignature,keyEncipherment");
    AddExtension(cert.get(), ca.get(), NID_ext_key_usage, leaf.eku);
    if (std::string(leaf.file) == "server") AddExtension(cert.get(), ca.get(), NID_subject_alt_name, san);
    Sign(cert.get(), ca_key.get());
    files.emplace_back(std::string(leaf.file) + ".crt", CertPem(cert.get()));
    files.emplace_back(std::string(leaf.file) + ".key", KeyPem(key.get()));
  }
  for (const auto& [name, pem] : files) WriteFileAtomically((fs::path(dir) / name).string(), pem, 0600);
  return paths;
}

}  // namespace ladder
