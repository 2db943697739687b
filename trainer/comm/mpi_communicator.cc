// MPI directly: MPI_Iallreduce for gradient buckets, MPI_Bcast for the initial parameters.
#include <mpi.h>

#include <cstdlib>

#include "trainer/comm/communicator.h"

namespace ladder::trainer::comm {

namespace {

MPI_Datatype TypeOf(const torch::Tensor& t) {
  switch (t.scalar_type()) {
    case torch::kFloat32: return MPI_FLOAT;
    case torch::kFloat64: return MPI_DOUBLE;
    case torch::kInt64: return MPI_INT64_T;
    case torch::kInt32: return MPI_INT32_T;
    default: throw std::runtime_error("mpi backend: unsupported tensor type");
  }
}

class MpiWork final : public Work {
 public:
  MpiWork() = default;
  MPI_Request req = MPI_REQUEST_NULL;
  void Wait() override { MPI_Wait(&req, MPI_STATUS_IGNORE); }
};

class Mpi final : public Communicator {
 public:
  Mpi() {
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) {
      int provided = 0;
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
      owns_ = true;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &local_rank_);
    MPI_Comm_free(&local);
  }
  ~Mpi() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owns_ && !finalized) MPI_Finalize();
  }
  std::string backend() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }

  std::unique_ptr<Work> AllreduceSum(torch::Tensor& t) override {
    auto w = std::make_unique<MpiWork>();
    MPI_Iallreduce(MPI_IN_PLACE, t.data_ptr(), static_cast<int>(t.numel()), TypeOf(t), MPI_SUM, MPI_COMM_WORLD,
                   &w->req);
    return w;
  }
  void Broadcast(torch::Tensor& t, int root) override {
    MPI_Bcast(t.data_ptr(), static_cast<int>(t.numel()), TypeOf(t), root, MPI_COMM_WORLD);
  }
  void Barrier() override { MPI_Barrier(MPI_COMM_WORLD); }

 private:
  int rank_ = 0, size_ = 1, local_rank_ = 0;
  bool owns_ = false;
};

}  // namespace

std::unique_ptr<Communicator> MakeMpi(std::string* error) {
  try {
    return std::make_unique<Mpi>();
  } catch (const std::exception& e) {
    *error = std::string("mpi backend: ") + e.what();
    return nullptr;
  }
}

}  // namespace ladder::trainer::comm
