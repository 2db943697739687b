// MPI directly. Every MPI call goes through one SerialExecutor (as Horovod's background thread): AllreduceSum
// queues a blocking MPI_Allreduce there and returns at once, so gradient buckets are reduced with MPI's tuned
// algorithms while the backward pass goes on (OpenMPI's non-blocking MPI_Iallreduce uses libnbc's slower
// schedules — 1.6x the time of the same buckets through MPI_Allreduce on this machine — and, without a
// progress thread, only advances inside MPI calls). A thread that waits for an operation (Work::Wait, and the
// blocking Broadcast, Barrier, ReduceSum, Split) runs the still-queued calls itself instead of sleeping until
// the background thread has run them, when MPI provides MPI_THREAD_SERIALIZED or more: at the end of a
// backward pass the trainer's own thread reduces the last buckets, as a raw MPI_Allreduce from it would.
//
// Lifecycle: MpiRuntime initializes MPI (unless the program already did) on its background thread and
// finalizes it there; the world communicator and every communicator split from it share it, and the last one
// gone finalizes MPI. Calls on different communicators go through the same queue, so they cannot deadlock by
// running in different orders.
#include <mpi.h>

#include <cstdlib>
#include <memory>

#include "trainer/comm/communicator.h"
#include "trainer/comm/serial_executor.h"

namespace ladder::trainer::comm {

namespace {

MPI_Datatype TypeOf(const torch::Tensor& t) {
  switch (t.scalar_type()) {
    case torch::kFloat32: return MPI_FLOAT;
    case torch::kFloat64: return MPI_DOUBLE;
    case torch::kInt64: return MPI_INT64_T;
    case torch::kInt32: return MPI_INT32_T;
    default:
      throw std::invalid_argument(std::string("mpi backend: unsupported tensor type ") +
                                  c10::toString(t.scalar_type()) + " (float32, float64, int32, int64)");
  }
}

class MpiRuntime {
 public:
  MpiRuntime() {
    exec_.Submit([this] {
      int inited = 0;
      MPI_Initialized(&inited);
      if (!inited) {
        int provided = 0;
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
        owns_ = true;
      }
      int level = MPI_THREAD_SINGLE;
      MPI_Query_thread(&level);
      // Below SERIALIZED only the thread that initialized MPI may call it: then nobody helps.
      helpable_ = level >= MPI_THREAD_SERIALIZED;
    }).get();
  }
  ~MpiRuntime() {
    exec_.Submit([this] {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (owns_ && !finalized) MPI_Finalize();
    }).get();
  }
  // Queues `fn`; calls run in the order they were queued (the same on every rank), one at a time. The handle's
  // Wait() runs the queue on the waiting thread where MPI's thread level allows it.
  std::unique_ptr<Work> Run(std::function<void()> fn) {
    return std::make_unique<FutureWork>(exec_.Submit(std::move(fn)), helpable_ ? &exec_ : nullptr);
  }
  void RunAndWait(std::function<void()> fn) { Run(std::move(fn))->Wait(); }
  // Whether waiting threads run queued MPI calls themselves (MPI_THREAD_SERIALIZED or more).
  bool helpable() const { return helpable_; }

 private:
  SerialExecutor exec_;
  bool owns_ = false;      // written and read on the MPI thread only
  bool helpable_ = false;  // written in the constructor, before any other thread sees this object
};

class Mpi final : public GroupCommunicator {
 public:
  // Takes ownership of `comm` unless it is MPI_COMM_WORLD.
  Mpi(std::shared_ptr<MpiRuntime> rt, MPI_Comm comm) : rt_(std::move(rt)), comm_(comm) {
    rt_->RunAndWait([this] {
      MPI_Comm_rank(comm_, &rank_);
      MPI_Comm_size(comm_, &size_);
      MPI_Comm local;
      MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
      MPI_Comm_rank(local, &local_rank_);
      MPI_Comm_free(&local);
    });
  }
  ~Mpi() override {
    if (comm_ != MPI_COMM_WORLD) {
      rt_->RunAndWait([c = comm_]() mutable {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!finalized) MPI_Comm_free(&c);
      });
    }
  }
  std::string backend() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }

  std::unique_ptr<Work> AllreduceSum(torch::Tensor& t) override {
    void* data = t.data_ptr();
    int count = static_cast<int>(t.numel());
    MPI_Datatype type = TypeOf(t);
    MPI_Comm comm = comm_;
    return rt_->Run([=] { MPI_Allreduce(MPI_IN_PLACE, data, count, type, MPI_SUM, comm); });
  }
  void Broadcast(torch::Tensor& t, int root) override {
    void* data = t.data_ptr();
    int count = static_cast<int>(t.numel());
    MPI_Datatype type = TypeOf(t);
    MPI_Comm comm = comm_;
    rt_->RunAndWait([=] { MPI_Bcast(data, count, type, root, comm); });
  }
  void Barrier() override {
    MPI_Comm comm = comm_;
    rt_->RunAndWait([=] { MPI_Barrier(comm); });
  }
  void ReduceSum(torch::Tensor& t, int root) override {
    void* data = t.data_ptr();
    int count = static_cast<int>(t.numel());
    MPI_Datatype type = TypeOf(t);
    MPI_Comm comm = comm_;
    const bool is_root = rank_ == root;
    rt_->RunAndWait([=] {
      MPI_Reduce(is_root ? MPI_IN_PLACE : data, is_root ? data : nullptr, count, type, MPI_SUM, root, comm);
    });
  }
  bool Split(int color, int key, std::unique_ptr<GroupCommunicator>* out, std::string* error) override {
    MPI_Comm sub = MPI_COMM_NULL;
    int rc = MPI_SUCCESS;
    MPI_Comm comm = comm_;
    rt_->RunAndWait([&] { rc = MPI_Comm_split(comm, color < 0 ? MPI_UNDEFINED : color, key, &sub); });
    if (rc != MPI_SUCCESS) {
      *error = "mpi backend: MPI_Comm_split(color " + std::to_string(color) + ") failed with code " +
               std::to_string(rc);
      return false;
    }
    *out = sub == MPI_COMM_NULL ? nullptr : std::make_unique<Mpi>(rt_, sub);
    return true;
  }

 private:
  std::shared_ptr<MpiRuntime> rt_;
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1, local_rank_ = 0;
};

}  // namespace

std::unique_ptr<GroupCommunicator> MakeMpi(std::string* error) {
  try {
    return std::make_unique<Mpi>(std::make_shared<MpiRuntime>(), MPI_COMM_WORLD);
  } catch (const std::exception& e) {
    *error = std::string("mpi backend: ") + e.what();
    return nullptr;
  }
}

}  // namespace ladder::trainer::comm
