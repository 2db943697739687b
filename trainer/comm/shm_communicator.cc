// shm: the collectives of ranks that all run on one node, through a POSIX shared-memory segment (what Open MPI's
// vader and NCCL's SHM transport do inside a node) instead of Gloo's TCP over loopback, whose per-bucket hand-offs
// between threads and kernel copies took most of a second core from the ranks (bench/trainer_vs_pytorch).
//
// Setup: ranks meet through the rendezvous store (rendezvous.h; a worker's ranks through a FileStore in the
// trial's directory). Rank 0 creates the segment (shm_open O_EXCL, mode 0600, a random name), publishes its name,
// and unlinks it once every rank has mapped it: nothing is left in /dev/shm when a rank is killed.
//
// Layout: a header (the barrier's arrival count and generation), then one slot per rank and a result area, each
// `chunk` bytes. AllreduceSum, per chunk of the tensor: every rank copies its part into its slot; barrier; rank r
// sums share r of the chunk over all slots (in rank order) into the result area; barrier; every rank copies the
// result out; barrier. Every rank reads the same sums, so the ranks' parameters stay bitwise equal.
//
// Barrier: an arrival counter and a generation in the segment. The last rank to arrive resets the counter and
// bumps the generation; the others spin briefly (the peers are usually within microseconds) and then sleep on the
// generation with futex (shared, not private: the waiters are in other processes), giving up after kShmTimeout
// with an error naming the rank (a peer that died: the worker stops a trial's other ranks when one fails).
//
// Operations are synchronous (the returned Work is done): on CPU ranks with no spare core (--overlap auto) the
// reducer starts them after the backward pass anyway.
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstring>
#include <random>
#include <stdexcept>
#include <thread>

#include "trainer/comm/communicator.h"
#include "trainer/comm/rendezvous.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define LADDER_CPU_RELAX() _mm_pause()
#else
#define LADDER_CPU_RELAX() std::this_thread::yield()
#endif

namespace ladder::trainer::comm {

namespace {

constexpr std::chrono::seconds kShmTimeout{300};

struct alignas(64) Header {
  std::atomic<uint32_t> arrived;
  std::atomic<uint32_t> generation;
};
static_assert(std::atomic<uint32_t>::is_always_lock_free, "the barrier needs lock-free atomics across processes");

class DoneWork final : public Work {
 public:
  void Wait() override {}
};

// Bytes per slot: 4 MiB (a 1 M-float bucket in one round), less for many ranks so that the segment stays under
// 256 MiB (tmpfs pages are only used where touched).
size_t ChunkBytes(int ranks) {
  if (const char* v = std::getenv("LADDER_SHM_CHUNK_BYTES"); v && std::atoll(v) >= 64) {  // tests: many rounds
    return static_cast<size_t>(std::atoll(v)) / 64 * 64;
  }
  const size_t cap = (size_t{256} << 20) / static_cast<size_t>(ranks + 1);
  return std::max<size_t>(64 << 10, std::min<size_t>(4 << 20, cap / 64 * 64));
}

class Shm final : public Communicator {
 public:
  Shm(Rendezvous rv) : rv_(std::move(rv)), chunk_(ChunkBytes(rv_.size)) {}

  ~Shm() override {
    if (base_) munmap(base_, bytes_);
  }

  bool Setup(std::string* error) {
    bytes_ = sizeof(Header) + chunk_ * static_cast<size_t>(rv_.size + 1);
    std::string name;
    int fd = -1;
    try {
      if (rv_.rank == 0) {
        std::random_device rd;
        name = "/ladder-shm-" + std::to_string(getpid()) + "-" + std::to_string(rd()) + std::to_string(rd());
        fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
        if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes_)) != 0) {
          *error = "shm backend: cannot create the shared segment " + name + " (" + std::strerror(errno) + ")";
          if (fd >= 0) close(fd), shm_unlink(name.c_str());
          return false;
        }
        rv_.store->set("shm/name", std::vector<uint8_t>(name.begin(), name.end()));
      } else {
        const auto v = rv_.store->get("shm/name");
        name.assign(v.begin(), v.end());
        fd = shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
        if (fd < 0) {
          *error = "shm backend: rank " + std::to_string(rv_.rank) + " cannot open rank 0's segment " + name + " (" +
                   std::strerror(errno) + "): are all ranks on one node?";
          return false;
        }
      }
    } catch (const std::exception& e) {
      *error = std::string("shm backend: rendezvous failed: ") + e.what();
      return false;
    }
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
      *error = "shm backend: cannot map " + name + " (" + std::strerror(errno) + ")";
      if (rv_.rank == 0) shm_unlink(name.c_str());
      return false;
    }
    base_ = static_cast<char*>(p);
    header_ = reinterpret_cast<Header*>(base_);  // zeroed by ftruncate: no arrivals, generation 0
    try {
      Barrier();  // every rank has mapped it
    } catch (const std::exception& e) {
      *error = e.what();
      if (rv_.rank == 0) shm_unlink(name.c_str());
      return false;
    }
    if (rv_.rank == 0) shm_unlink(name.c_str());
    return true;
  }

  std::string backend() const override { return "shm"; }
  int rank() const override { return rv_.rank; }
  int size() const override { return rv_.size; }
  int local_rank() const override { return rv_.local_rank; }

  std::unique_ptr<Work> AllreduceSum(torch::Tensor& t) override {
    TORCH_CHECK(t.is_cpu() && t.is_contiguous(), "shm backend: tensors must be contiguous CPU tensors");
    const int64_t esize = static_cast<int64_t>(t.element_size());
    const int64_t per_chunk = static_cast<int64_t>(chunk_) / esize;
    auto flat = t.view({-1});
    const auto opts = t.options();
    for (int64_t off = 0; off < flat.numel(); off += per_chunk) {
      const int64_t c = std::min(per_chunk, flat.numel() - off);
      Slot(rv_.rank, c, opts).copy_(flat.narrow(0, off, c));
      Barrier();
      const int64_t lo = c * rv_.rank / rv_.size, hi = c * (rv_.rank + 1) / rv_.size;
      if (hi > lo) {
        auto sum = Result(c, opts).narrow(0, lo, hi - lo);
        sum.copy_(Slot(0, c, opts).narrow(0, lo, hi - lo));
        for (int r = 1; r < rv_.size; ++r) sum.add_(Slot(r, c, opts).narrow(0, lo, hi - lo));
      }
      Barrier();
      flat.narrow(0, off, c).copy_(Result(c, opts));
      Barrier();  // nobody writes the next chunk's slots before everyone has read this one's result
    }
    return std::make_unique<DoneWork>();
  }

  void Broadcast(torch::Tensor& t, int root) override {
    TORCH_CHECK(t.is_cpu() && t.is_contiguous(), "shm backend: tensors must be contiguous CPU tensors");
    const int64_t per_chunk = static_cast<int64_t>(chunk_) / static_cast<int64_t>(t.element_size());
    auto flat = t.view({-1});
    for (int64_t off = 0; off < flat.numel(); off += per_chunk) {
      const int64_t c = std::min(per_chunk, flat.numel() - off);
      if (rv_.rank == root) Result(c, t.options()).copy_(flat.narrow(0, off, c));
      Barrier();
      if (rv_.rank != root) flat.narrow(0, off, c).copy_(Result(c, t.options()));
      Barrier();
    }
  }

  void Barrier() override {
    const uint32_t gen = header_->generation.load(std::memory_order_acquire);
    if (header_->arrived.fetch_add(1, std::memory_order_acq_rel) == static_cast<uint32_t>(rv_.size - 1)) {
      header_->arrived.store(0, std::memory_order_relaxed);
      header_->generation.fetch_add(1, std::memory_order_release);
      syscall(SYS_futex, &header_->generation, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
      return;
    }
    for (int i = 0; i < 4000; ++i) {  // some tens of microseconds
      if (header_->generation.load(std::memory_order_acquire) != gen) return;
      LADDER_CPU_RELAX();
    }
    const auto deadline = std::chrono::steady_clock::now() + kShmTimeout;
    while (header_->generation.load(std::memory_order_acquire) == gen) {
      if (std::chrono::steady_clock::now() > deadline) {
        throw std::runtime_error("shm backend: rank " + std::to_string(rv_.rank) + " waited " +
                                 std::to_string(kShmTimeout.count()) +
                                 " s for the other ranks at a collective (did one stop?)");
      }
      timespec wait{0, 100 * 1000 * 1000};
      syscall(SYS_futex, &header_->generation, FUTEX_WAIT, gen, &wait, nullptr, 0);
    }
  }

 private:
  torch::Tensor Slot(int r, int64_t n, const torch::TensorOptions& opts) {
    return torch::from_blob(base_ + sizeof(Header) + chunk_ * static_cast<size_t>(r), {n}, opts);
  }
  torch::Tensor Result(int64_t n, const torch::TensorOptions& opts) { return Slot(rv_.size, n, opts); }

  Rendezvous rv_;
  size_t chunk_;
  size_t bytes_ = 0;
  char* base_ = nullptr;
  Header* header_ = nullptr;
};

}  // namespace

std::unique_ptr<Communicator> MakeShm(std::string* error) {
  Rendezvous rv;
  if (!JoinRendezvous("shm", kShmTimeout, &rv, error)) return nullptr;
  auto c = std::make_unique<Shm>(std::move(rv));
  if (!c->Setup(error)) return nullptr;
  return c;
}

}  // namespace ladder::trainer::comm
