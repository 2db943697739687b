#include "cli/slurm_workers.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "cli/slurm_job.h"
#include "common/executable.h"

extern char** environ;

namespace ladder::cli {

SlurmAllocation CurrentAllocation() {
  SlurmAllocation a;
  const char* job = std::getenv("SLURM_JOB_ID");
  const char* list = std::getenv("SLURM_JOB_NODELIST");
  if (!list) list = std::getenv("SLURM_NODELIST");
  if (!job || !*job || !list || !*list) {
    throw std::runtime_error("--slurm: not inside a Slurm allocation (SLURM_JOB_ID and SLURM_JOB_NODELIST are not "
                             "set); run it in an sbatch script or under salloc");
  }
  a.job_id = job;
  // The node list is compressed ("n[1-4]"); scontrol expands it as Slurm does. Names are Slurm's (no quoting
  // needed: [A-Za-z0-9._-] and brackets).
  std::string text;
  const int status = ShellOutput("scontrol show hostnames '" + std::string(list) + "' 2>&1", &text);
  if (status == -1) throw std::runtime_error("--slurm: cannot run scontrol");
  if (status != 0) throw std::runtime_error("--slurm: scontrol show hostnames failed: " + text.substr(0, 300));
  std::istringstream in(text);
  for (std::string node; in >> node;) a.nodes.push_back(node);
  if (a.nodes.empty()) throw std::runtime_error("--slurm: the allocation '" + a.job_id + "' lists no nodes");
  return a;
}

std::vector<std::string> WorkerStepCommand(const std::string& server, const std::string& token_file,
                                           const std::string& trial_dir, const std::vector<std::string>& labels) {
  std::vector<std::string> words = {
      "srun", "--overlap", "--ntasks-per-node=1", "--kill-on-bad-exit=0",
      "--no-kill",  // a node that fails takes its worker with it, not the step: the others keep serving
      std::string("--job-name=") + kWorkerStepName, "--mpi=none", OwnBinDir() + "/ladder-worker", "--server", server,
      "--token-file", token_file, "--trial-dir", trial_dir, "--slurm-topology"};
  for (const auto& l : labels) words.insert(words.end(), {"--label", l});
  return words;
}

void SlurmWorkers::Start(const SlurmAllocation& alloc, const std::string& server, const std::string& token_file,
                         const std::string& trial_dir, const std::string& log) {
  job_id_ = alloc.job_id;
  const std::string n = std::to_string(alloc.nodes.size());
  std::vector<std::string> args = WorkerStepCommand(server, token_file, trial_dir);
  args.insert(args.begin() + 1, {"--nodes=" + n, "--ntasks=" + n});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  const int rc = posix_spawnp(&srun_, "srun", &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    srun_ = -1;
    throw std::runtime_error("--slurm: cannot start srun (is Slurm's client installed?)");
  }
}

bool SlurmWorkers::Running() {
  if (srun_ <= 0) return false;
  if (::waitpid(srun_, nullptr, WNOHANG) == srun_) srun_ = -1;
  return srun_ > 0;
}

void SlurmWorkers::Stop() {
  if (!Running()) return;
  // SIGTERM to the workers themselves (scancel --signal signals the step's tasks and leaves the step alone): each
  // stops its trials — they checkpoint —, waits for their exits to be committed, and exits. A SIGTERM to srun would
  // cancel the step instead, and Slurm would SIGKILL the workers KillWait seconds later, their trials with them.
  std::string step, out;
  if (RunSlurm({"squeue", "-h", "-s", "-j", job_id_, "-o", "%i %j"}, &out) == 0) {
    std::istringstream lines(out);
    for (std::string id, name; lines >> id >> name;) {
      if (name == kWorkerStepName) step = id;
    }
  }
  if (step.empty() || RunSlurm({"scancel", "--signal=TERM", step}, &out) != 0) {
    ::kill(srun_, SIGTERM);  // the step is not found: srun ends it (Slurm signals the workers)
  }
  for (int i = 0; i < 300; ++i) {
    if (::waitpid(srun_, nullptr, WNOHANG) == srun_) {
      srun_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ::kill(srun_, SIGKILL);
  ::waitpid(srun_, nullptr, 0);
  srun_ = -1;
}

}  // namespace ladder::cli
