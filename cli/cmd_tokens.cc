// ladder tokens create|list|revoke: access tokens of three roles (admin, viewer, worker), made and revoked by an
// admin; the coordinator keeps their SHA-256 only and shows a token's secret once, when it is created.
#include <ctime>
#include <iostream>

#include "cli/commands.h"
#include "cli/format.h"
#include "proto/proto_json.h"
#include "common/duration_text.h"

namespace ladder::cli {

namespace {

std::string RoleWord(v1::TokenRole r) {
  switch (r) {
    case v1::TOKEN_ROLE_ADMIN: return "admin";
    case v1::TOKEN_ROLE_VIEWER: return "viewer";
    case v1::TOKEN_ROLE_WORKER: return "worker";
    default: return "?";
  }
}

std::string When(double unix_time) {
  if (unix_time <= 0) return "-";
  std::time_t t = static_cast<std::time_t>(unix_time);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", std::localtime(&t));
  return buf;
}

}  // namespace

void SetupTokens(CLI::App& app, GlobalOptions& g, int& exit_code) {
  auto* tokens = app.add_subcommand(
      "tokens",
      "Access tokens: admin (everything), viewer (read only: dashboards, colleagues), worker (ladder-worker only)");
  tokens->require_subcommand(1);

  auto role = std::make_shared<std::string>();
  auto name = std::make_shared<std::string>();
  auto expires = std::make_shared<std::string>();
  auto* create = tokens->add_subcommand("create", "Make a token; its secret is printed once, never stored");
  create->add_option("--role", *role, "admin, viewer or worker")
      ->required()
      ->check(CLI::IsMember({"admin", "viewer", "worker"}));
  create->add_option("NAME,--name", *name, "a name to list and revoke it by (default: ROLE-<fingerprint>)");
  create->add_option("--expires", *expires,
                     "it is refused this long after now, and what it opened ends then (s, m, h or d: 12h, 30d); "
                     "default: valid until revoked")
      ->check([](const std::string& v) { return DurationTextError(v); });
  create->callback([role, name, expires, &g, &exit_code] {
    Client client(g);
    v1::CreateTokenRequest req;
    req.set_role(*role == "admin" ? v1::TOKEN_ROLE_ADMIN : *role == "viewer" ? v1::TOKEN_ROLE_VIEWER
                                                                              : v1::TOKEN_ROLE_WORKER);
    req.set_name(*name);
    if (!expires->empty()) req.set_expires_in_s(static_cast<double>(*ParseDurationSeconds(*expires)));
    v1::CreateTokenResponse resp;
    if (!client.Call(&v1::Ladder::Stub::CreateToken, req, &resp, "tokens create", &exit_code)) return;
    if (g.json) {
      std::cout << ProtoJson(resp, /*print_defaults=*/true) << "\n";
    } else {
      std::cout << resp.secret() << "\n";
      std::cerr << "token " << resp.token().name() << " (" << RoleWord(resp.token().role()) << ", id "
                << resp.token().id() << ", fingerprint " << resp.token().fingerprint()
                << (resp.token().expires_unix() > 0 ? ", expires " + FormatUtc(resp.token().expires_unix()) : "")
                << "): the line above is its secret, shown only now; revoke it with `ladder tokens revoke "
                << resp.token().name() << "`\n";
    }
    exit_code = kOk;
  });

  auto* list = tokens->add_subcommand(
      "list", "The tokens made with `tokens create` (not <db>.token), with their expiry; revoked and expired ones too");
  list->callback([&g, &exit_code] {
    Client client(g);
    v1::ListTokensResponse resp;
    if (!client.Call(&v1::Ladder::Stub::ListTokens, v1::ListTokensRequest(), &resp, "tokens list", &exit_code)) return;
    if (g.json) {
      std::cout << ProtoJson(resp, /*print_defaults=*/true) << "\n";
    } else if (resp.tokens().empty()) {
      std::cout << "no tokens besides the admin token in <db>.token (ladder tokens create --role viewer)\n";
    } else {
      std::vector<std::vector<std::string>> rows = {
          {"ID", "NAME", "ROLE", "FINGERPRINT", "CREATED", "EXPIRES", "REVOKED"}};
      for (const auto& t : resp.tokens()) {
        rows.push_back({std::to_string(t.id()), t.name(), RoleWord(t.role()), t.fingerprint(), When(t.created_unix()),
                        When(t.expires_unix()), When(t.revoked_unix())});
      }
      PrintColumns(rows, std::cout);
    }
    exit_code = kOk;
  });

  auto which = std::make_shared<std::string>();
  auto* revoke = tokens->add_subcommand(
      "revoke", "Revoke a token: every call with it is refused from now on, and its open streams and dashboard "
                "sessions end");
  revoke->add_option("TOKEN", *which, "its id, name or fingerprint (ladder tokens list)")->required();
  revoke->callback([which, &g, &exit_code] {
    Client client(g);
    v1::RevokeTokenRequest req;
    req.set_token(*which);
    v1::RevokeTokenResponse resp;
    if (!client.Call(&v1::Ladder::Stub::RevokeToken, req, &resp, "tokens revoke", &exit_code)) return;
    if (g.json) {
      std::cout << ProtoJson(resp, /*print_defaults=*/true) << "\n";
    } else {
      std::cout << "revoked token " << resp.token().name() << " (" << RoleWord(resp.token().role()) << ", id "
                << resp.token().id() << ") at " << When(resp.token().revoked_unix()) << "\n";
    }
    exit_code = kOk;
  });
}

}  // namespace ladder::cli
