#include "server/access.h"

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

v1::TokenRole AccessControl::RoleOf(std::string_view token) const {
  if (token.empty()) return v1::TOKEN_ROLE_UNSPECIFIED;
  if (SameSecret(token, admin_token_)) return v1::TOKEN_ROLE_ADMIN;
  return RoleOfHash(Sha256Hex(token));
}

v1::TokenRole AccessControl::RoleOfHash(const std::string& hash) const {
  // A hash lookup: the map's comparisons see only the hash, not the secret.
  std::lock_guard<std::mutex> g(mu_);
  auto it = valid_.find(hash);
  return it == valid_.end() ? v1::TOKEN_ROLE_UNSPECIFIED : it->second;
}

Access AccessControl::Check(std::string_view token, Need need) const {
  Access a;
  if (open()) {
    a.verdict = Access::kAllowed;
    a.role = v1::TOKEN_ROLE_ADMIN;
    return a;
  }
  if (token.empty()) return a;  // kNoToken
  if (SameSecret(token, admin_token_)) {
    a.role = v1::TOKEN_ROLE_ADMIN;
  } else {
    const std::string hash = Sha256Hex(token);  // once per call
    a.role = RoleOfHash(hash);
    if (a.role == v1::TOKEN_ROLE_UNSPECIFIED) {
      std::lock_guard<std::mutex> g(mu_);
      a.verdict = revoked_.count(hash) ? Access::kRevoked : Access::kUnknownToken;
      return a;
    }
  }
  a.verdict = RoleAllows(a.role, need) ? Access::kAllowed : Access::kWrongRole;
  return a;
}

void AccessControl::Add(const std::string& sha256, v1::TokenRole role) {
  std::lock_guard<std::mutex> g(mu_);
  valid_[sha256] = role;
  revoked_.erase(sha256);
}

void AccessControl::Revoke(const std::string& sha256) {
  std::lock_guard<std::mutex> g(mu_);
  valid_.erase(sha256);
  revoked_[sha256] = true;
}

}  // namespace ladder::server
