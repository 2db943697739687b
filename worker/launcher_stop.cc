#include "worker/launcher_stop.h"

#include <signal.h>

#include <functional>
#include <sstream>
#include <vector>

#include "common/log.h"
#include "worker/log_component.h"

namespace ladder::worker {

namespace {

// The step could not be signalled: srun forwards SIGUSR1 to its tasks as it is.
void FallBackToUsr1(const std::shared_ptr<TrialProcess>& srun, const std::string& trial, const std::string& why) {
  LogWarning(kLog, trial + ": " + why + "; sending SIGUSR1 to srun, which forwards it to the step's tasks");
  srun->Signal(SIGUSR1);
}

// A Slurm client command, its stdout lines gathered, `done(exit code, stdout)` once it has ended. False (and
// `error` set) when it cannot start.
bool RunSlurmCommand(boost::asio::io_context& loop, std::vector<std::string> argv,
                     std::function<void(int, const std::string&)> done, std::string* error) {
  LaunchSpec spec;
  spec.argv = std::move(argv);
  auto out = std::make_shared<std::string>();
  auto p = TrialProcess::Launch(
      loop, spec, [out](const std::string& line, bool) { *out += line + "\n"; },
      [out, done = std::move(done)](int code, const std::string&) { done(code, *out); }, error);
  return p != nullptr;  // it keeps itself alive until its exit is reported
}

void SignalSrunStep(boost::asio::io_context& loop, const std::shared_ptr<TrialProcess>& srun,
                    const std::string& step_name, const std::string& job, const std::string& trial) {
  if (job.empty() || step_name.empty()) {
    FallBackToUsr1(srun, trial, "no Slurm job (SLURM_JOB_ID) or step name to signal");
    return;
  }
  auto found = [&loop, srun, step_name, job, trial](int code, const std::string& listed) {
    const std::string step = FindStepId(listed, step_name);
    if (step.empty()) {
      FallBackToUsr1(srun, trial, "no step '" + step_name + "' in job " + job + " (squeue exited with " +
                                      std::to_string(code) + ")");
      return;
    }
    auto signalled = [srun, step, trial](int rc, const std::string&) {
      if (rc == 0) {
        LogInfo(kLog, trial + ": SIGTERM to the tasks of Slurm step " + step);
      } else if (StepAlreadyEnded(rc)) {
        LogInfo(kLog, trial + ": Slurm step " + step + " is already ending (scancel exited with " + std::to_string(rc) +
                          "): not signalled again");
      } else {
        FallBackToUsr1(srun, trial, "scancel --ctld --signal=TERM " + step + " exited with " + std::to_string(rc));
      }
    };
    std::string error;
    if (!RunSlurmCommand(loop, {"scancel", "--ctld", "--signal=TERM", step}, signalled, &error)) {
      FallBackToUsr1(srun, trial, error);
    }
  };
  std::string error;
  if (!RunSlurmCommand(loop, {"squeue", "-h", "-s", "-j", job, "-o", "%i %j"}, found, &error)) {
    FallBackToUsr1(srun, trial, error);
  }
}

}  // namespace

std::string FindStepId(const std::string& squeue_output, const std::string& name) {
  std::istringstream lines(squeue_output);
  std::string found;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string id, step_name;
    if (words >> id >> step_name && step_name == name) found = id;
  }
  return found;
}

bool StepAlreadyEnded(int scancel_exit_code) {
  // scancel exits with Slurm's error number's low byte: ESLURM_INVALID_JOB_ID (2017), ESLURM_ALREADY_DONE (2021).
  return scancel_exit_code == (2017 & 0xff) || scancel_exit_code == (2021 & 0xff);
}

bool PreemptTimeSet(const std::string& scontrol_output) {
  const auto at = scontrol_output.find("PreemptTime=");
  return at != std::string::npos && scontrol_output.compare(at + 12, 4, "None") != 0 &&
         at + 12 < scontrol_output.size() && scontrol_output[at + 12] != ' ' && scontrol_output[at + 12] != '\n';
}

void AskWhetherJobIsPreempted(boost::asio::io_context& loop, const std::string& job, std::function<void(bool)> done) {
  if (job.empty()) {
    done(false);
    return;
  }
  auto answered = [done](int code, const std::string& out) { done(code == 0 && PreemptTimeSet(out)); };
  std::string error;
  if (!RunSlurmCommand(loop, {"scontrol", "show", "job", job}, answered, &error)) done(false);
}

void StopThroughLauncher(boost::asio::io_context& loop, const std::shared_ptr<TrialProcess>& process,
                         v1::Launcher launcher, const std::string& step_name, const std::string& slurm_job_id,
                         std::chrono::milliseconds grace, const std::string& trial) {
  if (process->exited()) return;
  process->EscalateAfter(grace, kLauncherKillAfter);
  if (launcher == v1::LAUNCHER_SRUN) {
    SignalSrunStep(loop, process, step_name, slurm_job_id, trial);
  } else {
    process->Signal(SIGUSR1);  // mpirun forwards it to every rank on every node
  }
}

}  // namespace ladder::worker
