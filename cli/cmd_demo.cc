// ladder demo: the main job on the embedded default. Uses a running coordinator if one answers at --server,
// otherwise starts one (with a local worker) in this process; runs the shipped demo search; prints progress,
// the leaderboard and the best configuration.
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "cli/demo_spec.h"
#include "cli/format.h"
#include "cli/local_stack.h"
#include "cli/search_progress.h"
#include "common/address.h"
#include "common/log.h"

namespace ladder::cli {

namespace {

struct DemoOptions {
  std::string spec_path;
  std::string db_path = "ladder.db";
  int slots = 2;
  std::string http = "127.0.0.1:0";  // the local coordinator's dashboard (any free port)
};

// The coordinator the demo uses: the one at --server when it answers, else a local coordinator and worker of the
// demo's own (*stack), whose address and token go into *use. False (exit_code set, the reason said) when none.
bool CoordinatorForDemo(const DemoOptions& opt, const GlobalOptions& g, GlobalOptions* use,
                        std::unique_ptr<LocalStack>* stack, Interrupt* interrupt, int* exit_code) {
  Client probe(g);
  if (probe.Reachable(std::chrono::milliseconds(500))) {
    if (!g.json) std::cout << "ladder demo: using the coordinator at " << g.server << "\n";
    return true;
  }
  try {  // a --db in no directory is the user's input, not a failure to serve
    server::DatabaseLock::CheckDirectory(opt.db_path);
  } catch (const std::exception& e) {
    std::cerr << "ladder demo: " << e.what() << "\n";
    *exit_code = kBadInput;
    return false;
  }
  LocalStackOptions so;
  so.listen = g.server;
  so.db_path = opt.db_path;
  so.slots = opt.slots;
  so.http = opt.http;
  *stack = std::make_unique<LocalStack>(so);
  try {
    (*stack)->Start();
  } catch (const std::exception& e) {
    std::cerr << "ladder demo: cannot start the local coordinator: " << e.what() << "\n";
    *exit_code = kFailed;
    return false;
  }
  use->server = (*stack)->address();
  use->token = (*stack)->token();
  interrupt->note = "the demo's own coordinator stops with it (running trials are terminated; " + opt.db_path +
                    " keeps what ran)";
  if (g.json) return true;
  std::cout << "ladder demo: started a local coordinator on " << use->server << " (database " << opt.db_path
            << ") and a worker with " << opt.slots << " slots\n";
  const std::string url = (*stack)->dashboard_url();
  if (!url.empty() && ::isatty(STDOUT_FILENO) == 1) {
    std::cout << "  watch it: " << url << "login?token=" << use->token << "\n";
  } else if (!url.empty()) {  // output that is kept: where the token is, not the token
    std::cout << "  watch it: " << url << " (log in with the token in " << opt.db_path << ".token)\n";
  }
  return true;
}

// Starts the demo's search and follows it to its end, then prints the leaderboard.
void RunDemoSearch(const DemoOptions& opt, const GlobalOptions& g, const GlobalOptions& use, const std::string& yaml,
                   const std::string& path, Interrupt* interrupt, std::chrono::steady_clock::time_point t0,
                   int* exit_code) {
  Client client(use);
  v1::CreateSearchRequest req;
  req.set_spec_yaml(yaml);
  req.set_spec_path(path);
  v1::CreateSearchResponse resp;
  if (!client.Call(&v1::Ladder::Stub::CreateSearch, req, &resp, "demo", exit_code)) return;
  const auto& s = resp.search();
  if (!g.json) {
    std::cout << "ladder demo: search " << s.id() << " '" << s.name() << "': " << s.max_trials() << " trials, "
              << s.parallelism() << " at a time, " << (s.direction() == v1::MAXIMIZE ? "maximizing " : "minimizing ")
              << s.objective_metric() << "\n";
    std::cout.flush();
  }
  auto final_search = FollowSearch(client, s.id(), g.json, interrupt, exit_code);
  if (!final_search) return;
  *exit_code = PrintResultTable(client, *final_search, use, 0);
  if (!g.json) {
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << "\ndemo finished in " << FormatDuration(secs) << "; everything is in " << opt.db_path
              << " (try: sqlite3 " << opt.db_path << " 'select * from trials')\n";
  }
}

void RunDemo(const DemoOptions& opt, GlobalOptions& g, int& exit_code) {
  const auto t0 = std::chrono::steady_clock::now();
  // The in-process coordinator and worker only speak up when something is wrong (LADDER_LOG=info for more).
  SetDefaultLogLevel(LogLevel::kWarning);
  std::string yaml = kDemoSpecYaml;
  std::string path = "data/demo.yaml (built in)";
  if (!opt.spec_path.empty()) {
    if (!LoadAndValidateSpec(opt.spec_path, true, &yaml, true)) {
      exit_code = kBadInput;
      return;
    }
    path = opt.spec_path;
  }
  auto interrupt = std::make_shared<Interrupt>();
  HandleStopSignals([interrupt](int) { interrupt->Fire(); });
  GlobalOptions use = g;
  std::unique_ptr<LocalStack> stack;
  if (!CoordinatorForDemo(opt, g, &use, &stack, interrupt.get(), &exit_code)) return;
  RunDemoSearch(opt, g, use, yaml, path, interrupt.get(), t0, &exit_code);
  if (stack) stack->Stop();
}

}  // namespace

void SetupDemo(CLI::App& app, GlobalOptions& g, int& exit_code) {
  auto opt = std::make_shared<DemoOptions>();
  auto* cmd = app.add_subcommand("demo", "Run the demo search (starts a local coordinator + worker if none runs)");
  cmd->add_option("--spec", opt->spec_path, "run this spec instead of the shipped demo (data/demo.yaml)");
  cmd->add_option("--db", opt->db_path, "database for the local coordinator")->capture_default_str();
  cmd->add_option("--slots", opt->slots, "trial slots of the local worker")->capture_default_str()->check(
      CLI::Range(1, 4096));
  cmd->add_option("--http", opt->http, "host:port of the local coordinator's web dashboard (\"\": none)")
      ->check([](const std::string& v) { return v.empty() ? std::string() : HostPortError(v); })
      ->capture_default_str();
  cmd->callback([opt, &g, &exit_code] { RunDemo(*opt, g, exit_code); });
}

}  // namespace ladder::cli
