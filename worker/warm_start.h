#pragma once
// WarmStarter: starts a worker's ladder-train trials warm — forked from a `ladder-train --zygote` that has
// LibTorch loaded already (trainer/zygote.h says what it holds and why forking it is safe) — instead of paying
// LibTorch's start-up (about 0.5 s) per rank. Any other command is not its business: Launch returns nullptr
// with *why empty and the caller starts the command cold (TrialProcess::Launch).
//
// Contract:
// * Every call on the worker's loop thread (the zygotes die with that thread: PR_SET_PDEATHSIG).
// * Eligible: argv[0] resolves (search dirs, then PATH) to a file named ladder-train.
// * Zygotes are started lazily, one per ladder-train executable and set of load-time environment variables
//   (LoadTimeEnvironment: what libraries read when they are loaded, fixed in the zygote), at most
//   kMaxZygotes; a trial that arrives while its zygote starts (about 0.5 s) starts cold.
// * A warm child gets what a cold start gets (TrialEnvironment: the same environment, working directory,
//   stdout pipe, stderr file, its own process group, SIGKILL when its parent dies, default signals), and it is
//   a TrialProcess like any other: Terminate (stop, preempt, timeouts) signals its process group, on_exit
//   gets its exit status (from the zygote, through a status pipe).
// * When warm is not possible — the zygote not ready, dead, refusing, slow (kReplyTimeout), the request too
//   large — Launch returns nullptr with *why saying so, and the caller starts cold. A zygote that dies is
//   started again for a later trial, at most kMaxRestarts times per key; its running children die with it
//   (their exit: 137, "killed: its warm-start process ... died").
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "worker/trial_process.h"

namespace ladder::worker {

inline constexpr int kMaxZygotes = 4;
inline constexpr int kMaxRestarts = 3;
inline constexpr std::chrono::milliseconds kReplyTimeout{5000};

// The entries of `env` (KEY=VALUE) that shared libraries read when they are loaded: LD_*, GLIBC_TUNABLES,
// MALLOC_*, OMP_*, GOMP_*, KMP_*, OPENBLAS_*, GOTO_*, BLIS_*, MKL_*.
std::vector<std::string> LoadTimeEnvironment(const std::vector<std::string>& env);

class WarmStarter {
 public:
  // `log_dir`: where each zygote's stderr goes (zygote-N.log).
  WarmStarter(boost::asio::io_context& loop, std::string log_dir);
  ~WarmStarter();  // closes the zygotes' sockets: they exit, and their children (none by then) with them
  WarmStarter(const WarmStarter&) = delete;
  WarmStarter& operator=(const WarmStarter&) = delete;

  // The warm start of `spec`, or nullptr: *why is empty when the command is not ladder-train, else the reason
  // it starts cold (already logged, once per zygote state change).
  std::shared_ptr<TrialProcess> Launch(const LaunchSpec& spec, TrialProcess::LineFn on_line,
                                       TrialProcess::ExitFn on_exit, std::string* why);

  // For tests: the pid of the zygote serving `spec` (0 when none runs), and whether it is ready.
  int ZygotePid(const LaunchSpec& spec, bool* ready = nullptr) const;

 private:
  struct Zygote;
  std::string Key(const LaunchSpec& spec, std::string* exe, std::vector<std::string>* env) const;
  void StartZygote(Zygote& z, const std::string& exe, const std::vector<std::string>& load_env,
                   const LaunchSpec& spec);
  // The ready zygote for `spec`'s load-time environment, starting (or restarting) it when there is none; nullptr
  // with *why when the trial starts cold this time.
  Zygote* ReadyZygote(const LaunchSpec& spec, const std::string& exe, const std::vector<std::string>& env,
                      const std::string& key, std::string* why);
  // Sends the spawn request with the child's descriptors and adopts the child it forked; nullptr with *why
  // (and the zygote stopped when it no longer answers).
  std::shared_ptr<TrialProcess> SpawnFrom(Zygote& z, const LaunchSpec& spec, std::vector<std::string> env,
                                          TrialProcess::LineFn on_line, TrialProcess::ExitFn on_exit,
                                          std::string* why);
  void WaitForReady(const std::shared_ptr<Zygote>& z);

  boost::asio::io_context& loop_;
  std::string log_dir_;
  std::map<std::string, std::shared_ptr<Zygote>> zygotes_;
  int started_ = 0;
};

}  // namespace ladder::worker
