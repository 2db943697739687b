// MPI directly. Every MPI call runs on one background thread (as Horovod does): AllreduceSum queues a
// blocking MPI_Allreduce there and returns at once, so gradient buckets are reduced with MPI's tuned
// algorithms while the backward pass goes on (OpenMPI's non-blocking MPI_Iallreduce uses slower schedules
// and, without a progress thread, only advances inside MPI calls).
#include <mpi.h>

#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

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

class FutureWork final : public Work {
 public:
  explicit FutureWork(std::future<void> f) : f_(std::move(f)) {}
  void Wait() override { f_.get(); }

 private:
  std::future<void> f_;
};

class Mpi final : public Communicator {
 public:
  Mpi() {
    thread_ = std::thread([this] { Loop(); });
    Run([this] {
      int inited = 0;
      MPI_Initialized(&inited);
      if (!inited) {
        int provided = 0;
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
        owns_ = true;
      }
      MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
      MPI_Comm_size(MPI_COMM_WORLD, &size_);
      MPI_Comm local;
      MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
      MPI_Comm_rank(local, &local_rank_);
      MPI_Comm_free(&local);
    }).get();
  }
  ~Mpi() override {
    Run([this] {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (owns_ && !finalized) MPI_Finalize();
    }).get();
    {
      std::lock_guard<std::mutex> g(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  std::string backend() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }

  std::unique_ptr<Work> AllreduceSum(torch::Tensor& t) override {
    void* data = t.data_ptr();
    int count = static_cast<int>(t.numel());
    MPI_Datatype type = TypeOf(t);
    return std::make_unique<FutureWork>(
        Run([=] { MPI_Allreduce(MPI_IN_PLACE, data, count, type, MPI_SUM, MPI_COMM_WORLD); }));
  }
  void Broadcast(torch::Tensor& t, int root) override {
    void* data = t.data_ptr();
    int count = static_cast<int>(t.numel());
    MPI_Datatype type = TypeOf(t);
    Run([=] { MPI_Bcast(data, count, type, root, MPI_COMM_WORLD); }).get();
  }
  void Barrier() override {
    Run([] { MPI_Barrier(MPI_COMM_WORLD); }).get();
  }

 private:
  // Queues `fn` for the MPI thread; operations run in the order they were queued (the same on every rank).
  std::future<void> Run(std::function<void()> fn) {
    std::packaged_task<void()> task(std::move(fn));
    auto f = task.get_future();
    {
      std::lock_guard<std::mutex> g(mu_);
      queue_.push_back(std::move(task));
    }
    cv_.notify_one();
    return f;
  }
  void Loop() {
    for (;;) {
      std::packaged_task<void()> task;
      {
        std::unique_lock<std::mutex> g(mu_);
        cv_.wait(g, [this] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }

  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<void()>> queue_;
  bool stop_ = false;
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
