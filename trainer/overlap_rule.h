#pragma once
// Whether a rank starts its gradient allreduces during the backward pass (--overlap auto), and whether it assembles
// batches on a background thread (--prefetch's default): the same question, whether it has a core to spare.
//
// Overlap pays when the communication runs on something the backward pass does not need: a GPU's copy engines
// and NCCL's kernels, or a CPU core of its own. A CPU rank that uses every core it has for its intra-op threads
// gains nothing from it: the communication (Gloo's and MPI's threads, the kernel's TCP copies, MPI's polling)
// takes its cycles from the backward pass and adds a hand-off per bucket. Measured with bench/trainer_vs_pytorch
// (2 ranks on 2 cores, 1 thread each): see docs/BENCHMARKS.md.
#include <torch/torch.h>

#include <string>

#include "trainer/args.h"

namespace ladder::trainer {

// Cores this rank may use: its CPU affinity when a launcher bound it to fewer CPUs than are online (mpirun
// --bind-to core, srun --cpu-bind, a cgroup's cpuset); otherwise the online CPUs shared by the node's ranks.
int CoresForRank(int affinity_cpus, int online_cpus, int local_ranks);

// --overlap on/off as given; auto: on for CUDA tensors, on CPU only with a core beyond the --threads.
bool OverlapAllreduce(const std::string& mode, bool cuda, int threads, int cores_for_rank);

// CoresForRank for this process: its affinity, the online CPUs, and the node's ranks: the launcher's
// (LOCAL_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_SIZE, SLURM_NTASKS_PER_NODE; 1 when none says), or, when more,
// LADDER_WORKER_SLOTS (set by ladder-worker: the ranks it may run on the node at once, other trials' included).
int CoresForThisRank();

// OverlapAllreduce for this process and its --overlap.
bool OverlapAllreduce(const TrainArgs& a, torch::Device device);

// Batches assembled ahead on a background thread: --prefetch when given, else 2 where the allreduce would overlap
// (a GPU, or a core to spare) and 0 where the thread would take its cycles from the training step.
int PrefetchDepth(const TrainArgs& a, torch::Device device);

}  // namespace ladder::trainer
