// ladder-worker: the per-node agent. Registers this node with the coordinator and runs the trials it assigns.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "common/address.h"
#include "common/log.h"
#include "common/tls.h"
#include "common/token.h"
#include "worker/slurm_topology.h"
#include "worker/worker.h"

namespace {

// The command line, before the environment and Slurm fill in what it leaves out.
struct Flags {
  ladder::worker::WorkerOptions opt;
  std::string token_file;
  std::vector<std::string> labels;
  bool slurm_topology = false;
  bool cold_starts = false;
};

void AddFlags(CLI::App& app, Flags* f) {
  ladder::worker::WorkerOptions& opt = f->opt;
  app.add_option("--server", opt.server, "coordinator address host:port")
      ->check([](const std::string& v) { return ladder::HostPortError(v); })
      ->capture_default_str();
  app.add_option("--token-file", f->token_file, "file holding the coordinator's token (or set LADDER_TOKEN)");
  app.add_option("--tls-ca", opt.tls.ca,
                 "PEM CA certificate that signed the coordinator's (TLS; ladder certs create DIR: DIR/ca.crt); env "
                 "LADDER_TLS_CA");
  app.add_option("--tls-cert", opt.tls.cert,
                 "PEM certificate this worker presents (mutual TLS; DIR/worker.crt); env LADDER_TLS_CERT");
  app.add_option("--tls-key", opt.tls.key, "its PEM private key (DIR/worker.key); env LADDER_TLS_KEY");
  app.add_option("--node-id", opt.node_id, "this node's name (default: hostname)");
  app.add_option("--slots", opt.slots, "ranks this node runs at once (default: number of cores)")
      ->check(CLI::Range(1, 4096));
  app.add_option("--gpus", opt.gpus, "GPUs on this node (default: count /dev/nvidiaN)")->check(CLI::Range(0, 1024));
  app.add_option("--address", opt.address,
                 "where the other nodes of a multi-node trial reach this one (MASTER_ADDR, mpirun --host); "
                 "default: under Slurm the node's NodeAddr, else the hostname");
  app.add_option("--label", f->labels,
                 "label KEY=VALUE (repeatable): topology (rack=r12, switch=s1), or pool=NAME: this node serves only "
                 "searches with resources.pool NAME, and the worker exits 0 when none is left running (a hero run's "
                 "own Slurm job)");
  app.add_option("--trial-dir", opt.trial_dir, "directory for per-trial logs and outputs")->capture_default_str();
  app.add_flag("--slurm-topology", f->slurm_topology,
               "label this node rack=<its leaf switch> switch=<the switch above> from `scontrol show topology` "
               "(ladder up --slurm starts workers with it)");
  app.add_flag("--cold-starts", f->cold_starts,
               "start every ladder-train rank as a new process (default: fork it from a warm ladder-train --zygote, "
               "which saves LibTorch's start-up, about 0.5 s; any other command always starts cold); env "
               "LADDER_COLD_STARTS=1");
  app.footer("Under Slurm (SLURMD_NODENAME set) the node id defaults to Slurm's node name. SIGTERM and SIGUSR1 stop "
             "the worker: its trials get SIGTERM (ladder-train saves its checkpoint) and go back to the queue.");
}

// The options from the flags, the environment (LADDER_COLD_STARTS, LADDER_TLS_*) and Slurm (the node's name,
// address and topology): 0, or the exit status after saying why not.
int CompleteOptions(Flags& f) {
  ladder::worker::WorkerOptions& opt = f.opt;
  if (const char* c = std::getenv("LADDER_COLD_STARTS"); c && *c && std::string(c) != "0") f.cold_starts = true;
  opt.warm_starts = !f.cold_starts;
  ladder::TlsFromEnvironment(&opt.tls);
  if (std::string err = ladder::TlsFilesError(opt.tls, /*server=*/false); !err.empty()) {
    std::cerr << "ladder-worker: " << err << "\n";
    return 2;
  }
  for (const auto& l : f.labels) {
    auto eq = l.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "ladder-worker: --label '" << l << "': expected KEY=VALUE\n";
      return 2;
    }
    opt.labels[l.substr(0, eq)] = l.substr(eq + 1);
  }
  if (opt.node_id.empty()) {
    // Slurm's name for this node (what --nodelist and scontrol call it) under Slurm, else the host name.
    const char* slurm_node = std::getenv("SLURMD_NODENAME");
    opt.node_id = slurm_node && *slurm_node ? slurm_node : ladder::ThisHostname();
  }
  // Under Slurm, peers reach this node where Slurm does (its NodeAddr), which need not be what its name resolves to.
  if (opt.address.empty() && std::getenv("SLURMD_NODENAME")) opt.address = ladder::worker::SlurmNodeAddress();
  if (f.slurm_topology) {
    std::string note;
    const std::string err = ladder::worker::AddSlurmTopologyLabels(opt.node_id, &opt.labels, &note);
    if (!err.empty()) {
      std::cerr << "ladder-worker: --slurm-topology: " << err << "\n";
      return 1;
    }
    ladder::LogInfo("worker", note);
  }
  return 0;
}

// Runs the worker until a stop signal (SIGINT, SIGTERM, SIGUSR1), the coordinator's refusal of its token or
// certificate, or its release: the exit status.
int RunUntilStopped(ladder::worker::WorkerOptions opt, const std::string& token_file) {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGUSR1);  // Slurm's warning before a time limit (--signal=USR1@T): stop as on SIGTERM
  // The worker's own, raised by its threads: the coordinator refused its token; the coordinator released it.
  const int kRefused = SIGRTMIN, kReleased = SIGRTMIN + 1;
  sigaddset(&stop_signals, kRefused);
  sigaddset(&stop_signals, kReleased);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  // The refusal's reason, kept for the exit message (set by the session thread before the signal).
  static std::string refusal;
  opt.on_refused = [kRefused](const std::string& why) {
    refusal = why;
    ::kill(::getpid(), kRefused);
  };
  opt.on_released = [kReleased](const std::string&) { ::kill(::getpid(), kReleased); };
  try {
    if (const char* t = std::getenv("LADDER_TOKEN")) opt.token = t;
    if (!token_file.empty()) {
      auto t = ladder::ReadTokenFile(token_file);
      if (!t) throw std::runtime_error("token file '" + token_file + "' does not exist");
      opt.token = *t;
    }
    ladder::worker::Worker worker(opt);
    worker.Start();
    int sig = 0;
    sigwait(&stop_signals, &sig);
    if (sig == kReleased) {
      ladder::LogInfo("worker", "released: the search this worker's pool served has ended; exiting");
      worker.Stop();
      return 0;
    }
    if (sig == kRefused) {
      worker.Stop();
      std::cerr << "ladder-worker: the coordinator at " << opt.server << " refused this worker: " << refusal << "\n";
      if (refusal.rfind("the TLS handshake with", 0) != 0) {  // a token's refusal (tls_probe.h starts so)
        std::cerr << "  (pass the server's token with --token-file <db>.token, a worker token from `ladder tokens "
                     "create --role worker`, or LADDER_TOKEN)\n";
      }
      return 5;  // as the ladder CLI for a refused token
    }
    ladder::LogInfo("worker", "stopping: terminating running trials");
    worker.Stop();
  } catch (const std::exception& e) {
    std::cerr << "ladder-worker: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ladder::SetLogLevelFromEnv();
  CLI::App app{"ladder-worker: runs trials on this node for a ladder coordinator"};
  app.set_version_flag("--version", std::string("ladder ") + LADDER_VERSION);
  Flags flags;
  AddFlags(app, &flags);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help: 0; a usage error: 2, as the ladder CLI
  }
  if (int status = CompleteOptions(flags); status != 0) return status;
  return RunUntilStopped(std::move(flags.opt), flags.token_file);
}
