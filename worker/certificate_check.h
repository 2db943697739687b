#pragma once
// CertificateCheck: while a worker cannot connect to its coordinator over TLS, finds out whether a certificate
// is the reason (common/tls_probe.h: the coordinator refused ours, or ours does not trust the coordinator's),
// which no retry fixes, unlike a coordinator that is down or restarting.
//
// Rule: at most one probe per `every`; after `tries` probes in a row that find the certificate refused, Check
// returns the probe's message (the worker then stops, as for a refused token); a probe that finds nothing starts
// the count again. After a refusal was returned, the next probe waits a minute (for a worker that keeps trying).
// Thread: the worker's session thread (a probe blocks it for at most a few seconds).
#include <chrono>
#include <string>

#include "common/tls.h"

namespace ladder::worker {

class CertificateCheck {
 public:
  static constexpr int kDefaultTries = 3;

  CertificateCheck(std::string server, TlsFiles tls, int tries = kDefaultTries,
                   std::chrono::milliseconds every = std::chrono::seconds(1));
  // Called while the channel is not connected. "" unless `tries` probes in a row found the certificate refused.
  std::string Check(std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now());
  // The channel connected: the count starts again.
  void Connected() { refusals_ = 0; }

 private:
  std::string server_;
  TlsFiles tls_;
  int tries_;
  std::chrono::milliseconds every_;
  int refusals_ = 0;
  std::chrono::steady_clock::time_point next_{};
};

}  // namespace ladder::worker
