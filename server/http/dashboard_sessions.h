#pragma once
// DashboardSessions: the dashboard's logins. /login makes a session from a token; the session keeps that token's
// SHA-256 (never the token), its role and a CSRF token, and the browser holds only the session's id in a cookie.
// Every request with the cookie is judged again by the token it was made from (AccessControl::CheckHash), so a
// revoked or expired token ends its sessions at their next request.
//
// Sessions end on their own, too: after `idle` without a request, and `lifetime` after the login whatever the use
// (SessionLimits; ladder-server --session-idle, --session-lifetime). An ended session is forgotten; the request
// that finds it ended is told why. At most max_sessions live at once: a login past that drops the session used
// longest ago.
//
// Thread: the dashboard's HTTP thread only. Time comes in as an argument (the clock is the caller's).
#include <chrono>
#include <cstddef>
#include <map>
#include <string>

#include "ladder/v1/ladder.pb.h"

namespace ladder::server {

inline constexpr std::chrono::seconds kDefaultSessionIdle = std::chrono::hours(8);
inline constexpr std::chrono::seconds kDefaultSessionLifetime = std::chrono::hours(24);

struct SessionLimits {
  std::chrono::seconds idle = kDefaultSessionIdle;          // since its last request
  std::chrono::seconds lifetime = kDefaultSessionLifetime;  // since its login
  size_t max_sessions = 4096;
};

class DashboardSessions {
 public:
  using Clock = std::chrono::steady_clock;
  struct Session {
    std::string csrf;          // the page's X-CSRF-Token for POSTs
    v1::TokenRole role = v1::TOKEN_ROLE_UNSPECIFIED;  // the role of the token it logged in with
    std::string token_sha256;  // that token's SHA-256: what every request is judged by
    Clock::time_point created, last_used;
  };

  explicit DashboardSessions(SessionLimits limits = {}) : limits_(limits) {}

  // A new session (its id and CSRF token are 24 random bytes as hex); returns its id.
  std::string Create(v1::TokenRole role, std::string token_sha256, Clock::time_point now);
  // The session `id` names, as of `now` (which counts as a use). nullptr when there is none; also when it has
  // been idle for longer than limits.idle or lived longer than limits.lifetime: it is forgotten, and `*ended`
  // says which (it is left empty for an id that names no session).
  const Session* Use(const std::string& id, Clock::time_point now, std::string* ended);
  size_t size() const { return sessions_.size(); }
  const SessionLimits& limits() const { return limits_; }

 private:
  // Why the session has ended at `now` ("" while it lives).
  std::string EndedWhy(const Session& s, Clock::time_point now) const;

  SessionLimits limits_;
  std::map<std::string, Session> sessions_;  // by id
};

}  // namespace ladder::server
