#include "server/access.h"

#include <chrono>
#include <vector>

#include "common/duration_text.h"
#include "common/token.h"

namespace ladder::server {

namespace {
// Equal in time that does not depend on where the strings differ.
bool SameSecret(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned>(a[i] ^ b[i]);
  return diff == 0;
}

double SystemNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}
}  // namespace

bool RoleAllows(v1::TokenRole role, Need need) {
  switch (role) {
    case v1::TOKEN_ROLE_ADMIN: return true;
    case v1::TOKEN_ROLE_VIEWER: return need == Need::kRead;
    case v1::TOKEN_ROLE_WORKER: return need == Need::kWorker;
    default: return false;
  }
}

std::string RoleName(v1::TokenRole role) {
  switch (role) {
    case v1::TOKEN_ROLE_ADMIN: return "admin";
    case v1::TOKEN_ROLE_VIEWER: return "viewer";
    case v1::TOKEN_ROLE_WORKER: return "worker";
    default: return "none";
  }
}

std::string RevokedMessage() {
  return "the token was revoked (`ladder tokens list` shows when); ask the coordinator's admin for a new one";
}

std::string ExpiredMessage(double expires_unix) {
  return "the token expired at " + FormatUtc(expires_unix) +
         " (`ladder tokens list` shows it); ask the coordinator's admin for a new one";
}

AccessControl::AccessControl(std::string admin_token, WallClock now)
    : admin_token_(std::move(admin_token)),
      admin_sha256_(admin_token_.empty() ? std::string() : Sha256Hex(admin_token_)),
      now_(now ? std::move(now) : WallClock(SystemNow)) {}

v1::TokenRole AccessControl::RoleOf(std::string_view token) const {
  const Access a = Check(token, Need::kRead);
  return a.verdict == Access::kAllowed || a.verdict == Access::kWrongRole ? a.role : v1::TOKEN_ROLE_UNSPECIFIED;
}

Access AccessControl::Check(std::string_view token, Need need) const {
  if (open()) {
    Access a;
    a.verdict = Access::kAllowed;
    a.role = v1::TOKEN_ROLE_ADMIN;
    return a;
  }
  if (token.empty()) return Access{};  // kNoToken
  if (SameSecret(token, admin_token_)) return Judge(admin_sha256_, need);
  return Judge(Sha256Hex(token), need);  // once per call
}

Access AccessControl::CheckHash(const std::string& sha256, Need need) const {
  if (open()) return Check("", need);
  if (sha256.empty()) return Access{};
  return Judge(sha256, need);
}

Access AccessControl::Judge(const std::string& sha256, Need need) const {
  Access a;
  if (sha256 == admin_sha256_) {
    a.sha256 = sha256;
    a.role = v1::TOKEN_ROLE_ADMIN;
    a.verdict = Access::kAllowed;
    return a;
  }
  const double now = now_();
  {
    // A hash lookup: the map's comparisons see only the hash, not the secret.
    std::lock_guard<std::mutex> g(mu_);
    auto it = valid_.find(sha256);
    if (it == valid_.end()) {
      a.verdict = revoked_.count(sha256) ? Access::kRevoked : Access::kUnknownToken;
      if (a.verdict == Access::kRevoked) a.sha256 = sha256;
      return a;
    }
    a.sha256 = sha256;
    a.role = it->second.role;
    a.expires_unix = it->second.expires_unix;
  }
  if (a.expires_unix > 0 && now >= a.expires_unix) {
    a.verdict = Access::kExpired;
    return a;
  }
  a.verdict = RoleAllows(a.role, need) ? Access::kAllowed : Access::kWrongRole;
  return a;
}

void AccessControl::Add(const std::string& sha256, v1::TokenRole role, double expires_unix) {
  std::lock_guard<std::mutex> g(mu_);
  valid_[sha256] = Entry{role, expires_unix, false};
  revoked_.erase(sha256);
}

void AccessControl::Revoke(const std::string& sha256) {
  {
    std::lock_guard<std::mutex> g(mu_);
    valid_.erase(sha256);
    revoked_[sha256] = true;
  }
  Tell(sha256, RevokedMessage());
}

double AccessControl::ExpireDue() {
  const double now = now_();
  std::vector<std::pair<std::string, double>> due;
  double next = 0;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (auto& [sha256, e] : valid_) {
      if (e.expires_unix <= 0) continue;
      if (e.expires_unix <= now) {
        if (!e.expiry_told) due.emplace_back(sha256, e.expires_unix);
        e.expiry_told = true;
      } else if (next == 0 || e.expires_unix < next) {
        next = e.expires_unix;
      }
    }
  }
  for (const auto& [sha256, at] : due) Tell(sha256, ExpiredMessage(at));
  return next;
}

int64_t AccessControl::Subscribe(TokenEndedFn fn) const {
  std::lock_guard<std::mutex> g(mu_);
  const int64_t id = next_subscriber_++;
  subscribers_[id] = std::move(fn);
  return id;
}

void AccessControl::Unsubscribe(int64_t id) const {
  std::lock_guard<std::mutex> g(mu_);
  subscribers_.erase(id);
}

void AccessControl::Tell(const std::string& sha256, const std::string& why) const {
  std::vector<TokenEndedFn> fns;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (const auto& [id, fn] : subscribers_) fns.push_back(fn);
  }
  for (const auto& fn : fns) fn(sha256, why);
}

}  // namespace ladder::server
