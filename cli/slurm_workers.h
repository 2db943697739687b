#pragma once
// ladder up --slurm: inside a Slurm allocation, one ladder-worker per node of the allocation, started as one
// Slurm step (`srun --overlap --ntasks-per-node=1`), each named by Slurm's node name and labelled with its leaf
// switch (rack) and the switch above it from `scontrol show topology` (ladder-worker --slurm-topology).
#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace ladder::cli {

inline constexpr const char* kWorkerStepName = "ladder-workers";

struct SlurmAllocation {
  std::string job_id;
  std::vector<std::string> nodes;  // `scontrol show hostnames $SLURM_JOB_NODELIST`
};

// The Slurm step of ladder's workers, one per node of the job (srun with everything but the node count): each
// worker connects to `server` with the token in `token_file`, keeps its trials' directories under `trial_dir`, is
// named and labelled by Slurm, plus `labels` (KEY=VALUE). ladder up --slurm starts it; a hero job's script runs it.
std::vector<std::string> WorkerStepCommand(const std::string& server, const std::string& token_file,
                                           const std::string& trial_dir, const std::vector<std::string>& labels = {});

// The allocation this process runs in; throws std::runtime_error saying what is missing (not inside one, or
// scontrol failed).
SlurmAllocation CurrentAllocation();

class SlurmWorkers {
 public:
  ~SlurmWorkers() { Stop(); }
  // Starts the step: workers connect to `server` with the token in `token_file`; their trials' directories are
  // under `trial_dir` (on every node: a shared path is fine, each trial has its own). Output goes to `log`.
  void Start(const SlurmAllocation& alloc, const std::string& server, const std::string& token_file,
             const std::string& trial_dir, const std::string& log);
  // True while the step runs.
  bool Running();
  // Stops the step: SIGTERM to every worker (they stop their trials, which checkpoint), then waits for it to end.
  void Stop();

 private:
  pid_t srun_ = -1;
  std::string job_id_;
};

}  // namespace ladder::cli
