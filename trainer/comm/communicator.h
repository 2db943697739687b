#pragma once
// Communicator: the narrow collective interface the trainer needs, one implementation per backend
// (like c10d's ProcessGroup{Gloo,MPI,NCCL}, Horovod's ops/*_operations):
//   * gloo — LibTorch's c10d ProcessGroupGloo; ranks started one by one with torchrun's variables
//            (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT) and a rendezvous store (rendezvous.h).
//   * mpi  — MPI directly (OpenMPI); ranks started by mpirun or srun.
//   * nccl — NCCL directly on CUDA tensors, torchrun-style ranks; built only when a CUDA LibTorch and NCCL are
//            found (CPU builds say so at run time).
//   * shm  — ranks that are all on one node (torchrun-style), through a shared-memory segment
//            (shm_communicator.cc); CPU tensors.
//   * none — one process.
// and one composition: the hierarchical allreduce (hierarchical_communicator.cc) built from the sub-communicators
// of a GroupCommunicator (gloo, mpi).
//
// Contract: collectives are called in the same order on every rank (as in c10d's ProcessGroupMPI). All
// calls come from one thread. Tensors are contiguous; the caller keeps them alive until Wait() returns.
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

namespace ladder::trainer::comm {

// An operation in flight.
class Work {
 public:
  virtual ~Work() = default;
  virtual void Wait() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual std::string backend() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int local_rank() const = 0;

  // Sums `t` across ranks in place; returns at once with a handle (the operation may still run).
  virtual std::unique_ptr<Work> AllreduceSum(torch::Tensor& t) = 0;
  // Overwrites `t` on every rank with rank `root`'s values.
  virtual void Broadcast(torch::Tensor& t, int root) = 0;
  virtual void Barrier() = 0;
  // A zeroed buffer for tensors this communicator will reduce often (the gradient buckets). Collective: every rank
  // calls it in the same order with the same size. A backend may place it where its collectives read it without
  // a copy (shm: in a segment every rank maps); by default it is an ordinary tensor.
  virtual torch::Tensor NewBuffer(int64_t numel, const torch::TensorOptions& options) {
    return torch::zeros({numel}, options);
  }
};

// The capability to form sub-communicators and to reduce to one rank: what the hierarchical allreduce is
// composed of. Gloo and MPI have it; a backend without it simply does not derive from this class.
class GroupCommunicator : public Communicator {
 public:
  static constexpr int kNoGroup = -1;
  // Collective over every rank of this communicator (same call order everywhere, like MPI_Comm_split): ranks
  // passing the same `color` >= 0 form one new communicator, ranked by (`key`, rank here). A rank passing
  // kNoGroup takes part and gets *out == nullptr. Returns false with *error set when it fails.
  virtual bool Split(int color, int key, std::unique_ptr<GroupCommunicator>* out, std::string* error) = 0;
  // Sums `t` across ranks into rank `root`'s `t` (blocking). Other ranks' `t` is unspecified afterwards
  // (Gloo uses it as scratch space).
  virtual void ReduceSum(torch::Tensor& t, int root) = 0;
};

// How ranks are grouped into nodes and whether gradients are reduced hierarchically.
struct CommOptions {
  // Reduce inside each node, allreduce across the node leaders (local rank 0), broadcast back inside the node
  // (the NCCL-inside / MPI-across pattern of large GPU clusters).
  bool hierarchical = false;
  // Ranks per node; 0 = from the launcher (LOCAL_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_SIZE, SLURM_NTASKS_PER_NODE).
  // Setting it simulates several nodes on one machine (ranks r with the same r / ranks_per_node share a node).
  int ranks_per_node = 0;
  // The model runs on the CPU (--device cpu): "auto" then never picks nccl, whose buffers live on a GPU.
  bool cpu_only = false;
};

// Which backends this build has ("none", "gloo", "mpi", and "nccl" when built with CUDA).
std::vector<std::string> AvailableBackends();

// Creates the communicator for `backend` ("auto": nccl when this build has it, options.cpu_only is false, a CUDA
// device is visible and WORLD_SIZE > 1; else mpi when started by mpirun/srun with several ranks; shm when
// WORLD_SIZE > 1 ranks are all on this node (LOCAL_WORLD_SIZE == WORLD_SIZE, or a worker's LADDER_RENDEZVOUS_FILE)
// and no hierarchical allreduce is asked for; gloo when WORLD_SIZE > 1; else none).
// With options.hierarchical (gloo, mpi) the result is the hierarchical composition (MakeHierarchical) over
// the node layout of node_layout.h; rank 0 prints "hierarchical: N nodes x M ranks" to stderr. On failure
// returns nullptr and sets *error (naming the missing variable, the invalid layout, or the backend this build
// lacks).
std::unique_ptr<Communicator> MakeCommunicator(const std::string& backend, const CommOptions& options,
                                               std::string* error);
inline std::unique_ptr<Communicator> MakeCommunicator(const std::string& backend, std::string* error) {
  return MakeCommunicator(backend, CommOptions{}, error);
}

// Factories of the individual backends (each in its own file). MakeMpi and MakeNccl exist only in builds with
// that backend (LADDER_HAVE_MPI, LADDER_HAVE_NCCL).
std::unique_ptr<Communicator> MakeSingleProcess();
std::unique_ptr<GroupCommunicator> MakeGloo(std::string* error);
std::unique_ptr<GroupCommunicator> MakeMpi(std::string* error);
std::unique_ptr<Communicator> MakeNccl(std::string* error);
std::unique_ptr<Communicator> MakeShm(std::string* error);
// Whether this process sees at least one CUDA device (nccl builds only).
bool NcclDevicesPresent();

// Composes the hierarchical allreduce over `world`: splits it into nodes of `ranks_per_node` consecutive ranks
// (0: group ranks by host name) and the node leaders (local rank 0). `source` names where ranks_per_node came
// from, for the rank-0 log line. On failure returns nullptr and sets *error.
std::unique_ptr<Communicator> MakeHierarchical(std::unique_ptr<GroupCommunicator> world, int ranks_per_node,
                                               const std::string& source, std::string* error);

}  // namespace ladder::trainer::comm
