// ladder: the command-line interface. `ladder --help` lists the subcommands; every one has --help.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>

#include "cli/commands.h"
#include "common/address.h"
#include "common/log.h"
#include "common/token.h"

int main(int argc, char** argv) {
  ladder::SetLogLevelFromEnv();
  CLI::App app{"ladder: hyperparameter search and hero runs for distributed deep learning"};
  app.set_version_flag("--version", std::string("ladder ") + LADDER_VERSION);
  app.require_subcommand(1);
  app.fallthrough();  // the global options work after a subcommand too: `ladder nodes --json`
  ladder::cli::GlobalOptions g;
  if (const char* s = std::getenv("LADDER_SERVER"); s && *s) g.server = s, g.server_given = true;
  app.add_option("--server", g.server, "coordinator address host:port (or LADDER_SERVER)")
      ->check([](const std::string& v) { return ladder::HostPortError(v); })
      ->each([&g](const std::string&) { g.server_given = true; })
      ->capture_default_str();
  auto* token = app.add_option("--token", g.token,
                               "access token (or LADDER_TOKEN; default: <--db>.token, ./ladder.db.token); visible to "
                               "other users in the process list: prefer --token-file");
  app.add_option("--token-file", g.token_file,
                 "file holding the access token (as ladder-worker's --token-file): <db>.token, or a token from "
                 "`ladder tokens create`")
      ->check([](const std::string& path) -> std::string {
        try {
          if (!ladder::ReadTokenFile(path)) return "--token-file " + path + ": no such file";
        } catch (const std::exception& e) {
          return std::string("--token-file: ") + e.what();
        }
        return "";
      })
      ->excludes(token);
  app.add_option("--db", g.db,
                 "talk to the coordinator serving this database: its address from DB.server (written by ladder up, "
                 "e.g. inside a Slurm job), its token from DB.token; `search list` also shows DB's Slurm jobs");
  app.add_flag("--json", g.json, "machine-readable output");
  app.add_option("--tls-ca", g.tls.ca,
                 "PEM CA certificate that signed the coordinator's (TLS; or LADDER_TLS_CA; default with --db: "
                 "DB.tls/ca.crt when it exists)");
  app.add_option("--tls-cert", g.tls.cert, "PEM client certificate for mutual TLS (or LADDER_TLS_CERT)");
  app.add_option("--tls-key", g.tls.key, "its PEM private key (or LADDER_TLS_KEY)");
  app.add_option("--tls-dir", g.tls_dir,
                 "a directory from `ladder certs create`: its ca.crt, client.crt and client.key");
  int exit_code = 0;
  ladder::cli::SetupUp(app, g, exit_code);
  ladder::cli::SetupDemo(app, g, exit_code);
  ladder::cli::SetupPromote(app, g, exit_code);
  ladder::cli::SetupSearch(app, g, exit_code);
  ladder::cli::SetupTrials(app, g, exit_code);
  ladder::cli::SetupNodes(app, g, exit_code);
  ladder::cli::SetupWatch(app, g, exit_code);
  ladder::cli::SetupCerts(app, g, exit_code);
  ladder::cli::SetupTokens(app, g, exit_code);
  // The first word that is not an option (nor an option's value) must name a command.
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--server" || a == "--token" || a == "--token-file" || a == "--db" || a == "--tls-ca" ||
        a == "--tls-cert" || a == "--tls-key" || a == "--tls-dir") {
      ++i;
      continue;
    }
    if (a.rfind("-", 0) == 0) continue;
    bool known = false;
    std::string names;
    for (const auto* sub : app.get_subcommands({})) {
      known |= sub->get_name() == a;
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      std::cerr << "ladder: unknown command '" << a << "' (commands: " << names << "; ladder --help)\n";
      return ladder::cli::kBadInput;
    }
    break;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : ladder::cli::kBadInput;
  }
  return exit_code;
}
