#pragma once
// Leftover trial processes of an earlier worker. A trial's first process dies with its worker (PR_SET_PDEATHSIG),
// but what it started does not: `sh -c "python train.py"` leaves python running, reparented to init, when the
// worker is killed -9 — an orphan that goes on writing to the trial's checkpoint directory while the trial runs
// again elsewhere. Every rank a worker starts carries LADDER_TRIAL_DIR=<its trial dir>/trial-<id> in its
// environment, so a worker starting on the same trial directory finds and kills them.
#include <string>
#include <vector>

namespace ladder::worker {

// SIGKILLs every process (other than this one) whose environment holds LADDER_TRIAL_DIR under `trial_dir` (as the
// worker sets it: std::filesystem::absolute(trial_dir) + "/trial-..."); returns "pid N (trial-T)" for each one
// killed. Processes whose environment cannot be read (another user's) are left alone.
std::vector<std::string> KillLeftoverTrialProcesses(const std::string& trial_dir);

}  // namespace ladder::worker
