// NCCL directly (nccl.h + the CUDA runtime), on CUDA tensors. Ranks are started torchrun-style (RANK,
// WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT); rank 0 creates the ncclUniqueId and shares it through a
// the rendezvous store (rendezvous.h); each rank uses device LOCAL_RANK.
//
// Streams: collectives run on a dedicated communication stream that first waits on an event recorded on the
// compute stream (so they see the gradients the backward pass wrote). Work::Wait() makes the compute stream wait
// for the collective (it does not block the host, like c10d's ProcessGroupNCCL): what the trainer does next on
// the compute stream, including a copy to the host, is ordered after it. The compute stream is the current
// LibTorch stream when built against a CUDA LibTorch (LADDER_NCCL_TORCH_CUDA_STREAM), else the legacy default
// stream. Barrier() blocks the host.
//
// Errors: a failed ncclResult_t or cudaError_t becomes an exception naming the call and NCCL's (or CUDA's)
// message; after an NCCL error the communicator is aborted (ncclCommAbort) instead of destroyed.
// Threading: one thread, as for every Communicator; each call first makes the communicator's device current.
#include <cuda_runtime_api.h>
#include <nccl.h>
#ifdef LADDER_NCCL_TORCH_CUDA_STREAM
#include <c10/cuda/CUDAStream.h>
#endif

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "trainer/comm/communicator.h"
#include "trainer/comm/rendezvous.h"

namespace ladder::trainer::comm {

namespace {

constexpr std::chrono::seconds kRendezvousTimeout{300};
constexpr const char* kUniqueIdKey = "ladder/nccl/unique_id";

void CheckCuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    throw std::runtime_error(std::string("nccl backend: ") + what + " failed: " + cudaGetErrorName(e) + " (" +
                             cudaGetErrorString(e) + ")");
  }
}

cudaStream_t ComputeStream(int device) {
#ifdef LADDER_NCCL_TORCH_CUDA_STREAM
  return c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
#else
  (void)device;
  return cudaStreamLegacy;
#endif
}

ncclDataType_t TypeOf(const torch::Tensor& t) {
  switch (t.scalar_type()) {
    case torch::kFloat32: return ncclFloat32;
    case torch::kFloat64: return ncclFloat64;
    case torch::kBFloat16: return ncclBfloat16;
    case torch::kFloat16: return ncclFloat16;
    case torch::kInt32: return ncclInt32;
    case torch::kInt64: return ncclInt64;
    default:
      throw std::invalid_argument(std::string("nccl backend: unsupported tensor type ") +
                                  c10::toString(t.scalar_type()) +
                                  " (float32, float64, bfloat16, float16, int32, int64)");
  }
}

// An event recorded on the communication stream after a collective; Wait() orders the compute stream after it.
class NcclWork final : public Work {
 public:
  NcclWork(cudaEvent_t done, int device) : done_(done), device_(device) {}
  ~NcclWork() override { cudaEventDestroy(done_); }
  void Wait() override {
    CheckCuda(cudaSetDevice(device_), "cudaSetDevice");
    CheckCuda(cudaStreamWaitEvent(ComputeStream(device_), done_, 0), "cudaStreamWaitEvent");
  }

 private:
  cudaEvent_t done_;
  int device_;
};

class Nccl final : public Communicator {
 public:
  Nccl(int rank, int size, int local_rank, c10::intrusive_ptr<c10d::Store> store)
      : rank_(rank), size_(size), device_(local_rank), store_(std::move(store)) {}
  ~Nccl() override {
    cudaSetDevice(device_);
    if (comm_) {
      if (failed_) {
        ncclCommAbort(comm_);
      } else {
        cudaStreamSynchronize(stream_);
        ncclCommDestroy(comm_);
      }
    }
    if (stream_) cudaStreamDestroy(stream_);
    if (barrier_buf_) cudaFree(barrier_buf_);
  }

  // Collective: creates the NCCL communicator on device `device_` (throws on failure).
  void Init() {
    int devices = 0;
    CheckCuda(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
    if (device_ < 0 || device_ >= devices) {
      throw std::runtime_error("nccl backend: LOCAL_RANK " + std::to_string(device_) + " has no CUDA device (" +
                               std::to_string(devices) + " visible); start at most one rank per GPU");
    }
    CheckCuda(cudaSetDevice(device_), "cudaSetDevice");
    ncclUniqueId id;
    if (rank_ == 0) {
      Check(ncclGetUniqueId(&id), "ncclGetUniqueId");
      const auto* p = reinterpret_cast<const uint8_t*>(&id);
      store_->set(kUniqueIdKey, std::vector<uint8_t>(p, p + sizeof id));
    } else {
      const std::vector<uint8_t> bytes = store_->get(kUniqueIdKey);  // waits until rank 0 has set it
      if (bytes.size() != sizeof id) {
        throw std::runtime_error("nccl backend: the unique id in the store has " + std::to_string(bytes.size()) +
                                 " bytes, expected " + std::to_string(sizeof id) +
                                 " (ranks built with different NCCL versions?)");
      }
      std::memcpy(&id, bytes.data(), sizeof id);
    }
    Check(ncclCommInitRank(&comm_, size_, id, rank_), "ncclCommInitRank");
    CheckCuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    CheckCuda(cudaMalloc(&barrier_buf_, sizeof(float)), "cudaMalloc");
  }

  std::string backend() const override { return "nccl"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return device_; }

  std::unique_ptr<Work> AllreduceSum(torch::Tensor& t) override {
    const ncclDataType_t type = Validate(t, "AllreduceSum");
    BeginOnCommStream();
    Check(ncclAllReduce(t.data_ptr(), t.data_ptr(), static_cast<size_t>(t.numel()), type, ncclSum, comm_, stream_),
          "ncclAllReduce");
    return std::make_unique<NcclWork>(RecordDone(), device_);
  }

  void Broadcast(torch::Tensor& t, int root) override {
    const ncclDataType_t type = Validate(t, "Broadcast");
    BeginOnCommStream();
    Check(ncclBroadcast(t.data_ptr(), t.data_ptr(), static_cast<size_t>(t.numel()), type, root, comm_, stream_),
          "ncclBroadcast");
    NcclWork(RecordDone(), device_).Wait();
  }

  void Barrier() override {
    CheckCuda(cudaSetDevice(device_), "cudaSetDevice");
    Check(ncclAllReduce(barrier_buf_, barrier_buf_, 1, ncclFloat32, ncclSum, comm_, stream_), "ncclAllReduce");
    CheckCuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    CheckAsync();
  }

 private:
  void Check(ncclResult_t r, const char* what) {
    if (r == ncclSuccess) return;
    failed_ = true;
    std::string msg = std::string("nccl backend: ") + what + " failed: " + ncclGetErrorString(r);
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 13, 0)
    const char* last = ncclGetLastError(comm_);
    if (last && *last) msg += std::string(" (") + last + ")";
#endif
    throw std::runtime_error(msg);
  }
  // Errors that NCCL found while a collective ran (a peer died, a network failure).
  void CheckAsync() {
    ncclResult_t async = ncclSuccess;
    Check(ncclCommGetAsyncError(comm_, &async), "ncclCommGetAsyncError");
    Check(async, "a collective");
  }
  ncclDataType_t Validate(const torch::Tensor& t, const char* op) const {
    if (!t.is_cuda() || t.get_device() != device_) {
      throw std::invalid_argument(std::string("nccl backend: ") + op + " got a tensor on " + t.device().str() +
                                  ", expected cuda:" + std::to_string(device_) + " (NCCL reduces GPU tensors)");
    }
    if (!t.is_contiguous()) {
      throw std::invalid_argument(std::string("nccl backend: ") + op + ": the tensor is not contiguous");
    }
    return TypeOf(t);
  }
  // Makes the communication stream wait for what the compute stream has queued so far.
  void BeginOnCommStream() {
    CheckCuda(cudaSetDevice(device_), "cudaSetDevice");
    const cudaStream_t compute = ComputeStream(device_);
    cudaEvent_t ready;
    CheckCuda(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    cudaError_t e = cudaEventRecord(ready, compute);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(stream_, ready, 0);
    cudaEventDestroy(ready);  // released once the wait is satisfied
    CheckCuda(e, "ordering the communication stream after the compute stream");
  }
  cudaEvent_t RecordDone() {
    cudaEvent_t done;
    CheckCuda(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    const cudaError_t e = cudaEventRecord(done, stream_);
    if (e != cudaSuccess) cudaEventDestroy(done);
    CheckCuda(e, "cudaEventRecord");
    return done;
  }

  int rank_, size_, device_;
  c10::intrusive_ptr<c10d::Store> store_;  // kept: rank 0 hosts the rendezvous for the others' lifetime
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  void* barrier_buf_ = nullptr;
  std::atomic<bool> failed_{false};
};

}  // namespace

bool NcclDevicesPresent() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

std::unique_ptr<Communicator> MakeNccl(std::string* error) {
  Rendezvous rv;
  if (!JoinRendezvous("nccl", kRendezvousTimeout, &rv, error)) return nullptr;
  try {
    auto comm = std::make_unique<Nccl>(rv.rank, rv.size, rv.local_rank, std::move(rv.store));
    comm->Init();
    return comm;
  } catch (const std::exception& e) {
    *error = std::string(e.what()).rfind("nccl backend:", 0) == 0
                 ? e.what()
                 : std::string("nccl backend: rendezvous at ") + rv.addr + ":" + rv.port + " failed: " + e.what();
    return nullptr;
  }
}

}  // namespace ladder::trainer::comm
