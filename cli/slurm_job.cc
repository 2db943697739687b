#include "cli/slurm_job.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/executable.h"
#include "common/wall_clock.h"

namespace ladder::cli {

std::string JobsFile(const std::string& db_path) { return db_path + ".jobs"; }
std::string ServerFile(const std::string& db_path) { return db_path + ".server"; }

void AppendJobRecord(const std::string& db_path, const JobRecord& r) {
  nlohmann::json j = {{"job_id", r.job_id},   {"kind", r.kind}, {"name", r.name},
                      {"script", r.script},   {"spec", r.spec}, {"submitted_unix", WallNow()}};
  if (!r.previous_job_id.empty()) j["previous_job_id"] = r.previous_job_id;
  const std::string line = j.dump() + "\n";
  // One write(2) of one line with O_APPEND: two writers (a login node and a job) never interleave a record.
  const std::string path = JobsFile(db_path);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  const ssize_t n = ::write(fd, line.data(), line.size());
  const int err = errno;
  ::fsync(fd);
  ::close(fd);
  if (n != static_cast<ssize_t>(line.size())) throw std::runtime_error("cannot write " + path + ": " + std::strerror(err));
}

std::vector<JobRecord> ReadJobRecords(const std::string& db_path) {
  std::vector<JobRecord> out;
  std::ifstream in(JobsFile(db_path));
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("job_id") || !j["job_id"].is_string()) continue;
    JobRecord r;
    r.job_id = j["job_id"];
    r.kind = j.value("kind", "");
    r.name = j.value("name", "");
    r.script = j.value("script", "");
    r.spec = j.value("spec", "");
    r.submitted_unix = j.value("submitted_unix", 0.0);
    r.previous_job_id = j.value("previous_job_id", "");
    out.push_back(std::move(r));
  }
  return out;
}

std::string FileStamp() {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  return stamp;
}

std::string ShellQuote(const std::string& word) {
  std::string q = "'";
  for (char c : word) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string ShellCommandLine(const std::vector<std::string>& words) {
  std::string line;
  for (size_t i = 0; i < words.size(); ++i) {
    line += (i ? " " : "") + (i == 0 || words[i].rfind('-', 0) == 0 ? words[i] : ShellQuote(words[i]));
  }
  return line;
}

std::string BatchScript(const BatchOptions& o, const std::string& body) {
  std::ostringstream s;
  s << "#!/bin/bash\n";
  s << "#SBATCH --job-name=" << o.job_name << "\n";
  s << "#SBATCH --nodes=" << o.nodes << "\n";
  if (!o.time.empty()) s << "#SBATCH --time=" << o.time << "\n";
  if (!o.partition.empty()) s << "#SBATCH --partition=" << o.partition << "\n";
  if (!o.account.empty()) s << "#SBATCH --account=" << o.account << "\n";
  // The whole nodes: every core is a trial slot. A node that fails does not end the job (its trial is requeued on
  // another node). Before the time limit, the batch shell (ladder up) gets SIGUSR1 to checkpoint and resubmit.
  s << "#SBATCH --exclusive\n#SBATCH --no-kill\n";
  s << "#SBATCH --signal=B:USR1@" << o.signal_lead_s << "\n";
  if (!o.output.empty()) s << "#SBATCH --output=" << o.output << "\n#SBATCH --open-mode=append\n";
  if (!o.workdir.empty()) s << "#SBATCH --chdir=" << o.workdir << "\n";
  s << body;
  return s.str();
}

int RunSlurm(const std::vector<std::string>& words, std::string* output) {
  std::string cmd;
  for (const auto& w : words) cmd += (cmd.empty() ? "" : " ") + ShellQuote(w);
  return ShellOutput(cmd + " 2>&1", output);
}

std::optional<std::string> SubmitBatch(const std::string& script, const std::vector<std::string>& extra,
                                       std::string* error) {
  std::vector<std::string> words = {"sbatch", "--parsable"};
  words.insert(words.end(), extra.begin(), extra.end());
  words.push_back(script);
  std::string out;
  const int rc = RunSlurm(words, &out);
  // --parsable: "JOBID" or "JOBID;CLUSTER" on the last line (warnings may come before it).
  std::string last;
  std::istringstream lines(out);
  for (std::string l; std::getline(lines, l);) {
    if (!l.empty()) last = l;
  }
  const std::string id = last.substr(0, last.find(';'));
  if (rc != 0 || id.empty() || id.find_first_not_of("0123456789_") != std::string::npos) {
    *error = rc == -1 ? "cannot run sbatch (is Slurm's client installed?)"
                      : "sbatch failed (exit " + std::to_string(rc) + "): " + out.substr(0, 500);
    return std::nullopt;
  }
  return id;
}

bool SlurmJobPreempted(const std::string& job_id) {
  std::string out;
  if (RunSlurm({"scontrol", "show", "job", job_id}, &out) != 0) return false;
  const auto at = out.find("PreemptTime=");
  return at != std::string::npos && out.compare(at + 12, 4, "None") != 0;
}

std::string SlurmJobState(const std::string& job_id) {
  // A state is one upper-case word (RUNNING, NODE_FAIL); anything else is a message (accounting disabled, ...).
  auto first_word = [](const std::string& text) {
    std::istringstream in(text);
    std::string w;
    in >> w;
    return w.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ_") == std::string::npos ? w : std::string();
  };
  std::string out;
  // -t all: a job that ended is listed too, as long as slurmctld keeps it (MinJobAge).
  if (RunSlurm({"squeue", "-h", "-t", "all", "-j", job_id, "-o", "%T"}, &out) == 0 && !first_word(out).empty()) {
    return first_word(out);
  }
  // -X: the job itself, not its steps; -P: no padding. "CANCELLED by 0" keeps its first word.
  if (RunSlurm({"sacct", "-n", "-X", "-P", "-j", job_id, "-o", "State"}, &out) == 0 && !first_word(out).empty()) {
    return first_word(out);
  }
  return "UNKNOWN";
}

}  // namespace ladder::cli
