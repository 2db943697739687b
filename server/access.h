#pragma once
// AccessControl: who may make which call. Every call carries a token (`authorization: Bearer T` on gRPC; the
// dashboard's session holds one); its role decides:
//   admin  — every call (the coordinator's own token, <db>.token, and tokens created with --role admin);
//   viewer — the read calls only (a dashboard, a colleague);
//   worker — the worker protocol only (WorkerService.Connect).
// Tokens other than the coordinator's own are kept as SHA-256 hashes (in the store and here); a revoked token is
// remembered so that its refusal says so, and a token past its expiry is refused saying when it expired.
//
// A token's end reaches what it opened: whoever holds something opened with a token (a Watch or worker stream,
// a dashboard session's event stream) subscribes, and is told the token's SHA-256 and the refusal's words when
// it is revoked (Revoke) or expires (ExpireDue, which the coordinator's loop calls from a timer at each expiry).
//
// Thread-safe: the gRPC threads and the dashboard's thread ask, the coordinator's loop changes it (ladder tokens
// create / revoke, the expiry timer). Subscribers are called on the thread that made the change, without the lock
// held; they must not block (they post to their own thread).
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "ladder/v1/ladder.pb.h"

namespace ladder::server {

// What a call needs.
enum class Need { kRead, kWrite, kWorker };

struct Access {
  enum Verdict { kAllowed, kNoToken, kUnknownToken, kRevoked, kExpired, kWrongRole } verdict = kNoToken;
  v1::TokenRole role = v1::TOKEN_ROLE_UNSPECIFIED;
  // The token's SHA-256 (hex) when it is one of this coordinator's (the admin token's too); empty without a token
  // and when no token is asked for (open). What streams and sessions opened with it are filed under.
  std::string sha256;
  double expires_unix = 0;  // kExpired: when it expired; otherwise when it will (0: never)
  bool allowed() const { return verdict == kAllowed; }
};

// Told that the token with this SHA-256 ended (revoked or expired) and why, in the words of its refusal.
using TokenEndedFn = std::function<void(const std::string& sha256, const std::string& why)>;

class AccessControl {
 public:
  using WallClock = std::function<double()>;  // unix seconds

  // `admin_token` empty: no token is asked for (ladder-server --no-token) and every call is allowed. `now`: the
  // clock expiries are judged by (the system clock when empty; tests pass their own).
  explicit AccessControl(std::string admin_token, WallClock now = {});

  bool open() const { return admin_token_.empty(); }
  // The verdict for `token` (the bearer string without "Bearer "; empty when the call carried none).
  Access Check(std::string_view token, Need need) const;
  // The verdict for a token known by its SHA-256 (what a dashboard session or an open stream keeps).
  Access CheckHash(const std::string& sha256, Need need) const;
  // The role of a valid token (UNSPECIFIED when it is unknown, revoked or expired).
  v1::TokenRole RoleOf(std::string_view token) const;

  // The store's tokens (at start) and each change after. `expires_unix` 0: valid until revoked.
  void Add(const std::string& sha256, v1::TokenRole role, double expires_unix = 0);
  // The token is refused from now on; subscribers hear of it.
  void Revoke(const std::string& sha256);
  // Tells subscribers of every token whose expiry has passed and that they have not heard of; returns the next
  // expiry still ahead (unix seconds; 0: none).
  double ExpireDue();
  double Now() const { return now_(); }

  // Subscriptions do not change who may do what: they are allowed through a const reference.
  int64_t Subscribe(TokenEndedFn fn) const;
  void Unsubscribe(int64_t id) const;

 private:
  struct Entry {
    v1::TokenRole role = v1::TOKEN_ROLE_UNSPECIFIED;
    double expires_unix = 0;
    bool expiry_told = false;  // subscribers heard of its expiry
  };
  Access Judge(const std::string& sha256, Need need) const;
  void Tell(const std::string& sha256, const std::string& why) const;

  const std::string admin_token_;
  const std::string admin_sha256_;
  WallClock now_;
  mutable std::mutex mu_;
  std::map<std::string, Entry, std::less<>> valid_;  // sha256 hex -> role, expiry
  std::map<std::string, bool, std::less<>> revoked_;  // sha256 hex
  mutable std::map<int64_t, TokenEndedFn> subscribers_;
  mutable int64_t next_subscriber_ = 1;
};

// Whether `role` may make a call that needs `need`.
bool RoleAllows(v1::TokenRole role, Need need);
// "admin", "viewer", "worker" (and "none").
std::string RoleName(v1::TokenRole role);
// The refusal's words for a revoked token, and for one that expired at `expires_unix` ("... UTC").
std::string RevokedMessage();
std::string ExpiredMessage(double expires_unix);

}  // namespace ladder::server
