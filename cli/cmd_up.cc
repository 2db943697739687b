// ladder up: a coordinator and one local worker in the foreground (the embedded default); with --slurm, the
// coordinator of a Slurm job whose nodes each run a worker, which checkpoints and resubmits itself at the job's
// time limit (cli/slurm_job.h).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "cli/commands.h"
#include "cli/format.h"
#include "cli/local_stack.h"
#include "cli/slurm_job.h"
#include "cli/slurm_stage.h"
#include "search/spec/spec_reader.h"
#include "cli/slurm_workers.h"
#include "common/address.h"
#include "common/certs.h"
#include "common/tls.h"
#include "common/token.h"
#include "worker/slurm_topology.h"

namespace ladder::cli {

namespace {

struct UpOptions {
  bool slurm = false;
  std::string advertise;
  std::string run_spec;   // --run: the search to run (created once, resumed by later runs) until it ends
  std::string resubmit;   // --resubmit: the batch script to resubmit at the time limit
  bool requeue = false;   // --requeue: scontrol requeue this job at the time limit
};

// The files of a `ladder certs create` directory for one party ("server", "worker", "client").
TlsFiles TlsDirFiles(const std::string& dir, const std::string& who) {
  return {dir + "/" + who + ".crt", dir + "/" + who + ".key", dir + "/ca.crt"};
}

// ladder up --slurm listens where other nodes reach it: unless told --tls-dir or --insecure, it serves mutual TLS
// with certificates of its own in <db>.tls/ (made once, naming this node and --advertise; reused by a resubmitted
// job), and its workers' step gets theirs through LADDER_TLS_* (srun passes the environment on). "" or what failed.
std::string SlurmTls(LocalStackOptions& opt, const std::string& advertise) {
  if (opt.insecure) return "";
  if (opt.tls_dir.empty() && !IsLoopbackAddress(opt.listen)) {
    opt.tls_dir = opt.db_path + ".tls";
    if (!std::filesystem::exists(opt.tls_dir + "/ca.crt")) {
      CertsOptions co;
      co.hosts = DefaultCertHosts();
      if (std::find(co.hosts.begin(), co.hosts.end(), advertise) == co.hosts.end()) co.hosts.push_back(advertise);
      try {
        CreateCertificates(opt.tls_dir, co);
      } catch (const std::exception& e) {
        return std::string("cannot make the TLS certificates in ") + opt.tls_dir + ": " + e.what() +
               " (give --tls-dir DIR from `ladder certs create`, or --insecure)";
      }
    }
  }
  if (opt.tls_dir.empty()) return "";
  const TlsFiles w = TlsDirFiles(std::filesystem::absolute(opt.tls_dir).string(), "worker");
  ::setenv("LADDER_TLS_CA", w.ca.c_str(), 1);
  ::setenv("LADDER_TLS_CERT", w.cert.c_str(), 1);
  ::setenv("LADDER_TLS_KEY", w.key.c_str(), 1);
  return "";
}

// How long the workers' step has to register every node's worker.
constexpr std::chrono::seconds kWorkersRegisterWithin{120};

// Why `ladder up` stops.
enum class StopCause { kSignal, kTimeLimit, kStepEnded, kSearchEnded };

// ladder up --slurm: the workers are one Slurm step over the allocation's nodes; waits until every node's worker
// is UP (or the step ended, or kWorkersRegisterWithin passed). Returns "" or what went wrong.
std::string StartSlurmWorkers(const GlobalOptions& g, const LocalStack& stack, const LocalStackOptions& opt,
                              const SlurmAllocation& alloc, const std::string& advertise, SlurmWorkers& workers) {
  namespace fs = std::filesystem;
  const std::string port = stack.address().substr(stack.address().rfind(':') + 1);
  const auto db_dir = fs::absolute(opt.db_path).parent_path();
  const std::string log = (db_dir / ("ladder-workers-" + alloc.job_id + ".log")).string();
  workers.Start(alloc, advertise + ":" + port, fs::absolute(opt.db_path + ".token").string(),
                opt.trial_dir.empty() ? (db_dir / "ladder-trials").string() : opt.trial_dir, log);
  GlobalOptions local = g;
  local.server = stack.local_address();
  local.token = stack.token();
  local.tls = {};
  local.tls_dir = opt.tls_dir;
  Client client(local);
  for (auto until = std::chrono::steady_clock::now() + kWorkersRegisterWithin;
       std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(std::chrono::milliseconds(200))) {
    if (!workers.Running()) return "the workers' Slurm step ended (see " + log + ")";
    v1::ServerInfoResponse info;
    auto ctx = client.Context(std::chrono::seconds(5));
    if (!client.stub().ServerInfo(ctx.get(), v1::ServerInfoRequest(), &info).ok()) continue;
    size_t up = 0;
    for (const auto& w : info.workers()) up += w.state() == v1::WORKER_UP;
    if (up >= alloc.nodes.size()) return "";
  }
  return "not every node's worker registered within " + std::to_string(kWorkersRegisterWithin.count()) +
         " s (see " + log + ")";
}

// --run SPEC: the search this database already holds for exactly this spec text (a resubmitted job resumes it),
// else a new one. Throws std::runtime_error on failure.
v1::Search StartOrResumeSearch(Client& client, const std::string& spec_path) {
  std::string yaml;
  if (!LoadAndValidateSpec(spec_path, /*check_command=*/false, &yaml, /*quiet=*/true)) {
    throw std::runtime_error("--run " + spec_path + ": the spec is not valid");
  }
  int code = 0;
  v1::ListSearchesResponse listed;
  if (!client.Call(&v1::Ladder::Stub::ListSearches, v1::ListSearchesRequest(), &listed, "up --run", &code)) {
    throw std::runtime_error("--run: the coordinator did not list its searches");
  }
  for (auto it = listed.searches().rbegin(); it != listed.searches().rend(); ++it) {
    v1::GetSearchRequest req;
    req.set_search_id(it->id());
    v1::GetSearchResponse got;
    if (!client.Call(&v1::Ladder::Stub::GetSearch, req, &got, "up --run", &code)) continue;
    if (got.search().spec_yaml() != yaml) continue;
    std::cout << "ladder up: --run " << spec_path << ": resuming search " << it->id() << " '" << it->name() << "' ("
              << StateName(got.search().state()) << ", " << got.search().completed() << " trials done)\n";
    return got.search();
  }
  v1::CreateSearchRequest req;
  req.set_spec_yaml(yaml);
  req.set_spec_path(spec_path);
  v1::CreateSearchResponse created;
  if (!client.Call(&v1::Ladder::Stub::CreateSearch, req, &created, "up --run", &code)) {
    throw std::runtime_error("--run " + spec_path + ": the coordinator refused the search");
  }
  std::cout << "ladder up: --run " << spec_path << ": started search " << created.search().id() << " '"
            << created.search().name() << "'\n";
  return created.search();
}

// The search's state (SEARCH_STATE_UNSPECIFIED when the coordinator does not answer).
v1::SearchState SearchStateOf(Client& client, int64_t id) {
  v1::GetSearchRequest req;
  req.set_search_id(id);
  v1::GetSearchResponse got;
  int code = 0;
  return client.Call(&v1::Ladder::Stub::GetSearch, req, &got, "up", &code, /*quiet=*/true) ? got.search().state()
                                                                                            : v1::SEARCH_STATE_UNSPECIFIED;
}

// At the time limit, after the checkpoints are committed: the job continues as a new job that starts when this one
// ends (--resubmit), or as this job requeued (--requeue). Prints what it did.
void ContinueJob(const UpOptions& up, const LocalStackOptions& opt, const SlurmAllocation& alloc,
                 const std::string& search_name) {
  if (!up.resubmit.empty()) {
    std::string error;
    auto id = SubmitBatch(up.resubmit, {"--dependency=afterany:" + alloc.job_id}, &error);
    if (!id) {
      std::cerr << "ladder up: cannot resubmit " << up.resubmit << ": " << error << "\n";
      return;
    }
    JobRecord r;
    r.job_id = *id;
    r.kind = "search";
    r.name = search_name;
    r.script = up.resubmit;
    r.spec = up.run_spec;
    r.previous_job_id = alloc.job_id;
    try {
      AppendJobRecord(opt.db_path, r);
    } catch (const std::exception& e) {
      std::cerr << "ladder up: " << e.what() << "\n";
    }
    std::cout << "ladder up: resubmitted as Slurm job " << *id << " (it starts when job " << alloc.job_id
              << " ends and resumes the search from " << opt.db_path << ")\n";
  } else if (up.requeue) {
    std::cout << "ladder up: requeueing Slurm job " << alloc.job_id << "\n" << std::flush;
    std::string out;
    if (RunSlurm({"scontrol", "requeue", alloc.job_id}, &out) != 0) {
      std::cerr << "ladder up: scontrol requeue " << alloc.job_id << " failed: " << out << "\n";
    }
  } else {
    std::cout << "ladder up: the job ends here; the next `ladder up --db " << opt.db_path
              << "` resumes the search (--resubmit SCRIPT or --requeue continue it by themselves)\n";
  }
}

// A stop signal, as the signal thread hands it to the main thread.
struct StopFlag {
  std::mutex mu;
  std::condition_variable cv;
  int signal = 0;
};

// What `ladder up` prints once it serves. The admin token itself only on a terminal: a batch job's output file
// (and any file stdout goes to) is kept, often readable by others, while DB.token is the owner's only (0600).
void PrintServing(const LocalStack& stack, const LocalStackOptions& opt, bool slurm, bool run) {
  std::error_code ec;
  const bool terminal = ::isatty(STDOUT_FILENO) == 1;
  const std::string token_file = opt.db_path + ".token";
  // The CLI finds the token by itself only as ./ladder.db.token (ResolveToken), or through --db.
  const bool found = std::filesystem::equivalent(token_file, "ladder.db.token", ec);
  const bool own_tls = opt.tls_dir.empty() || opt.tls_dir == opt.db_path + ".tls";  // found through --db
  const std::string ladder_db = "ladder" + (stack.address() == "127.0.0.1:50051" ? "" : " --db " + opt.db_path) +
                                (own_tls ? "" : " --tls-dir " + opt.tls_dir);
  std::cout << "ladder up: coordinator on " << stack.address() << ", database " << opt.db_path
            << (slurm ? "" : ", local worker registered") << "\n"
            << (found ? "  token in " + token_file + " (the CLI in this directory reads it)\n"
                      : "  token in " + token_file + ": ladder --db " + opt.db_path +
                            " ... finds this coordinator and its token\n")
            << (opt.tls_dir.empty() ? "" : "  mutual TLS with the certificates in " + opt.tls_dir + "\n");
  if (slurm || run) {  // a job: nobody types at it; its results stay readable from the database after it ends
    std::cout << "  follow it: " << ladder_db << " search list | watch ID | trials ID   (after the job too: "
              << "read-only from the database)\n";
    if (!run) std::cout << "  start a search: " << ladder_db << " search start SPEC\n";
  } else {
    std::cout << "  try: " << ladder_db << " search start data/demo.yaml --wait"
              << (terminal ? "      Ctrl-C stops" : "") << "\n";
  }
  if (!stack.dashboard_url().empty()) {
    if (terminal) {
      std::cout << "  web dashboard: " << stack.dashboard_url() << "login?token=" << stack.token();
    } else {
      std::cout << "  web dashboard: " << stack.dashboard_url() << " (log in with the token in " << token_file << ")";
    }
    std::cout << "   (from a laptop: ssh -L PORT:127.0.0.1:PORT this host)\n";
  }
  std::cout.flush();
}

// Until a stop signal, the workers' step ending (under Slurm) or the --run search ending (run_id != 0).
StopCause WaitForStop(StopFlag& flag, SlurmWorkers* workers, Client& client, int64_t run_id,
                      v1::SearchState* run_state) {
  std::unique_lock<std::mutex> l(flag.mu);
  while (!flag.cv.wait_for(l, std::chrono::seconds(1), [&] { return flag.signal != 0; })) {
    if (workers && !workers->Running()) return StopCause::kStepEnded;  // the allocation is ending, or a scancel
    if (run_id != 0) {
      *run_state = SearchStateOf(client, run_id);
      if (*run_state != v1::SEARCH_RUNNING && *run_state != v1::SEARCH_STATE_UNSPECIFIED) return StopCause::kSearchEnded;
    }
  }
  return flag.signal == SIGUSR1 ? StopCause::kTimeLimit : StopCause::kSignal;
}

// `preempted`: slurmctld says it is preempting the job (a SIGUSR1 then is the job's --signal sent at its preemption,
// where the site sets SlurmctldParameters=preempt_send_user_signal, not the time-limit warning).
void SayWhy(StopCause cause, int64_t run_id, v1::SearchState run_state, bool preempted) {
  switch (cause) {
    case StopCause::kTimeLimit:
      std::cout << (preempted ? "ladder up: Slurm is preempting the job and sent its --signal (SIGUSR1): the running "
                                "trials checkpoint and stop, then Slurm requeues the job\n"
                              : "ladder up: Slurm's time-limit warning (SIGUSR1): the running trials checkpoint and "
                                "stop, then the job continues\n");
      break;
    case StopCause::kStepEnded: std::cerr << "ladder up: the workers' Slurm step ended; stopping\n"; break;
    case StopCause::kSearchEnded:
      std::cout << "ladder up: search " << run_id << " ended (" << StateName(run_state) << ")\n";
      break;
    case StopCause::kSignal: std::cout << "ladder up: stopping (running trials checkpoint if they can, and stop)\n"; break;
  }
  std::cout.flush();
}

// What the options leave to the place `ladder up` runs in: the Slurm allocation (its workers, the listen address
// and advertised name, its TLS files) and the checks of the TLS files and of plaintext listeners. 0, or the exit
// code (the reason said).
int SettleUpOptions(LocalStackOptions& opt, UpOptions& up, CLI::App* cmd, std::optional<SlurmAllocation>* alloc) {
  if (up.slurm) {
    try {
      *alloc = CurrentAllocation();
    } catch (const std::exception& e) {
      std::cerr << "ladder up: " << e.what() << "\n";
      return kBadInput;
    }
    opt.local_worker = false;
    opt.registration_window = kWorkersRegisterWithin;  // "no node up can hold it" only once they had their time
    if (cmd->count("--listen") == 0) opt.listen = "0.0.0.0:50051";  // the other nodes' workers connect to it
    if (up.advertise.empty()) up.advertise = worker::SlurmNodeAddress();
    if (up.advertise.empty()) up.advertise = ThisHostname();
    if (std::string err = SlurmTls(opt, up.advertise); !err.empty()) {
      std::cerr << "ladder up: " << err << "\n";
      return kFailed;
    }
  }
  if (!opt.tls_dir.empty()) {
    if (std::string err = TlsFilesError(TlsDirFiles(opt.tls_dir, "server"), /*server=*/true); !err.empty()) {
      std::cerr << "ladder up: --tls-dir " << opt.tls_dir << ": " << err << "\n";
      return kBadInput;
    }
  }
  for (const auto& [listen, what] : {std::pair{opt.listen, "gRPC"}, std::pair{opt.http, "the web dashboard"}}) {
    if (listen.empty()) continue;
    if (std::string err = PlaintextListenError(listen, !opt.tls_dir.empty(), opt.insecure, what); !err.empty()) {
      std::cerr << "ladder up: " << err << " (ladder up: --tls-dir DIR)\n";
      return kBadInput;
    }
  }
  return 0;
}

// After a stop under Slurm (not the step's own end): the coordinator stops the trials (they checkpoint) and
// starts none before the workers go, so that the workers' step is signalled only then: no trial hears of the
// job's end from Slurm first (it would read as a failure), and each one's stop is committed as a preemption.
void PauseForJobEnd(LocalStack& stack, StopCause cause) {
  const int left = stack.PauseAndWait(cause == StopCause::kTimeLimit ? "the Slurm job reaches its time limit"
                                                                     : "the Slurm job is stopping",
                                      std::chrono::seconds(60));
  if (left > 0) std::cerr << "ladder up: " << left << " trial(s) did not stop within 60 s; their workers stop them\n";
}

// The coordinator (and under Slurm a worker on every node) serving until a stop; returns the exit code.
int ServeUntilStopped(const GlobalOptions& g, const LocalStackOptions& opt, UpOptions& up,
                      const std::optional<SlurmAllocation>& alloc, StopFlag& flag) {
  const std::string server_file = ServerFile(opt.db_path);
  std::error_code ec;
  try {
    LocalStack stack(opt);
    stack.Start();
    SlurmWorkers workers;
    if (alloc && !up.run_spec.empty()) {
      // The search's data goes to every node before any worker (and so any trial) starts there.
      std::string yaml;
      if (LoadAndValidateSpec(up.run_spec, /*check_command=*/false, &yaml, /*quiet=*/true)) {
        SbcastStage(search::ParseSpec(yaml, up.run_spec).spec->stage, *alloc);
      }
    }
    if (alloc) {
      if (std::string err = StartSlurmWorkers(g, stack, opt, *alloc, up.advertise, workers); !err.empty()) {
        throw std::runtime_error(err);
      }
      std::cout << "ladder up: Slurm job " << alloc->job_id << ": a worker on each of its " << alloc->nodes.size()
                << " nodes\n";
    }
    const std::string port = stack.address().substr(stack.address().rfind(':') + 1);
    WriteFileAtomically(server_file, (alloc ? up.advertise + ":" + port : stack.address()) + "\n", 0644);
    PrintServing(stack, opt, alloc.has_value(), !up.run_spec.empty());
    GlobalOptions local = g;
    local.server = stack.local_address();
    local.token = stack.token();
    local.tls = {};
    local.tls_dir = opt.tls_dir;
    Client client(local);
    const v1::Search run = up.run_spec.empty() ? v1::Search() : StartOrResumeSearch(client, up.run_spec);
    const int64_t run_id = run.id();
    v1::SearchState run_state = v1::SEARCH_RUNNING;
    const StopCause cause = WaitForStop(flag, alloc ? &workers : nullptr, client, run_id, &run_state);
    SayWhy(cause, run_id, run_state, alloc && cause == StopCause::kTimeLimit && SlurmJobPreempted(alloc->job_id));
    if (alloc && cause != StopCause::kStepEnded) PauseForJobEnd(stack, cause);
    workers.Stop();  // every worker stops its trials; their exits are committed before the workers leave
    stack.Stop();
    std::filesystem::remove(server_file, ec);
    if (alloc && SlurmJobPreempted(alloc->job_id)) {
      // A job that ends by itself during its preemption's GraceTime is done, not requeued: wait for Slurm to take it
      // (requeued, it resumes from the database; cancelled, nothing is lost either).
      std::cout << "ladder up: Slurm is preempting job " << alloc->job_id
                << ": everything is committed; waiting for Slurm to requeue it" << std::endl;
      std::this_thread::sleep_for(std::chrono::hours(1));
    }
    if (cause == StopCause::kTimeLimit && alloc) ContinueJob(up, opt, *alloc, run.name());
    if (cause == StopCause::kSearchEnded) return run_state == v1::SEARCH_COMPLETED ? kOk : kFailed;
    return cause == StopCause::kStepEnded ? kFailed : kOk;
  } catch (const std::exception& e) {
    std::filesystem::remove(server_file, ec);
    std::cerr << "ladder up: " << e.what() << "\n";
    return kFailed;
  }
}

// Everything `ladder up` does once its options are read; returns the exit code.
int RunUp(const GlobalOptions& g, LocalStackOptions& opt, UpOptions& up, CLI::App* cmd) {
  std::optional<SlurmAllocation> alloc;
  if (int code = SettleUpOptions(opt, up, cmd, &alloc); code != 0) return code;
  auto flag = std::make_shared<StopFlag>();
  // Under Slurm, SIGUSR1 is the time-limit warning (--signal=B:USR1@SECONDS): checkpoint and continue the job.
  HandleStopSignals(
      [flag](int sig) {
        std::lock_guard<std::mutex> l(flag->mu);
        flag->signal = sig;
        flag->cv.notify_all();
      },
      up.slurm ? std::vector<int>{SIGUSR1} : std::vector<int>{});
  return ServeUntilStopped(g, opt, up, alloc, *flag);
}

}  // namespace

void SetupUp(CLI::App& app, GlobalOptions& g, int& exit_code) {
  auto opt = std::make_shared<LocalStackOptions>();
  auto up = std::make_shared<UpOptions>();
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
  cmd->add_flag("--slurm", up->slurm,
                "inside a Slurm allocation (sbatch, salloc): no local worker; one ladder-worker per node of the "
                "allocation as a Slurm step, named and labelled (rack, switch) by Slurm; listens on 0.0.0.0 unless "
                "--listen says otherwise. SIGUSR1 (sbatch --signal=B:USR1@SECONDS) is the time-limit warning: the "
                "running trials checkpoint and stop, the database is committed, and the job continues "
                "(--resubmit, --requeue)");
  cmd->add_option("--tls-dir", opt->tls_dir,
                  "serve mutual TLS with the certificates `ladder certs create DIR` made (server.crt, ca.crt; the "
                  "local worker presents worker.crt). --slurm on a non-loopback address makes its own in DB.tls/ "
                  "unless this or --insecure is given");
  cmd->add_flag("--insecure", opt->insecure,
                "allow plaintext on a non-loopback --listen or --http address (refused otherwise)");
  cmd->add_option("--advertise", up->advertise,
                  "--slurm: the host the workers reach this coordinator at (default: this node's NodeAddr in "
                  "Slurm, else its host name)");
  cmd->add_option("--run", up->run_spec,
                  "run this search spec until it ends, then stop: created the first time, resumed from the "
                  "database by later runs (a resubmitted job); exit 0 when it completed")
      ->check(CLI::ExistingFile);
  auto* resubmit = cmd->add_option("--resubmit", up->resubmit,
                                   "--slurm: at the time-limit warning, submit this batch script again as a job "
                                   "that starts when this one ends (sbatch --dependency=afterany:JOB)")
                       ->check(CLI::ExistingFile);
  cmd->add_flag("--requeue", up->requeue,
                "--slurm: at the time-limit warning, requeue this job (scontrol requeue; Slurm holds a requeued "
                "job for its CredExpire, 120 s by default, before it starts again)")
      ->excludes(resubmit);
  cmd->callback([opt, up, cmd, &g, &exit_code] {
    opt->http_any_port_if_taken = cmd->count("--http") == 0;  // the default port only: an explicit one is kept
    if (cmd->count("--db") == 0 && !g.db.empty()) opt->db_path = g.db;  // `ladder --db DB up`
    if (!up->slurm && (!up->resubmit.empty() || up->requeue)) {
      std::cerr << "ladder up: --resubmit and --requeue continue a Slurm job: they need --slurm\n";
      exit_code = kBadInput;
      return;
    }
    try {  // a --db in no directory is the user's input, not a failure to serve
      server::DatabaseLock::CheckDirectory(opt->db_path);
    } catch (const std::exception& e) {
      std::cerr << "ladder up: " << e.what() << "\n";
      exit_code = kBadInput;
      return;
    }
    std::error_code ec;
    if (!up->resubmit.empty()) up->resubmit = std::filesystem::absolute(up->resubmit, ec).string();
    exit_code = RunUp(g, *opt, *up, cmd);
  });
}

}  // namespace ladder::cli
