// ladder search submit: a search as its own Slurm batch job (the coordinator runs inside it, on the database given
// by --db on the shared filesystem), and the Slurm side of `ladder search list` (cli/slurm_job.h).
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/slurm_job.h"
#include "cli/slurm_time.h"
#include "common/executable.h"
#include "common/token.h"
#include "search/spec/spec_reader.h"

namespace ladder::cli {

namespace {

struct SubmitOptions {
  std::string spec_path;
  BatchOptions batch;
  bool dry_run = false;
  bool no_command_check = false;
  bool signal_lead_given = false;
};

// A file-name-safe form of a search's name.
std::string FileSafe(const std::string& name) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ? c : '_';
  return out.empty() ? "search" : out.substr(0, 64);
}

int Submit(const SubmitOptions& o, const GlobalOptions& g) {
  namespace fs = std::filesystem;
  std::string yaml;
  if (!LoadAndValidateSpec(o.spec_path, !o.no_command_check, &yaml, /*quiet=*/true)) return kBadInput;
  const TimeLimitCheck limit = CheckTimeLimit(o.batch.time, o.batch.signal_lead_s, o.signal_lead_given);
  std::cerr << limit.notes;
  if (!limit.ok) {
    std::cerr << "ladder search submit: " << limit.error << "\n";
    return kBadInput;
  }
  const std::string name = search::ParseSpec(yaml, o.spec_path).spec->name;
  std::error_code ec;
  const fs::path db = fs::absolute(g.db.empty() ? "ladder.db" : g.db, ec);
  if (!fs::is_directory(db.parent_path(), ec)) {
    std::cerr << "ladder search submit: --db " << db.string() << ": the directory " << db.parent_path().string()
              << " does not exist (it must be on a filesystem the job's nodes see)\n";
    return kBadInput;
  }
  // The job's files: the spec as submitted (the job resumes exactly this search, whatever happens to the
  // original), the script, the job's output.
  const fs::path dir = db.parent_path() / "ladder-jobs";
  const std::string base = FileSafe(name) + "-" + FileStamp();
  const fs::path spec_copy = dir / (base + ".yaml"), script = dir / (base + ".sbatch");
  BatchOptions b = o.batch;
  b.signal_lead_s = limit.lead_s;
  b.job_name = "ladder-" + FileSafe(name);
  b.output = (dir / (FileSafe(name) + "-%j.out")).string();
  b.workdir = db.parent_path().string();
  const std::string body =
      "# ladder search submit: search '" + name + "' from " + fs::absolute(o.spec_path, ec).string() +
      " (copied to the .yaml beside this script).\n"
      "# The coordinator runs here on the first node, a worker on every node. At the time limit's warning it\n"
      "# checkpoints the running trials, commits, and resubmits this script as a job that resumes the search.\n"
      "exec " + ShellQuote(OwnBinDir() + "/ladder") + " up --slurm --listen 0.0.0.0:0 --db " +
      ShellQuote(db.string()) + " --run " + ShellQuote(spec_copy.string()) + " --resubmit " +
      ShellQuote(script.string()) + "\n";
  const std::string text = BatchScript(b, body);
  if (o.dry_run) {
    if (g.json) {
      std::cout << nlohmann::json{{"script", script.string()}, {"spec", spec_copy.string()}, {"text", text}}.dump()
                << "\n";
    } else {
      std::cout << "# " << script.string() << " (not written: --dry-run)\n" << text;
    }
    return kOk;
  }
  try {
    fs::create_directories(dir);
    WriteFileAtomically(spec_copy.string(), yaml, 0644);
    WriteFileAtomically(script.string(), text, 0755);
  } catch (const std::exception& e) {
    std::cerr << "ladder search submit: " << e.what() << "\n";
    return kFailed;
  }
  std::string error;
  auto job = SubmitBatch(script.string(), {}, &error);
  if (!job) {
    std::cerr << "ladder search submit: " << error << "\n";
    return kFailed;
  }
  JobRecord r{*job, "search", name, script.string(), spec_copy.string(), 0, ""};
  try {
    AppendJobRecord(db.string(), r);
  } catch (const std::exception& e) {
    std::cerr << "ladder search submit: job " << *job << " was submitted, but " << e.what() << "\n";
  }
  if (g.json) {
    std::cout << nlohmann::json{{"job_id", *job}, {"name", name}, {"script", script.string()},
                                {"spec", spec_copy.string()}, {"db", db.string()}}
                     .dump()
              << "\n";
  } else {
    std::cout << "submitted search '" << name << "' as Slurm job " << *job << "\n  script " << script.string()
              << "\n  follow it: ladder --db " << db.string() << " search list\n";
  }
  return kOk;
}

}  // namespace

void SetupSearchSubmit(CLI::App* search, GlobalOptions& g, int& exit_code) {
  auto o = std::make_shared<SubmitOptions>();
  auto* cmd = search->add_subcommand(
      "submit",
      "Run a search as a Slurm batch job (from a login node): its coordinator and database (--db, on the shared "
      "filesystem) live in the job; at the time limit it checkpoints and resubmits itself");
  cmd->add_option("SPEC", o->spec_path, "YAML search spec")->required();
  cmd->add_option("--nodes", o->batch.nodes, "nodes of the job (one worker each)")->required()->check(CLI::Range(1, 100000));
  cmd->add_option("--time", o->batch.time,
                  "the job's time limit (Slurm's --time: MINUTES, H:MM:SS, D-HH:MM; Slurm rounds it up to whole "
                  "minutes)")
      ->required();
  cmd->add_option("--partition", o->batch.partition, "Slurm partition (default: the cluster's)");
  cmd->add_option("--account", o->batch.account, "Slurm account to charge");
  cmd->add_option("--signal-lead", o->batch.signal_lead_s,
                  "seconds before the time limit at which the trials checkpoint and the job resubmits itself "
                  "(shorter than the time limit; the default is halved for a job of 2 minutes or less)")
      ->check(CLI::Range(10, 86400))
      ->capture_default_str();
  cmd->add_flag("--dry-run", o->dry_run, "print the batch script; write and submit nothing");
  cmd->add_flag("--no-command-check", o->no_command_check, "don't check that the trial command exists here");
  cmd->callback([o, cmd, &g, &exit_code] {
    o->signal_lead_given = cmd->count("--signal-lead") > 0;
    exit_code = Submit(*o, g);
  });
}

nlohmann::json SlurmJobsJson(const std::string& db) {
  // Chains: a resubmission continues its previous job; a chain is shown once, by its newest job.
  const auto records = ReadJobRecords(db);
  std::set<std::string> continued;
  std::map<std::string, std::string> first_of;  // job → the first job of its chain
  std::map<std::string, int> runs;
  for (const auto& r : records) {
    if (!r.previous_job_id.empty()) continued.insert(r.previous_job_id);
    const auto it = first_of.find(r.previous_job_id);
    first_of[r.job_id] = it != first_of.end() ? it->second : r.job_id;
    runs[first_of[r.job_id]]++;
  }
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : records) {
    if (continued.count(r.job_id)) continue;
    out.push_back({{"job_id", r.job_id}, {"kind", r.kind}, {"name", r.name}, {"state", SlurmJobState(r.job_id)},
                   {"first_job_id", first_of[r.job_id]}, {"jobs", runs[first_of[r.job_id]]},
                   {"submitted_unix", r.submitted_unix}, {"script", r.script}});
  }
  return out;
}

void PrintSlurmJobs(const nlohmann::json& jobs, std::ostream& out) {
  char line[256];
  std::snprintf(line, sizeof line, "  %-10s  %-6s  %-24s  %-12s  %s\n", "job", "kind", "name", "state", "history");
  out << "Slurm jobs:\n" << line;
  for (const auto& j : jobs) {
    const int n = j["jobs"].get<int>();
    const std::string history =
        n > 1 ? "resubmitted " + std::to_string(n - 1) + "x since job " + j["first_job_id"].get<std::string>() : "";
    std::snprintf(line, sizeof line, "  %-10s  %-6s  %-24s  %-12s  %s\n", j["job_id"].get<std::string>().c_str(),
                  j["kind"].get<std::string>().c_str(), j["name"].get<std::string>().c_str(),
                  j["state"].get<std::string>().c_str(), history.c_str());
    out << line;
  }
}

}  // namespace ladder::cli
