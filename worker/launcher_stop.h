#pragma once
// Stopping a trial whose one process here, a launcher, started every rank on every node (resources.launcher srun
// or mpirun), so that the stop reaches the ranks: their handlers agree on a step and write the checkpoint
// (trainer/stop_request.h). The launcher itself must not get SIGTERM first — each answers it by ending the ranks:
//
// * srun answers SIGTERM, SIGINT twice, SIGHUP and SIGQUIT by SIGKILLing the tasks ("forcing job termination", exit
//   137). The worker runs `scancel --signal=TERM JOB.STEP` instead, the step found by its name (LADDER_STEP_NAME)
//   among the steps of the worker's own job (SLURM_JOB_ID) with squeue: slurmd delivers SIGTERM to every task of the
//   step, and srun waits for them. scancel is told --ctld: slurmctld signals the step on the step's own nodes.
//   Without it scancel asks every node of the job's allocation, and the nodes that do not run the step answer
//   "invalid job id" (exit 225) after the step's own nodes have delivered the signal: a trial on 2 of a job's 4 nodes
//   "failed" every time, and the SIGUSR1 below then cut its ranks' checkpoint handlers short (exit 138).
//   Where the step cannot be found or signalled (no Slurm job, the step not created yet, slurmctld not answering),
//   SIGUSR1 to srun, which forwards it to the tasks unchanged — but not when scancel says the step no longer exists
//   or is already done (ESLURM_INVALID_JOB_ID, ESLURM_ALREADY_DONE: exit 225, 229): it is ending, and a second,
//   different signal would only cut its tasks' handlers short.
//   srun runs outside the worker's process tree (LaunchSpec::detach, worker/detach_main.cc), so that Slurm's own
//   SIGTERM to the workers' step (a preemption of their job) does not reach it either: only the tasks get it.
// * Open MPI's mpirun cannot forward SIGTERM (ess_base_forward_signals refuses it); on SIGTERM it signals the ranks
//   only after odls_base_sigkill_timeout and SIGKILLs them one timeout later. It forwards SIGUSR1 at once to every
//   rank on every node: the worker sends SIGUSR1 to mpirun alone, so an MPI trial stops through its checkpoint on
//   SIGUSR1 (ladder-train does; Slurm's --signal names the same signal).
// * Then, if the launcher still runs after `grace`: SIGTERM to the launcher alone (its own forced end of every
//   rank, on every node), and SIGKILL to its process group kLauncherKillAfter later.
//
// Runs on the worker's loop. The launcher's exit is reported by its TrialProcess as any exit is.
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "ladder/v1/ladder.pb.h"
#include "worker/trial_process.h"

namespace ladder::worker {

namespace v1 = ::ladder::v1;

inline constexpr std::chrono::milliseconds kLauncherKillAfter{5000};

// The launcher the coordinator names in a trial's LADDER_LAUNCHER (per_node, mpirun, srun; anything else: per_node).
inline v1::Launcher LauncherNamed(const std::string& name) {
  return name == "srun" ? v1::LAUNCHER_SRUN : name == "mpirun" ? v1::LAUNCHER_MPIRUN : v1::LAUNCHER_PER_NODE;
}

// True when `launcher` starts every rank itself (srun, mpirun): the trial's one process here is that launcher.
inline bool StartsEveryRank(::ladder::v1::Launcher launcher) {
  return launcher == ::ladder::v1::LAUNCHER_SRUN || launcher == ::ladder::v1::LAUNCHER_MPIRUN;
}

// Stops `process` (a launcher of kind `launcher`) as above. `slurm_job_id`: the job whose step `step_name` is
// (srun); empty: not found, SIGUSR1 to srun. `trial` names the trial in the worker's log.
void StopThroughLauncher(boost::asio::io_context& loop, const std::shared_ptr<TrialProcess>& process,
                         ::ladder::v1::Launcher launcher, const std::string& step_name,
                         const std::string& slurm_job_id, std::chrono::milliseconds grace, const std::string& trial);

// The step id ("JOB.STEP") of the step named `name` in `squeue -h -s -o '%i %j'` output lines; the newest (last)
// one when several share the name; "" when none does.
std::string FindStepId(const std::string& squeue_output, const std::string& name);

// Whether scancel's exit code says the step it was to signal no longer exists or is already done (it is ending).
bool StepAlreadyEnded(int scancel_exit_code);

// Whether `scontrol show job` output says Slurm is preempting the job: a PreemptTime other than None. Slurm sets it
// when it picks the job, before it signals the job's steps (GraceTime: SIGTERM to every step's tasks at once).
bool PreemptTimeSet(const std::string& scontrol_output);

// Asks slurmctld (`scontrol show job JOB`) whether Slurm is preempting job `job`; `done(preempting)` on `loop` once
// it answered. No job, no scontrol or no answer: done(false).
void AskWhetherJobIsPreempted(boost::asio::io_context& loop, const std::string& job, std::function<void(bool)> done);

}  // namespace ladder::worker
