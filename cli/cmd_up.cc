// ladder up: a coordinator and one local worker in the foreground (the embedded default).
#include <condition_variable>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>

#include "cli/commands.h"
#include "cli/local_stack.h"
#include "cli/slurm_workers.h"
#include "common/address.h"

namespace ladder::cli {

namespace {

// ladder up --slurm: the workers are one Slurm step over the allocation's nodes; waits until every node's worker
// is UP (or the step ended, or 120 s passed). Returns "" or what went wrong.
std::string StartSlurmWorkers(const GlobalOptions& g, const LocalStack& stack, const LocalStackOptions& opt,
                              const SlurmAllocation& alloc, const std::string& advertise, SlurmWorkers& workers) {
  namespace fs = std::filesystem;
  const std::string port = stack.address().substr(stack.address().rfind(':') + 1);
  const auto db_dir = fs::absolute(opt.db_path).parent_path();
  const std::string log = (db_dir / ("ladder-workers-" + alloc.job_id + ".log")).string();
  workers.Start(alloc, advertise + ":" + port, fs::absolute(opt.db_path + ".token").string(),
                opt.trial_dir.empty() ? (db_dir / "ladder-trials").string() : opt.trial_dir, log);
  GlobalOptions local = g;
  local.server = stack.address();
  local.token = stack.token();
  Client client(local);
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
       std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(std::chrono::milliseconds(200))) {
    if (!workers.Running()) return "the workers' Slurm step ended (see " + log + ")";
    v1::ServerInfoResponse info;
    auto ctx = client.Context(std::chrono::seconds(5));
    if (!client.stub().ServerInfo(ctx.get(), v1::ServerInfoRequest(), &info).ok()) continue;
    size_t up = 0;
    for (const auto& w : info.workers()) up += w.state() == v1::WORKER_UP;
    if (up >= alloc.nodes.size()) return "";
  }
  return "not every node's worker registered within 120 s (see " + log + ")";
}

}  // namespace

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
  auto slurm = std::make_shared<bool>(false);
  auto advertise = std::make_shared<std::string>();
  cmd->add_flag("--slurm", *slurm,
                "inside a Slurm allocation (sbatch, salloc): no local worker; one ladder-worker per node of the "
                "allocation as a Slurm step, named and labelled (rack, switch) by Slurm; listens on 0.0.0.0 unless "
                "--listen says otherwise");
  cmd->add_option("--advertise", *advertise,
                  "--slurm: the host the workers reach this coordinator at (default: this host's name)");
  cmd->callback([opt, cmd, slurm, advertise, &g, &exit_code] {
    opt->http_any_port_if_taken = cmd->count("--http") == 0;  // the default port only: an explicit one is kept
    std::optional<SlurmAllocation> alloc;
    if (*slurm) {
      try {
        alloc = CurrentAllocation();
      } catch (const std::exception& e) {
        std::cerr << "ladder up: " << e.what() << "\n";
        exit_code = kBadInput;
        return;
      }
      opt->local_worker = false;
      if (cmd->count("--listen") == 0) opt->listen = "0.0.0.0:50051";  // the other nodes' workers connect to it
      if (advertise->empty()) *advertise = ThisHostname();
    }
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
      SlurmWorkers workers;
      if (alloc) {
        if (std::string err = StartSlurmWorkers(g, stack, *opt, *alloc, *advertise, workers); !err.empty()) {
          throw std::runtime_error(err);
        }
        std::cout << "ladder up: Slurm job " << alloc->job_id << ": a worker on each of its " << alloc->nodes.size()
                  << " nodes\n";
      }
      std::error_code ec;
      // The CLI finds the token by itself only as ./ladder.db.token (ResolveToken).
      const bool found = std::filesystem::equivalent(opt->db_path + ".token", "ladder.db.token", ec);
      std::cout << "ladder up: coordinator on " << stack.address() << ", database " << opt->db_path
                << (alloc ? "" : ", local worker registered") << "\n"
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
      bool step_ended = false;
      while (!flag->cv.wait_for(l, std::chrono::seconds(1), [&] { return flag->stop; })) {
        if (alloc && !workers.Running()) {  // the allocation is ending, or the step was cancelled
          step_ended = true;
          break;
        }
      }
      if (step_ended) std::cerr << "ladder up: the workers' Slurm step ended; stopping\n";
      std::cout << "ladder up: stopping (running trials are terminated)\n";
      l.unlock();
      workers.Stop();
      stack.Stop();
      exit_code = step_ended ? kFailed : kOk;
    } catch (const std::exception& e) {
      std::cerr << "ladder up: " << e.what() << "\n";
      exit_code = kFailed;
    }
  });
}

}  // namespace ladder::cli
