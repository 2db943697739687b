#include "server/token_admin.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>

#include "common/token.h"

namespace ladder::server {

namespace {
constexpr size_t kMaxNameBytes = 64;
constexpr double kMaxExpiresInS = 100.0 * 365 * 86400;

// Neither revoked nor past its expiry at `now`.
bool Valid(const v1::TokenInfo& t, double now) {
  return t.revoked_unix() == 0 && (t.expires_unix() <= 0 || t.expires_unix() > now);
}

// "" when `name` is a token name (letters, digits, '-', '_', '.', '@'; at most 64 bytes), else why not.
std::string NameError(const std::string& name) {
  if (name.size() > kMaxNameBytes) return "name is longer than 64 bytes";
  for (unsigned char c : name) {
    if (!std::isalnum(c) && c != '-' && c != '_' && c != '.' && c != '@') {
      return "name may hold only letters, digits, '-', '_', '.' and '@'";
    }
  }
  return "";
}
}  // namespace

void TokenAdmin::Load() {
  for (const auto& row : store_.LoadTokens()) {
    if (row.info.revoked_unix() > 0) {
      access_.Revoke(row.sha256);
    } else {
      access_.Add(row.sha256, row.info.role(), row.info.expires_unix());
    }
  }
  ArmExpiry();
}

void TokenAdmin::Stop() {
  stopped_ = true;
  expiry_timer_.cancel();
}

void TokenAdmin::ArmExpiry() {
  if (stopped_) return;
  const double next = access_.ExpireDue();
  if (next <= 0) {
    expiry_timer_.cancel();
    return;
  }
  // A millisecond late rather than early: the clock that judges calls must agree that the token has expired.
  const auto wait = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(std::max(0.0, next - access_.Now())) + std::chrono::milliseconds(1));
  expiry_timer_.expires_after(wait);  // cancels the wait for a later expiry, if any
  expiry_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) ArmExpiry();
  });
}

grpc::Status TokenAdmin::Create(const v1::CreateTokenRequest& req, v1::CreateTokenResponse* resp) {
  if (req.role() != v1::TOKEN_ROLE_ADMIN && req.role() != v1::TOKEN_ROLE_VIEWER &&
      req.role() != v1::TOKEN_ROLE_WORKER) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "role: must be admin, viewer or worker");
  }
  if (std::string err = NameError(req.name()); !err.empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "token name '" + req.name() + "': " + err);
  }
  if (!std::isfinite(req.expires_in_s()) || req.expires_in_s() < 0 || req.expires_in_s() > kMaxExpiresInS) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "expires_in_s: " + std::to_string(req.expires_in_s()) +
                            " is not a number of seconds from 0 (never) to 100 years");
  }
  const double now = access_.Now();
  const std::string secret = GenerateToken();
  const std::string hash = Sha256Hex(secret);
  std::string name = req.name().empty() ? RoleName(req.role()) + "-" + hash.substr(0, 6) : req.name();
  for (const auto& row : store_.LoadTokens()) {
    if (Valid(row.info, now) && row.info.name() == name) {
      return grpc::Status(grpc::StatusCode::ALREADY_EXISTS,
                          "a valid token is already named '" + name + "' (revoke it first, or pick another name)");
    }
  }
  const double expires = req.expires_in_s() > 0 ? now + req.expires_in_s() : 0;
  const int64_t id = store_.InsertToken(name, req.role(), hash, now, expires);
  store_.Flush();  // committed before the secret is handed out
  access_.Add(hash, req.role(), expires);
  if (expires > 0) ArmExpiry();
  v1::TokenInfo* info = resp->mutable_token();
  info->set_id(id);
  info->set_name(name);
  info->set_role(req.role());
  info->set_fingerprint(hash.substr(0, 12));
  info->set_created_unix(now);
  info->set_expires_unix(expires);
  resp->set_secret(secret);
  return grpc::Status::OK;
}

grpc::Status TokenAdmin::Revoke(const v1::RevokeTokenRequest& req, v1::RevokeTokenResponse* resp) {
  if (req.token().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "token: give its id, name or fingerprint");
  }
  const double now = access_.Now();
  const auto rows = store_.LoadTokens();
  const store::Store::TokenRow* found = nullptr;
  int matches = 0;
  for (const auto& row : rows) {
    const bool hit = std::to_string(row.info.id()) == req.token() || row.info.name() == req.token() ||
                     (req.token().size() >= 6 && row.sha256.compare(0, req.token().size(), req.token()) == 0);
    if (!hit) continue;
    // A name may be reused after a revocation or an expiry: the valid token of that name is the one meant.
    if (!found || (!Valid(found->info, now) && Valid(row.info, now))) found = &row;
    matches += Valid(row.info, now);
  }
  if (!found) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        "no token has the id, name or fingerprint '" + req.token() + "' (ladder tokens list)");
  }
  if (matches > 1) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "'" + req.token() + "' names " + std::to_string(matches) + " valid tokens: give its id");
  }
  *resp->mutable_token() = found->info;
  if (found->info.revoked_unix() > 0) return grpc::Status::OK;  // already revoked: nothing changes
  store_.RevokeToken(found->info.id(), now);
  store_.Flush();
  access_.Revoke(found->sha256);
  resp->mutable_token()->set_revoked_unix(now);
  return grpc::Status::OK;
}

grpc::Status TokenAdmin::List(const v1::ListTokensRequest&, v1::ListTokensResponse* resp) {
  for (auto& row : store_.LoadTokens()) *resp->add_tokens() = std::move(row.info);
  return grpc::Status::OK;
}

}  // namespace ladder::server
