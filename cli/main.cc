// ladder: the command-line interface. `ladder --help` lists the subcommands; every one has --help.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>

#include "cli/commands.h"
#include "common/address.h"
#include "common/log.h"

int main(int argc, char** argv) {
  ladder::SetLogLevelFromEnv();
  CLI::App app{"ladder: hyperparameter search and hero runs for distributed deep learning"};
  app.require_subcommand(1);
  app.fallthrough();  // the global options work after a subcommand too: `ladder nodes --json`
  ladder::cli::GlobalOptions g;
  if (const char* s = std::getenv("LADDER_SERVER"); s && *s) g.server = s;
  app.add_option("--server", g.server, "coordinator address host:port (or LADDER_SERVER)")
      ->check([](const std::string& v) { return ladder::HostPortError(v); })
      ->capture_default_str();
  app.add_option("--token", g.token, "access token (or LADDER_TOKEN; default: ./ladder.db.token)");
  app.add_flag("--json", g.json, "machine-readable output");
  int exit_code = 0;
  ladder::cli::SetupUp(app, g, exit_code);
  ladder::cli::SetupDemo(app, g, exit_code);
  ladder::cli::SetupPromote(app, g, exit_code);
  ladder::cli::SetupSearch(app, g, exit_code);
  ladder::cli::SetupTrials(app, g, exit_code);
  ladder::cli::SetupNodes(app, g, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : ladder::cli::kBadInput;
  }
  return exit_code;
}
