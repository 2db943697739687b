#pragma once
// Leftover trial processes of an earlier worker. A trial's first process dies with its worker (PR_SET_PDEATHSIG),
// but what it started does not: `sh -c "python train.py"` leaves python running, reparented to init, when the
// worker is killed -9 — an orphan that goes on writing to the trial's checkpoint directory while the trial runs
// again elsewhere. Every rank a worker starts carries LADDER_TRIAL_DIR=<its trial dir>/trial-<id> and
// LADDER_NODE_ID=<its node id> in its environment (inherited by what it starts), so a worker starting as the same
// node on the same trial directory finds and kills them. A rank in a container also carries
// LADDER_HOST_TRIAL_DIR=<the same> (inside Charliecloud, LADDER_TRIAL_DIR is the bind's guest path:
// common/container_trial_dir.h), which counts as well. Both must match: the workers of several nodes may share
// one process table (the tests' local Slurm cluster) and one trial directory path.
#include <string>
#include <vector>

namespace ladder::worker {

// SIGKILLs every process (other than this one) whose environment holds LADDER_NODE_ID=`node_id` and LADDER_TRIAL_DIR
// or LADDER_HOST_TRIAL_DIR under `trial_dir` (as the worker sets it: std::filesystem::absolute(trial_dir) +
// "/trial-..."); returns "pid N (trial-T)" for each one killed. Processes whose environment cannot be read
// (another user's) are left alone.
std::vector<std::string> KillLeftoverTrialProcesses(const std::string& trial_dir, const std::string& node_id);

}  // namespace ladder::worker
