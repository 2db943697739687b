// ladder up: a coordinator and one local worker in the foreground (the embedded default).
#include <condition_variable>
#include <filesystem>
#include <iostream>
#include <mutex>

#include "cli/commands.h"
#include "cli/local_stack.h"
#include "common/address.h"

namespace ladder::cli {

void SetupUp(CLI::App& app, GlobalOptions& g, int& exit_code) {
  auto opt = std::make_shared<LocalStackOptions>();
  auto* cmd = app.add_subcommand("up", "Run a coordinator and a local worker on 127.0.0.1 until Ctrl-C");
  cmd->add_option("--listen", opt->listen, "host:port to listen on")
      ->check([](const std::string& v) { return HostPortError(v); })
      ->capture_default_str();
  cmd->add_option("--db", opt->db_path, "SQLite database file")->capture_default_str();
  cmd->add_option("--slots", opt->slots, "trials this machine runs at once (default: number of cores)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--trial-dir", opt->trial_dir, "per-trial logs and outputs (default: <db dir>/ladder-trials)");
  opt->http = "127.0.0.1:8080";
  cmd->add_option("--http", opt->http, "host:port of the web dashboard (\"\": none)")
      ->check([](const std::string& v) { return v.empty() ? std::string() : HostPortError(v); })
      ->capture_default_str();
  cmd->callback([opt, cmd, &exit_code] {
    opt->http_any_port_if_taken = cmd->count("--http") == 0;  // the default port only: an explicit one is kept
    struct StopFlag {
      std::mutex mu;
      std::condition_variable cv;
      bool stop = false;
    };
    auto flag = std::make_shared<StopFlag>();
    HandleStopSignals([flag](int) {
      std::lock_guard<std::mutex> l(flag->mu);
      flag->stop = true;
      flag->cv.notify_all();
    });
    try {
      LocalStack stack(*opt);
      stack.Start();
      std::error_code ec;
      // The CLI finds the token by itself only as ./ladder.db.token (ResolveToken).
      const bool found = std::filesystem::equivalent(opt->db_path + ".token", "ladder.db.token", ec);
      std::cout << "ladder up: coordinator on " << stack.address() << ", database " << opt->db_path
                << ", local worker registered\n"
                << (found ? "  token in " + opt->db_path + ".token (the CLI in this directory reads it)\n"
                          : "  token in " + opt->db_path + ".token: export LADDER_TOKEN=$(cat " + opt->db_path +
                                ".token) for the CLI\n")
                << "  try: ladder" << (stack.address() == "127.0.0.1:50051" ? "" : " --server " + stack.address())
                << " search start data/demo.yaml --wait      Ctrl-C stops\n";
      if (!stack.dashboard_url().empty()) {
        std::cout << "  web dashboard: " << stack.dashboard_url() << "login?token=" << stack.token()
                  << "   (from a laptop: ssh -L PORT:127.0.0.1:PORT this host)\n";
      }
      std::cout.flush();
      std::unique_lock<std::mutex> l(flag->mu);
      flag->cv.wait(l, [&] { return flag->stop; });
      std::cout << "ladder up: stopping (running trials are terminated)\n";
      l.unlock();
      stack.Stop();
      exit_code = kOk;
    } catch (const std::exception& e) {
      std::cerr << "ladder up: " << e.what() << "\n";
      exit_code = kFailed;
    }
  });
}

}  // namespace ladder::cli
