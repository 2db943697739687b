#include "cli/hero_job.h"

#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/format.h"
#include "cli/slurm_workers.h"
#include "common/tls.h"
#include "common/token.h"

namespace ladder::cli {

namespace {

// The job's script: the workers as one step with the pool label; at the time limit's warning they stop (the hero
// run checkpoints and waits, PENDING, for its pool's nodes: `sbatch SCRIPT` brings them back).
std::string HeroScriptBody(const std::string& server, const std::string& token_file, const std::string& trial_dir,
                           const std::string& pool, const std::string& script, int64_t source, const TlsFiles& tls) {
  const std::string step = ShellCommandLine(WorkerStepCommand(server, token_file, trial_dir, {"pool=" + pool}));
  std::string tls_env;
  for (const auto& [name, path] : {std::pair{"LADDER_TLS_CA", tls.ca}, std::pair{"LADDER_TLS_CERT", tls.cert},
                                   std::pair{"LADDER_TLS_KEY", tls.key}}) {
    if (!path.empty()) tls_env += std::string("export ") + name + "=" + ShellCommandLine({path}) + "\n";
  }
  return "# ladder promote --submit: the hero run planned from search " + std::to_string(source) +
         ". Its trial runs on this job's nodes\n# only (pool " + pool + ") and reports to the coordinator at " +
         server + "; the job ends when the hero run's search does.\n"
         "# At the time limit's warning the run checkpoints and waits: `sbatch " + script + "` continues it.\n"
         "trap 'echo \"ladder: time-limit warning: the hero run checkpoints and stops; sbatch " + script +
         " continues it\"; scancel --signal=TERM \"$SLURM_JOB_ID.0\"' USR1\n" +
         step + " &\npid=$!\n# wait returns early when the trap runs: wait again until the workers are gone.\n"
         "while kill -0 $pid 2>/dev/null; do wait $pid; done\nwait $pid\n";
}

// The TLS files the hero job's workers present: the CLI's own, with a `ladder certs create` directory's worker
// certificate in place of its client one; absolute, for the job's working directory.
TlsFiles WorkerTls(const GlobalOptions& g) {
  namespace fs = std::filesystem;
  TlsFiles t = ResolveTls(g);
  std::error_code ec;
  if (!t.cert.empty() && fs::path(t.cert).filename() == "client.crt") {
    const fs::path dir = fs::path(t.cert).parent_path();
    if (fs::exists(dir / "worker.crt", ec) && fs::exists(dir / "worker.key", ec)) {
      t.cert = (dir / "worker.crt").string();
      t.key = (dir / "worker.key").string();
    }
  }
  for (std::string* p : {&t.ca, &t.cert, &t.key}) {
    if (!p->empty()) *p = fs::absolute(*p, ec).string();
  }
  return t;
}

// The job's files: a worker token of its own for its workers (they can only speak the worker protocol, named by
// the pool) and the script, each written atomically. kOk, or the exit code (the reason said).
int WriteJobFiles(Client& client, const std::string& pool, const std::filesystem::path& dir,
                  const std::filesystem::path& token_file, const std::filesystem::path& script,
                  const std::string& text) {
  namespace fs = std::filesystem;
  v1::CreateTokenRequest token_req;
  token_req.set_role(v1::TOKEN_ROLE_WORKER);
  token_req.set_name(pool);
  v1::CreateTokenResponse worker_token;
  int token_code = kOk;
  if (!client.Call(&v1::Ladder::Stub::CreateToken, token_req, &worker_token, "promote (a worker token for the job)",
                   &token_code)) {
    return token_code;
  }
  try {
    fs::create_directories(dir);
    WriteFileAtomically(token_file.string(), worker_token.secret() + "\n", 0600);
    WriteFileAtomically(script.string(), text, 0755);
  } catch (const std::exception& e) {
    std::cerr << "ladder promote: " << e.what() << "\n";
    return kFailed;
  }
  return kOk;
}

}  // namespace

int SubmitHeroJob(Client& client, const GlobalOptions& g, const HeroJobOptions& o, int64_t source_search,
                  const std::function<std::string(const std::string& pool)>& spec_for_pool,
                  v1::CreateSearchRequest request) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string server = o.advertise.empty() ? client.server() : o.advertise;
  if (IsLoopbackAddress(server)) {
    std::cerr << "ladder promote: note: the hero job's workers will connect to " << server
              << ", a loopback address: right only when the job's nodes are this host (pass --advertise HOST:PORT, "
                 "the coordinator's address as the compute nodes reach it)\n";
  }
  const std::string pool = "hero-" + std::to_string(source_search) + "-" + FileStamp();
  const fs::path dir = fs::absolute(g.db.empty() ? fs::path("ladder-jobs") : fs::path(g.db).parent_path() / "ladder-jobs", ec);
  const fs::path script = dir / (pool + ".sbatch"), token_file = dir / (pool + ".token");
  BatchOptions b = o.batch;
  b.job_name = "ladder-" + pool;
  b.output = (dir / (pool + "-%j.out")).string();
  b.workdir = dir.string();
  const std::string text = BatchScript(b, HeroScriptBody(server, token_file.string(), (dir / "ladder-trials").string(),
                                                         pool, script.string(), source_search, WorkerTls(g)));
  if (o.dry_run) {
    std::cout << "# " << script.string() << " (not written: --dry-run)\n" << text;
    return kOk;
  }
  if (int code = WriteJobFiles(client, pool, dir, token_file, script, text); code != kOk) return code;
  std::string error;
  auto job = SubmitBatch(script.string(), {"--hold"}, &error);
  if (!job) {
    std::cerr << "ladder promote: " << error << "\n";
    return kFailed;
  }
  request.set_spec_yaml(spec_for_pool(pool));
  request.set_slurm_job_id(*job);
  v1::CreateSearchResponse created;
  int code = kOk;
  if (!client.Call(&v1::Ladder::Stub::CreateSearch, request, &created, "promote", &code)) {
    std::string out;
    RunSlurm({"scancel", *job}, &out);
    std::cerr << "ladder promote: Slurm job " << *job << " cancelled: its hero search could not be created\n";
    return code;
  }
  std::string out;
  if (RunSlurm({"scontrol", "release", *job}, &out) != 0) {
    std::cerr << "ladder promote: scontrol release " << *job << " failed (" << out << "); release it by hand\n";
  }
  if (!g.db.empty()) {
    JobRecord r{*job, "hero", created.search().name(), script.string(), "", 0, ""};
    try {
      AppendJobRecord(g.db, r);
    } catch (const std::exception& e) {
      std::cerr << "ladder promote: " << e.what() << "\n";
    }
  }
  if (g.json) {
    std::cout << nlohmann::json{{"search_id", source_search},
                                {"hero_search_id", created.search().id()},
                                {"slurm_job_id", *job},
                                {"pool", pool},
                                {"script", script.string()}}
                     .dump()
              << "\n";
  } else {
    std::cout << "hero run submitted as Slurm job " << *job << " (" << b.nodes << " node(s)): search "
              << created.search().id() << " '" << created.search().name() << "', on the job's nodes only (pool " << pool
              << ")\n  script " << script.string() << "\n  follow it: ladder search show " << created.search().id()
              << "\n";
  }
  return kOk;
}

}  // namespace ladder::cli
