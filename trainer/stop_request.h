#pragma once
// StopRequest: a SIGTERM or SIGUSR1 asks a training run to stop cleanly — the ranks agree on a step, rank 0
// writes the checkpoint, and every rank exits with 128 + the signal. This is how a trial stops when it is preempted,
// its worker stops, or its Slurm job reaches its time limit: the requeued run resumes (--resume) from that step
// instead of from the last periodic checkpoint.
//
// Contract:
// * Install() (once per process, before training) sets the handlers; only with --checkpoint (without one there is
//   nothing to save and the signals keep their default action). The handler only records the signal
//   (async-signal-safe) and restores the default action, so a second signal ends the process at once.
// * Due(step) is a collective when the world has more than one rank: every rank calls it at the same point of
//   the loop with the same step. It agrees every kCheckEvery steps (one scalar allreduce: does any rank have a
//   request?), so the ranks stop at the same step; a single rank checks every step. Once true it stays true.
// * The recorded signal is process-wide state, as a signal handler's must be; nothing else here is.
#include <torch/torch.h>

#include <cstdint>

#include "trainer/comm/communicator.h"

namespace ladder::trainer {

class StopRequest {
 public:
  static constexpr int64_t kCheckEvery = 8;

  // SIGTERM and SIGUSR1 (Slurm's --signal=USR1@T names the latter) record a request.
  static void Install();
  // The signal received in this process (0: none).
  static int Signal();

  StopRequest(comm::Communicator& comm, torch::Device device) : comm_(comm), device_(device) {}
  // True when the run must stop before step `step` (see the contract).
  bool Due(int64_t step);
  // A collective, after a Due() stop's checkpoint: true when every rank says `saved` (rank 0 saved it; the others
  // pass true). No rank returns before rank 0 has written the checkpoint: a launcher (srun --kill-on-bad-exit, mpirun)
  // ends the ranks still running as soon as one exits non-zero, and would cut rank 0's save short.
  bool AllSaved(bool saved);
  // 128 + the signal that asked for the stop (on every rank: a rank that got none takes SIGTERM's).
  int ExitCode() const { return 128 + (signal_ ? signal_ : 15); }

 private:
  comm::Communicator& comm_;
  torch::Device device_;
  bool due_ = false;
  int signal_ = 0;
};

}  // namespace ladder::trainer
