#include "worker/certificate_check.h"

#include "common/tls_probe.h"

namespace ladder::worker {

CertificateCheck::CertificateCheck(std::string server, TlsFiles tls, int tries, std::chrono::milliseconds every)
    : server_(std::move(server)), tls_(std::move(tls)), tries_(tries), every_(every) {}

std::string CertificateCheck::Check(std::chrono::steady_clock::time_point now) {
  if (!tls_.enabled() || now < next_) return "";
  next_ = now + every_;
  const TlsDiagnosis d = DiagnoseTls(server_, tls_, std::chrono::seconds(2));
  if (!d.CertificateRefused()) {
    refusals_ = 0;
    return "";
  }
  if (++refusals_ < tries_) return "";
  refusals_ = 0;
  next_ = now + std::chrono::minutes(1);
  return d.message;
}

}  // namespace ladder::worker
