#include "server/http/dashboard_sessions.h"

#include "common/duration_text.h"
#include "server/http/http_util.h"

namespace ladder::server {

std::string DashboardSessions::EndedWhy(const Session& s, Clock::time_point now) const {
  if (now - s.created >= limits_.lifetime) {
    return "this dashboard session ended: it is older than its lifetime of " +
           FormatDurationSeconds(limits_.lifetime.count()) + " (ladder-server --session-lifetime); log in again";
  }
  if (now - s.last_used >= limits_.idle) {
    return "this dashboard session ended: it was idle for longer than " + FormatDurationSeconds(limits_.idle.count()) +
           " (ladder-server --session-idle); log in again";
  }
  return "";
}

std::string DashboardSessions::Create(v1::TokenRole role, std::string token_sha256, Clock::time_point now) {
  // Ended sessions go first; then, if still full, the one used longest ago.
  std::erase_if(sessions_, [&](const auto& kv) { return !EndedWhy(kv.second, now).empty(); });
  if (sessions_.size() >= limits_.max_sessions && !sessions_.empty()) {
    auto oldest = sessions_.begin();
    for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
      if (it->second.last_used < oldest->second.last_used) oldest = it;
    }
    sessions_.erase(oldest);
  }
  std::string id = RandomHex(24);
  sessions_[id] = Session{RandomHex(24), role, std::move(token_sha256), now, now};
  return id;
}

const DashboardSessions::Session* DashboardSessions::Use(const std::string& id, Clock::time_point now,
                                                         std::string* ended) {
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return nullptr;
  if (std::string why = EndedWhy(it->second, now); !why.empty()) {
    sessions_.erase(it);
    if (ended) *ended = std::move(why);
    return nullptr;
  }
  it->second.last_used = now;
  return &it->second;
}

}  // namespace ladder::server
