#pragma once
// Who a dashboard request is, and what it may do: from its `Authorization: Bearer T` header, or else its session
// cookie (DashboardSessions), judged by AccessControl at every request — a session by the token it was made from.
//
// Answers: 401 without a token, for a token that is not the coordinator's, a revoked or an expired one (bearer or
// session: the message says "revoked" / "expired at ..."), and for a session that outlived its idle or absolute
// lifetime; 403 for a token whose role may not make the request (a POST needs an admin token; a worker token
// reads nothing). The CSRF check of a POST with the cookie is the caller's (it needs the session's CSRF token).
// Thread: the dashboard's HTTP thread (it uses the sessions).
#include <optional>
#include <string>
#include <string_view>

#include "server/access.h"
#include "server/http/dashboard_sessions.h"

namespace ladder::server {

struct RequestAuth {
  int http_status = 200;  // 200: allowed; else 401 or 403, with `error`
  std::string error;
  v1::TokenRole role = v1::TOKEN_ROLE_UNSPECIFIED;
  std::string token_sha256;  // the token the request is judged by (what an event stream is filed under)
  const DashboardSessions::Session* session = nullptr;  // set when the cookie's session decided
  bool allowed() const { return http_status == 200; }
};

// `bearer`: the token after "Bearer " (nullopt without such a header); `cookie`: the session cookie's value.
RequestAuth Authorize(const AccessControl& access, DashboardSessions& sessions, std::optional<std::string_view> bearer,
                      const std::optional<std::string>& cookie, bool post, DashboardSessions::Clock::time_point now);

// The 401 answer's words for a request without any token.
std::string NeedsTokenMessage();

}  // namespace ladder::server
