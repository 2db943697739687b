#include "server/http/dashboard_auth.h"

namespace ladder::server {

namespace {

RequestAuth Refused(int status, std::string error) {
  RequestAuth r;
  r.http_status = status;
  r.error = std::move(error);
  return r;
}

// The answer for a token's verdict; `session`: the token is the one a session was made from.
RequestAuth FromVerdict(const Access& a, bool session) {
  const std::string ended = session ? "this dashboard session ended: " : "";
  switch (a.verdict) {
    case Access::kAllowed: break;
    case Access::kNoToken: return Refused(401, NeedsTokenMessage());
    case Access::kUnknownToken:
      return Refused(401, ended + "the token was rejected: it is not one of this coordinator's (its admin token is in "
                                  "<db>.token; `ladder tokens list` shows the others)");
    case Access::kRevoked: return Refused(401, ended + RevokedMessage());
    case Access::kExpired: return Refused(401, ended + ExpiredMessage(a.expires_unix));
    case Access::kWrongRole:
      return Refused(403, a.role == v1::TOKEN_ROLE_WORKER
                              ? "a worker token may only connect a ladder-worker; log in with a viewer or admin token"
                              : "a " + RoleName(a.role) + " token may only read; this needs an admin token");
  }
  RequestAuth r;
  r.role = a.role;
  r.token_sha256 = a.sha256;
  return r;
}

}  // namespace

std::string NeedsTokenMessage() {
  return "this needs a token of the coordinator: open /login?token=TOKEN once (it sets a cookie), or send "
         "Authorization: Bearer TOKEN (the admin token is in <db>.token; ladder tokens create --role viewer makes a "
         "read-only one)";
}

RequestAuth Authorize(const AccessControl& access, DashboardSessions& sessions, std::optional<std::string_view> bearer,
                      const std::optional<std::string>& cookie, bool post, DashboardSessions::Clock::time_point now) {
  const Need need = post ? Need::kWrite : Need::kRead;
  if (access.open()) return FromVerdict(access.Check("", need), false);
  if (bearer) return FromVerdict(access.Check(*bearer, need), false);
  if (!cookie) return Refused(401, NeedsTokenMessage());
  std::string ended;
  const DashboardSessions::Session* s = sessions.Use(*cookie, now, &ended);
  if (!s) return Refused(401, ended.empty() ? NeedsTokenMessage() : ended);
  RequestAuth r = FromVerdict(access.CheckHash(s->token_sha256, need), true);
  if (r.allowed()) r.session = s;
  return r;
}

}  // namespace ladder::server
