#pragma once
// TrialProcess: one trial's process, started in its own process group, watched from an Asio loop.
//
// Contract:
// * Launch() and every callback run on the loop's thread.
// * stdout is read line by line (on_line gets each line without its newline; lines longer than the limit are
//   cut and flagged); stderr goes to `stderr_path`.
// * on_exit is called exactly once, after the process has exited AND its stdout has reached EOF (so no metric
//   line printed before exit is lost), or 2 s after exit if a leftover child still holds stdout open.
//   exit_code is the exit status, or 128 + signal when killed by a signal.
// * Terminate() sends SIGTERM to the whole process group, then SIGKILL after the grace period. When the
//   leader exits the rest of its group is killed too, so no rank outlives its trial.
// * A launcher (srun, mpirun: worker/launcher_stop.h) is stopped in stages instead: Signal() sends one signal to
//   the leader alone (a launcher forwards it to its ranks; its group would get it twice), and EscalateAfter()
//   then sends SIGTERM to the leader alone once `grace` has passed, and SIGKILL to the group `kill_after` later.
// * PauseReading() stops reading stdout (the process blocks once the pipe is full: backpressure); on_exit
//   waits while reading is paused, so no line is lost. ResumeReading() continues.
// * Exit is detected with a pidfd (Linux ≥ 5.3), so there is no SIGCHLD handler and no process-wide state; an
//   adopted process (a warm start: Adopt; a detached one: LaunchSpec::detach) reports its exit through the status
//   pipe of the process that forked it.
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ladder::worker {

struct LaunchSpec {
  std::vector<std::string> argv;              // argv[0] is looked up in `search_dirs` first, then PATH
  std::map<std::string, std::string> env;     // added to (and overriding) the worker's environment
  std::string workdir;                        // empty: the worker's cwd
  std::string stderr_path;                    // empty: /dev/null
  std::vector<std::string> search_dirs;       // e.g. the directory holding ladder-worker (for ladder-train);
                                              // also put first on the child's PATH
  int pass_fd = -1;                           // >= 0: given to the child as its fd 3 (ladder-train --zygote's socket)
  // Runs the command outside the worker's process tree, through ladder-detach (worker/detach_main.cc; found as
  // argv[0] is), so that a signal Slurm sends to the worker's step by its process tree does not reach it (srun:
  // worker/launcher_stop.h). It is still stopped, watched and reported as a child is, and dies with the worker.
  bool detach = false;
};

// The whole environment a trial of `spec` starts with: the worker's, without LADDER_TOKEN, with spec.env over
// it and spec.search_dirs first on PATH. KEY=VALUE, sorted by key.
std::vector<std::string> TrialEnvironment(const LaunchSpec& spec);

class TrialProcess : public std::enable_shared_from_this<TrialProcess> {
 public:
  using LineFn = std::function<void(const std::string& line, bool truncated)>;
  using ExitFn = std::function<void(int exit_code, const std::string& description)>;

  // Starts the process. On failure (no such command, not executable, ...) returns nullptr and sets *error to
  // a message naming the command and the reason.
  static std::shared_ptr<TrialProcess> Launch(boost::asio::io_context& loop, const LaunchSpec& spec, LineFn on_line,
                                              ExitFn on_exit, std::string* error);
  // A process that another one started for this worker (a child of ladder-train --zygote: worker/warm_start.h),
  // leader of its own process group. Its exit comes as the raw wait status (4 bytes) on `status_fd`; end of file
  // without them means its parent died first (it was killed with it): exit code 137, `orphaned_reason`.
  // Takes ownership of both descriptors. Everything else is as for Launch.
  static std::shared_ptr<TrialProcess> Adopt(boost::asio::io_context& loop, int pid, int stdout_fd, int status_fd,
                                             std::string orphaned_reason, LineFn on_line, ExitFn on_exit);
  ~TrialProcess();

  void Terminate(std::chrono::milliseconds grace = std::chrono::seconds(5));
  void Signal(int sig);
  void EscalateAfter(std::chrono::milliseconds grace, std::chrono::milliseconds kill_after);
  int pid() const { return pid_; }
  bool exited() const { return exited_; }
  void PauseReading() { paused_ = true; }
  void ResumeReading();
  bool paused() const { return paused_; }

 private:
  TrialProcess(boost::asio::io_context& loop, int pid, int stdout_fd, int pidfd, LineFn on_line, ExitFn on_exit);
  void Start();
  void WaitForExit();
  void ReadMore();
  void OnPidfdReadable();
  void OnStatusReadable();
  void OnExited();
  void MaybeFinish();
  void ArmEofTimer();

  boost::asio::io_context& loop_;
  int pid_;
  boost::asio::posix::stream_descriptor out_;
  boost::asio::posix::stream_descriptor pidfd_;  // a pidfd; for an adopted process, its status pipe
  bool adopted_ = false;
  std::string orphaned_reason_;
  boost::asio::steady_timer kill_timer_;
  boost::asio::steady_timer eof_timer_;
  LineFn on_line_;
  ExitFn on_exit_;
  std::string buf_;
  std::vector<char> chunk_;
  bool eof_ = false, exited_ = false, reported_ = false, skipping_long_line_ = false;
  bool paused_ = false, reading_ = false;  // reading_: an async read is outstanding
  int exit_code_ = 0;
  std::string description_;
};

// "killed by SIGKILL" style description of a wait status.
std::string DescribeWaitStatus(int status, int* exit_code);

}  // namespace ladder::worker
