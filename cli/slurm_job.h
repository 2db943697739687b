#pragma once
// The batch-job side of ladder under Slurm: what `ladder search submit` and `ladder promote --submit` write and
// submit, what `ladder up --slurm` does at its job's time limit, and how the CLI finds out where a job stands.
//
// Files next to the database (on the shared filesystem the job and the login node both see):
//   <db>.jobs     one JSON object per line for every job submitted for this database (search jobs, their
//                 resubmissions, hero jobs): {"job_id", "kind", "name", "script", "spec", "submitted_unix",
//                 "previous_job_id"}; appended, never rewritten.
//   <db>.server   host:port of the coordinator serving the database while `ladder up` runs (removed when it
//                 stops); the CLI's global --db reads it, with <db>.token.
// Slurm is reached only through its commands (sbatch, squeue, sacct, scontrol), as a user would.
#include <optional>
#include <string>
#include <vector>

namespace ladder::cli {

// One submitted job, as <db>.jobs records it.
struct JobRecord {
  std::string job_id;
  std::string kind;  // "search" (ladder search submit, and its resubmissions) or "hero" (ladder promote --submit)
  std::string name;  // the search's name
  std::string script, spec;
  double submitted_unix = 0;  // set by AppendJobRecord
  std::string previous_job_id;  // a resubmission: the job whose time limit it continues
};

std::string JobsFile(const std::string& db_path);
std::string ServerFile(const std::string& db_path);
// Appends `r`, stamped with the time (submitted_unix).
void AppendJobRecord(const std::string& db_path, const JobRecord& r);
// The local time as YYYYmmdd-HHMMSS, for the names of a submission's files.
std::string FileStamp();
// Every record, oldest first; a line that does not parse is skipped (a record written by a newer ladder).
std::vector<JobRecord> ReadJobRecords(const std::string& db_path);

// What `sbatch` is asked for (ladder search submit, ladder promote --submit).
struct BatchOptions {
  std::string job_name;
  int nodes = 1;
  std::string time;       // Slurm's --time format (e.g. 2:00:00)
  std::string partition;  // "" : the cluster's default
  std::string account;
  int signal_lead_s = 120;  // --signal=B:USR1@this: how long before the time limit ladder starts to checkpoint
  std::string output;       // the job's output file (%j: the job id)
  std::string workdir;
};

// The #SBATCH header of a ladder job script (bash), then `body`.
std::string BatchScript(const BatchOptions& o, const std::string& body);
// Single-quoted for sh.
std::string ShellQuote(const std::string& word);
// A command line for a script: the program and the options (words starting with '-', ladder's own) as they are,
// every other word (paths, addresses, values) single-quoted.
std::string ShellCommandLine(const std::vector<std::string>& words);
// Runs `sbatch --parsable EXTRA... SCRIPT`; returns the job id, or nullopt with *error = what sbatch said.
std::optional<std::string> SubmitBatch(const std::string& script, const std::vector<std::string>& extra,
                                       std::string* error);
// The job's state in Slurm's words (PENDING, RUNNING, COMPLETED, CANCELLED, TIMEOUT, ...): squeue while the job
// is known to slurmctld, then sacct; "UNKNOWN" when neither knows it (no accounting and it left the queue).
std::string SlurmJobState(const std::string& job_id);
// Whether Slurm is preempting the job (`scontrol show job` has a PreemptTime): it signals the job and, at the end of
// the partition's GraceTime, requeues or cancels it as its PreemptMode says.
bool SlurmJobPreempted(const std::string& job_id);
// Runs a Slurm client command given as words (no shell); returns its exit status and output (stdout+stderr).
int RunSlurm(const std::vector<std::string>& words, std::string* output);

}  // namespace ladder::cli
