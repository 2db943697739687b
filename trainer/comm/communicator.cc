#include "trainer/comm/communicator.h"

#include <cstdlib>

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
  std::vector<std::string> out = {"none", "gloo"};
#ifdef LADDER_HAVE_MPI
  out.push_back("mpi");
#endif
#ifdef LADDER_HAVE_NCCL
  out.push_back("nccl");
#endif
  return out;
}

std::unique_ptr<Communicator> MakeCommunicator(const std::string& backend, const CommOptions& options,
                                               std::string* error) {
  (void)options;  // TODO(hierarchical): wired by the hierarchical communicator
  std::string b = backend;
  if (b == "auto") {
    const int mpi_size = EnvInt("OMPI_COMM_WORLD_SIZE", EnvInt("PMIX_SIZE", EnvInt("PMI_SIZE", 1)));
    if (mpi_size > 1) {
      b = "mpi";
    } else if (EnvInt("WORLD_SIZE", 1) > 1) {
      b = "gloo";
    } else {
      b = "none";
    }
  }
  if (b == "none") return MakeSingleProcess();
  if (b == "gloo") return MakeGloo(error);
  if (b == "mpi") {
#ifdef LADDER_HAVE_MPI
    return MakeMpi(error);
#else
    *error = "this ladder-train was built without MPI (install libopenmpi-dev and rebuild)";
    return nullptr;
#endif
  }
  if (b == "nccl") {
    *error = "this ladder-train was built without NCCL (it needs a CUDA LibTorch and NCCL at build time)";
    return nullptr;
  }
  *error = "unknown backend '" + backend + "' (auto, none, gloo, mpi, nccl)";
  return nullptr;
}

}  // namespace ladder::trainer::comm
