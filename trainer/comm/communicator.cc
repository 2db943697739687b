#include "trainer/comm/communicator.h"

#include <cstdlib>

#include "trainer/comm/node_layout.h"

namespace ladder::trainer::comm {

namespace {

class DoneWork final : public Work {
 public:
  void Wait() override {}
};

class SingleProcess final : public Communicator {
 public:
  std::string backend() const override { return "none"; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  std::unique_ptr<Work> AllreduceSum(torch::Tensor&) override { return std::make_unique<DoneWork>(); }
  void Broadcast(torch::Tensor&, int) override {}
  void Barrier() override {}
};

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

}  // namespace

std::unique_ptr<Communicator> MakeSingleProcess() { return std::make_unique<SingleProcess>(); }

std::vector<std::string> AvailableBackends() {
  std::vector<std::string> out = {"none", "gloo", "shm"};
#ifdef LADDER_HAVE_MPI
  out.push_back("mpi");
#endif
#ifdef LADDER_HAVE_NCCL
  out.push_back("nccl");
#endif
  return out;
}

namespace {

// The backend "auto" stands for: nccl when this build has it, CUDA devices are present, the model is not kept
// on the CPU and WORLD_SIZE > 1 (torchrun-style ranks); mpi under mpirun/srun with several ranks; gloo when
// WORLD_SIZE > 1; else none.
std::string ResolveAuto(bool cpu_only, bool hierarchical) {
  const int mpi_size = EnvInt("OMPI_COMM_WORLD_SIZE", EnvInt("PMIX_SIZE", EnvInt("PMI_SIZE", 1)));
  const int world_size = EnvInt("WORLD_SIZE", 1);
#ifdef LADDER_HAVE_NCCL
  if (world_size > 1 && !cpu_only && NcclDevicesPresent()) return "nccl";
#else
  (void)cpu_only;
#endif
  if (mpi_size > 1) return "mpi";
  const char* file = std::getenv("LADDER_RENDEZVOUS_FILE");
  const bool one_node = (file && *file) || EnvInt("LOCAL_WORLD_SIZE", 0) == world_size;
  if (world_size > 1 && one_node && !hierarchical) return "shm";
  if (world_size > 1) return "gloo";
  return "none";
}

// The flat communicator of a backend that can be split into nodes (for the hierarchical allreduce).
std::unique_ptr<GroupCommunicator> MakeGroupBackend(const std::string& b, std::string* error) {
  if (b == "gloo") return MakeGloo(error);
#ifdef LADDER_HAVE_MPI
  if (b == "mpi") return MakeMpi(error);
#endif
  *error = "hierarchical allreduce is available over gloo and mpi, not over " + b;
  return nullptr;
}

}  // namespace

std::unique_ptr<Communicator> MakeCommunicator(const std::string& backend, const CommOptions& options,
                                               std::string* error) {
  const std::string b = backend == "auto" ? ResolveAuto(options.cpu_only, options.hierarchical) : backend;
  if (b != "none" && b != "gloo" && b != "mpi" && b != "nccl" && b != "shm") {
    *error = "unknown backend '" + backend + "' (auto, none, gloo, shm, mpi, nccl)";
    return nullptr;
  }
#ifndef LADDER_HAVE_MPI
  if (b == "mpi") {
    *error = "this ladder-train was built without MPI (install libopenmpi-dev and rebuild)";
    return nullptr;
  }
#endif
#ifndef LADDER_HAVE_NCCL
  if (b == "nccl") {
    *error = "this ladder-train was built without NCCL (it needs a CUDA LibTorch and NCCL at build time; "
             "this build has: ";
    for (const auto& a : AvailableBackends()) *error += a + " ";
    error->back() = ')';
    return nullptr;
  }
#endif
  if (b == "none") return MakeSingleProcess();  // one rank: hierarchical or not is the same
  if (!options.hierarchical) {
    if (b == "gloo") return MakeGloo(error);
    if (b == "shm") return MakeShm(error);
#ifdef LADDER_HAVE_MPI
    if (b == "mpi") return MakeMpi(error);
#endif
#ifdef LADDER_HAVE_NCCL
    if (b == "nccl") return MakeNccl(error);
#endif
  }
  auto world = MakeGroupBackend(b, error);
  if (!world) return nullptr;
  if (world->size() == 1) return world;
  NodeLayout layout;
  std::string layout_error;
  const bool layout_ok = ResolveNodeLayout(world->rank(), world->size(), options, std::getenv, &layout, &layout_error);
  // All ranks fail together (a launcher's local rank may contradict the layout on some ranks only, and the
  // others would otherwise wait in the split until the rendezvous timeout).
  auto bad = torch::tensor({layout_ok ? 0 : 1}, torch::kInt32);
  world->AllreduceSum(bad)->Wait();
  if (const int bad_ranks = bad.item<int>(); bad_ranks > 0) {
    *error = layout_ok ? "hierarchical allreduce: the node layout is invalid on " + std::to_string(bad_ranks) +
                             " rank(s) (see their messages)"
                       : layout_error;
    return nullptr;
  }
  return MakeHierarchical(std::move(world), layout.ranks_per_node, layout.source, error);
}

}  // namespace ladder::trainer::comm
