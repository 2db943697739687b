// ladder-server: the coordinator as its own process (ladder up runs it in-process with a worker).
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>

#include "common/address.h"
#include "common/duration_text.h"
#include "common/log.h"
#include "common/tls.h"
#include "common/token.h"
#include "search/core/command_template.h"
#include "server/server.h"

namespace {

// ladder-server's command line.
struct Flags {
  ladder::server::ServerOptions opt;
  std::string token_file;
  bool no_token = false;
  int heartbeat_timeout_ms = static_cast<int>(ladder::server::kDefaultHeartbeatTimeout.count());
  int db_lease_timeout_ms = static_cast<int>(ladder::store::kDefaultDbLeaseTimeout.count());
  int db_lease_wait_ms = 0;
  int ack_delay_ms = static_cast<int>(ladder::server::kDefaultAckDelay.count());
  std::string mpirun;
  std::string session_idle = ladder::FormatDurationSeconds(ladder::server::kDefaultSessionIdle.count());
  std::string session_lifetime = ladder::FormatDurationSeconds(ladder::server::kDefaultSessionLifetime.count());
};

// Where it serves and from which database, and who may call it.
void AddServingFlags(CLI::App* app, Flags* f) {
  app->add_option("--listen", f->opt.listen, "host:port to listen on (port 0: any free port)")
      ->check([](const std::string& v) { return ladder::HostPortError(v); })
      ->capture_default_str();
  app->add_option("--db", f->opt.db_path, "SQLite database file")->capture_default_str();
  app->add_option("--token-file", f->token_file,
                  "file holding the access token (created when absent); default <db>.token");
  app->add_flag("--no-token", f->no_token, "accept state-changing calls without a token (only on a trusted host)");
  app->add_flag("--read-only", f->opt.read_only,
                "serve the database read-only (e.g. a finished Slurm job's results, from a login node): the read "
                "calls and the dashboard answer from it; every call that would change state is refused, no worker "
                "is accepted, no trial runs, and nothing next to the database is written or locked (the token is "
                "read from --token-file, never created)");
}

// The coordinator's leases, pacing, checkpoints and rendezvous ports.
void AddCoordinatorFlags(CLI::App* app, Flags* f) {
  app->add_option("--heartbeat-timeout-ms", f->heartbeat_timeout_ms,
                  "worker lease: a worker silent this long is down")
      ->check(CLI::Range(100, 3600000))
      ->capture_default_str();
  app->add_option("--db-lease-timeout-ms", f->db_lease_timeout_ms,
                  "the coordinator's lease on its database: a coordinator on another host may take the database "
                  "over only after this long without this one's heartbeat (file locks on a parallel filesystem may "
                  "be node-local)")
      ->check(CLI::Range(1000, 3600000))
      ->capture_default_str();
  app->add_option("--db-lease-wait-ms", f->db_lease_wait_ms,
                  "at start, wait this long for another coordinator's lease on the database to be released or "
                  "expire (0: refused at once)")
      ->check(CLI::Range(0, 3600000))
      ->capture_default_str();
  app->add_option("--heartbeats-per-second", f->opt.coordinator.heartbeats_per_second,
                  "fleet-wide heartbeats to ask for: a larger fleet is told a longer interval (and leases grow with it)")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app->add_option("--starts-per-commit", f->opt.coordinator.starts_per_commit,
                  "a scheduling pass commits and sends its starts every this many launches (0: at its end only)")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  app->add_option("--starts-in-flight", f->opt.coordinator.starts_in_flight,
                  "trials whose start is sent but not yet heard of: past this many a pass places no more until half "
                  "are (0: no bound)")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  app->add_option("--ack-delay-ms", f->ack_delay_ms,
                  "how long a worker's acknowledgements of metric points may wait to leave together (exits' leave "
                  "at once)")
      ->check(CLI::Range(0, 60000))
      ->capture_default_str();
  app->add_option("--registrations-per-second", f->opt.coordinator.registrations_per_second,
                  "registrations admitted per second; past it a worker is told to retry later (0: no bound)")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  app->add_option("--checkpoint-dir", f->opt.coordinator.checkpoint_root,
                  "root of the per-trial checkpoint directories (LADDER_CHECKPOINT_DIR, {checkpoint_dir}); on "
                  "storage every worker sees (default: <db>.checkpoints)");
  app->add_option("--quarantine-after", f->opt.coordinator.quarantine_after,
                  "quarantine a node lost this many times within 10 minutes while running trials (0: never)")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  app->add_option("--rendezvous-port-base", f->opt.coordinator.rendezvous_port_base,
                  "multi-rank trials rendezvous at MASTER_PORT = this + trial id % --rendezvous-port-span on their "
                  "first node (another port of the range when that one is taken); give coordinators that share nodes "
                  "disjoint ranges, below the ephemeral ports (/proc/sys/net/ipv4/ip_local_port_range)")
      ->check(CLI::Range(1024, 65535))
      ->capture_default_str();
  app->add_option("--rendezvous-port-span", f->opt.coordinator.rendezvous_port_span,
                  "how many rendezvous ports from --rendezvous-port-base")
      ->check(CLI::Range(1, 64511))
      ->capture_default_str();
}

// The web dashboard and its logins; TLS for gRPC and the dashboard.
void AddDashboardAndTlsFlags(CLI::App* app, Flags* f) {
  app->add_option("--http", f->opt.http_listen,
                  "host:port of the web dashboard (e.g. 127.0.0.1:8080; from a laptop: ssh -L 8080:127.0.0.1:8080 "
                  "LOGIN_NODE); off by default")
      ->check([](const std::string& v) { return ladder::HostPortError(v); });
  app->add_option("--session-idle", f->session_idle,
                  "a dashboard login ends after this long without a request (s, m, h or d: 30m, 8h)")
      ->check([](const std::string& v) { return ladder::DurationTextError(v); })
      ->capture_default_str();
  app->add_option("--session-lifetime", f->session_lifetime,
                  "a dashboard login ends this long after it was made, however it is used (s, m, h or d)")
      ->check([](const std::string& v) { return ladder::DurationTextError(v); })
      ->capture_default_str();
  app->add_option("--tls-cert", f->opt.tls.cert,
                  "PEM certificate to serve TLS with, on gRPC and the dashboard (ladder certs create DIR makes "
                  "DIR/server.crt); env LADDER_TLS_CERT");
  app->add_option("--tls-key", f->opt.tls.key, "its PEM private key (DIR/server.key); env LADDER_TLS_KEY");
  app->add_option("--tls-ca", f->opt.tls.ca,
                  "PEM CA certificate: every gRPC client (workers, the CLI) must present a certificate it signed "
                  "(mutual TLS; DIR/ca.crt); env LADDER_TLS_CA");
  app->add_flag("--insecure", f->opt.insecure,
                "allow plaintext on a non-loopback --listen or --http address (refused otherwise: tokens and trials "
                "would cross the network readable by anyone on it)");
}

// In --help's order.
void AddFlags(CLI::App* app, Flags* f) {
  AddServingFlags(app, f);
  AddCoordinatorFlags(app, f);
  AddDashboardAndTlsFlags(app, f);
  app->add_option("--mpirun", f->mpirun,
                  "the command that starts an MPI trial (resources.launcher: mpirun), split into words; the "
                  "coordinator appends -np, --host, -x and the trial's command")
      ->default_str("mpirun");
}

// What CLI11 cannot check alone; fills the options derived from the flags. 0, or 2 (a usage error, said).
int CheckFlags(Flags* f) {
  try {
    ladder::server::DatabaseLock::CheckDirectory(f->opt.db_path);  // bad input: exit 2, as ladder up
  } catch (const std::exception& e) {
    std::cerr << "ladder-server: " << e.what() << "\n";
    return 2;
  }
  ladder::TlsFromEnvironment(&f->opt.tls);
  if (std::string err = ladder::TlsFilesError(f->opt.tls, /*server=*/true); !err.empty()) {
    std::cerr << "ladder-server: " << err << "\n";
    return 2;
  }
  for (const auto& [listen, what] : {std::pair{f->opt.listen, "gRPC"}, std::pair{f->opt.http_listen, "the web dashboard"}}) {
    if (listen.empty()) continue;
    if (std::string err = ladder::PlaintextListenError(listen, !f->opt.tls.cert.empty(), f->opt.insecure, what);
        !err.empty()) {
      std::cerr << "ladder-server: " << err << "\n";
      return 2;
    }
  }
  if (f->opt.coordinator.rendezvous_port_base + f->opt.coordinator.rendezvous_port_span - 1 > 65535) {
    std::cerr << "ladder-server: --rendezvous-port-base " << f->opt.coordinator.rendezvous_port_base
              << " + --rendezvous-port-span " << f->opt.coordinator.rendezvous_port_span << " goes past port 65535\n";
    return 2;
  }
  if (!f->mpirun.empty()) {
    std::string err;
    auto words = ladder::search::SplitCommandLine(f->mpirun, &err);
    if (!err.empty() || words.empty()) {
      std::cerr << "ladder-server: --mpirun '" << f->mpirun << "': " << (err.empty() ? "empty" : err) << "\n";
      return 2;
    }
    f->opt.coordinator.mpirun = std::move(words);
  }
  f->opt.http_sessions.idle = std::chrono::seconds(*ladder::ParseDurationSeconds(f->session_idle));
  f->opt.http_sessions.lifetime = std::chrono::seconds(*ladder::ParseDurationSeconds(f->session_lifetime));
  f->opt.coordinator.heartbeat_timeout = std::chrono::milliseconds(f->heartbeat_timeout_ms);
  f->opt.db_lease_timeout = std::chrono::milliseconds(f->db_lease_timeout_ms);
  f->opt.db_lease_wait = std::chrono::milliseconds(f->db_lease_wait_ms);
  f->opt.coordinator.ack_delay = std::chrono::milliseconds(f->ack_delay_ms);
  f->opt.coordinator.heartbeat_interval =
      std::min(ladder::server::kDefaultHeartbeatInterval, f->opt.coordinator.heartbeat_timeout / 3);
  return 0;
}

// Starts the server and waits for SIGINT/SIGTERM (exit 0) or its database's failure (exit 1).
int Serve(Flags& f) {
  // Block the stop signals before any thread starts; the main thread waits for them below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGUSR1);  // the coordinator's own: its database failed
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  auto fatal_what = std::make_shared<std::pair<std::mutex, std::string>>();
  f.opt.coordinator.on_fatal = [fatal_what](const std::string& what) {
    {
      std::lock_guard<std::mutex> g(fatal_what->first);
      fatal_what->second = what;
    }
    ::kill(::getpid(), SIGUSR1);
  };

  const std::string token_path = f.token_file.empty() ? f.opt.db_path + ".token" : f.token_file;
  std::error_code ec;
  const bool token_existed = f.no_token || std::filesystem::exists(token_path, ec);
  try {
    if (!f.no_token && f.opt.read_only) {
      auto token = ladder::ReadTokenFile(token_path);
      if (!token) {
        throw std::runtime_error("--read-only: no token file " + token_path + " (the coordinator that served the "
                                 "database made it; a read-only server writes nothing): pass --token-file FILE, or "
                                 "--no-token to serve the reads to anyone who reaches " + f.opt.listen);
      }
      f.opt.token = *token;
    } else if (!f.no_token) {
      f.opt.token = ladder::EnsureTokenFile(token_path);
    }
    ladder::server::Server server(f.opt);
    try {
      server.Start();
    } catch (...) {
      if (!token_existed) std::filesystem::remove(token_path, ec);  // a failed start leaves no new files
      throw;
    }
    std::printf("ladder-server listening on %s%s (database %s%s)\n", server.address().c_str(),
                f.opt.tls.cert.empty() ? "" : f.opt.tls.ca.empty() ? " with TLS" : " with mutual TLS",
                f.opt.db_path.c_str(), f.opt.read_only ? ", read-only" : "");
    if (!server.dashboard_url().empty()) {
      std::printf("web dashboard: %s (log in with the token in %s)\n", server.dashboard_url().c_str(),
                  token_path.c_str());
    }
    std::fflush(stdout);
    int sig = 0;
    sigwait(&stop_signals, &sig);
    if (sig == SIGUSR1) {
      server.Stop();
      std::lock_guard<std::mutex> g(fatal_what->first);
      std::cerr << "ladder-server: the database " << f.opt.db_path << " failed: " << fatal_what->second
                << "; stopped. Restart it: it recovers from what was committed.\n";
      return 1;
    }
    ladder::LogInfo("server", std::string("stopping on ") + (sig == SIGINT ? "SIGINT" : "SIGTERM"));
    server.Stop();
  } catch (const std::exception& e) {
    std::cerr << "ladder-server: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ladder::SetLogLevelFromEnv();
  CLI::App app{"ladder-server: the ladder coordinator (gRPC API, SQLite store, scheduler)"};
  app.set_version_flag("--version", std::string("ladder ") + LADDER_VERSION);
  Flags flags;
  AddFlags(&app, &flags);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help: 0; a usage error: 2, as the ladder CLI
  }
  if (int rc = CheckFlags(&flags); rc != 0) return rc;
  return Serve(flags);
}
