#pragma once
// AccessControl: who may make which call. Every call carries a token (`authorization: Bearer T` on gRPC; the
// dashboard's session holds one); its role decides:
//   admin  — every call (the coordinator's own token, <db>.token, and tokens created with --role admin);
//   viewer — the read calls only (a dashboard, a colleague);
//   worker — the worker protocol only (WorkerService.Connect).
// Tokens other than the coordinator's own are kept as SHA-256 hashes (in the store and here); a revoked token is
// remembered so that its refusal says so. Thread-safe: the gRPC threads and the dashboard's thread ask, the
// coordinator's loop changes it (ladder tokens create / revoke).
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "ladder/v1/ladder.pb.h"

namespace ladder::server {

// What a call needs.
enum class Need { kRead, kWrite, kWorker };

struct Access {
  enum Verdict { kAllowed, kNoToken, kUnknownToken, kRevoked, kWrongRole } verdict = kNoToken;
  v1::TokenRole role = v1::TOKEN_ROLE_UNSPECIFIED;
  bool allowed() const { return verdict == kAllowed; }
};

class AccessControl {
 public:
  // `admin_token` empty: no token is asked for (ladder-server --no-token) and every call is allowed.
  explicit AccessControl(std::string admin_token) : admin_token_(std::move(admin_token)) {}

  bool open() const { return admin_token_.empty(); }
  // The verdict for `token` (the bearer string without "Bearer "; empty when the call carried none).
  Access Check(std::string_view token, Need need) const;
  // The role of a valid token (UNSPECIFIED when it is unknown or revoked).
  v1::TokenRole RoleOf(std::string_view token) const;

  // The store's tokens (at start) and each change after.
  void Add(const std::string& sha256, v1::TokenRole role);
  void Revoke(const std::string& sha256);

 private:
  v1::TokenRole RoleOfHash(const std::string& sha256) const;

  const std::string admin_token_;
  mutable std::mutex mu_;
  std::map<std::string, v1::TokenRole, std::less<>> valid_;  // sha256 hex -> role
  std::map<std::string, bool, std::less<>> revoked_;         // sha256 hex
};

// Whether `role` may make a call that needs `need`.
bool RoleAllows(v1::TokenRole role, Need need);
// "admin", "viewer", "worker" (and "none").
std::string RoleName(v1::TokenRole role);

}  // namespace ladder::server
