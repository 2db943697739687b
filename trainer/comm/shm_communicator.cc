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
// Gradient buffers (NewBuffer, what the reducer's buckets are views of) live in segments of their own, one slot
// per rank, so that autograd writes each rank's gradient where the others can read it: an allreduce of a tensor in
// such a buffer copies nothing in or out. After a barrier, rank r sums share r of the tensor over all slots (in
// rank order, into slot 0) and copies that sum into every other slot; after a second barrier every slot holds the
// whole sum. About a third of the memory traffic of the copying path (bench/trainer_vs_pytorch). When a segment
// cannot be made on every rank (a full /dev/shm), all ranks fall back to ordinary buffers together.
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
#include <cstdio>
#include <map>
#include <mutex>
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

// The shared gradient buffers this process mapped: each rank's slot, by address (shared with the tensors'
// deleters, which unmap a segment and forget it when its buffer dies).
struct SharedBuffers {
  struct Segment {
    char* base;        // the mapping: `ranks` slots of `slot_bytes`
    size_t slot_bytes;
    size_t bytes;
  };
  std::mutex mu;
  std::map<char*, Segment> by_own_slot;  // own slot's start → its segment
};

class Shm final : public Communicator {
 public:
  explicit Shm(Rendezvous rv) : rv_(std::move(rv)), chunk_(ChunkBytes(rv_.size)) {}

  ~Shm() override {
    if (base_) munmap(base_, bytes_);
  }

  bool Setup(std::string* error) {
    bytes_ = sizeof(Header) + chunk_ * static_cast<size_t>(rv_.size + 1);
    std::string name;
    void* p = MapSegment("shm/name", bytes_, &name, error);
    if (!p) return false;
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

  torch::Tensor NewBuffer(int64_t numel, const torch::TensorOptions& options) override {
    if (!options.device().is_cpu() || numel <= 0) return Communicator::NewBuffer(numel, options);
    const size_t esize = c10::elementSize(c10::typeMetaToScalarType(options.dtype()));
    const size_t slot = (static_cast<size_t>(numel) * esize + 4095) / 4096 * 4096;
    const size_t bytes = slot * static_cast<size_t>(rv_.size);
    const std::string key = "shm/buffer" + std::to_string(buffers_made_++);
    std::string name, error;
    void* p = MapSegment(key, bytes, &name, &error);
    // Every rank must have its mapping, or none uses one: the allreduce of a shared buffer reads the others' slots.
    int64_t mapped = 0;
    try {
      rv_.store->add(key + "/mapped", p ? 1 : 0);
      Barrier();
      mapped = rv_.store->add(key + "/mapped", 0);
      Barrier();  // nobody unlinks before everyone has opened it
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (rv_.rank == 0 && !name.empty()) shm_unlink(name.c_str());
    if (mapped != rv_.size) {
      if (p) munmap(p, bytes);
      if (rv_.rank == 0) {
        std::fprintf(stderr, "ladder-train: shm backend: gradient buffers are not shared (%s); copying instead\n",
                     error.empty() ? "a rank could not map its segment" : error.c_str());
      }
      return Communicator::NewBuffer(numel, options);
    }
    char* base = static_cast<char*>(p);
    char* own = base + slot * static_cast<size_t>(rv_.rank);
    {
      std::lock_guard<std::mutex> g(shared_->mu);
      shared_->by_own_slot[own] = {base, slot, bytes};
    }
    auto shared = shared_;
    return torch::from_blob(
        own, {numel},
        [shared, own, base, bytes](void*) {
          {
            std::lock_guard<std::mutex> g(shared->mu);
            shared->by_own_slot.erase(own);
          }
          munmap(base, bytes);
        },
        options);
  }

  std::string backend() const override { return "shm"; }
  int rank() const override { return rv_.rank; }
  int size() const override { return rv_.size; }
  int local_rank() const override { return rv_.local_rank; }

  std::unique_ptr<Work> AllreduceSum(torch::Tensor& t) override {
    TORCH_CHECK(t.is_cpu() && t.is_contiguous(), "shm backend: tensors must be contiguous CPU tensors");
    if (InSharedBuffer(t)) return std::make_unique<DoneWork>();
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
  // The allreduce of a tensor inside a shared buffer (NewBuffer), in place in every rank's slot; false when `t`
  // is not in one.
  bool InSharedBuffer(torch::Tensor& t) {
    char* p = static_cast<char*>(t.data_ptr());
    SharedBuffers::Segment seg{};
    char* own = nullptr;
    {
      std::lock_guard<std::mutex> g(shared_->mu);
      auto it = shared_->by_own_slot.upper_bound(p);
      if (it == shared_->by_own_slot.begin()) return false;
      --it;
      const size_t end = static_cast<size_t>(p - it->first) + t.nbytes();
      if (p < it->first || end > it->second.slot_bytes) return false;
      own = it->first;
      seg = it->second;
    }
    const size_t offset = static_cast<size_t>(p - own);
    const int64_t n = t.numel();
    const int64_t lo = n * rv_.rank / rv_.size, hi = n * (rv_.rank + 1) / rv_.size;
    auto slot = [&](int r) {
      return torch::from_blob(seg.base + seg.slot_bytes * static_cast<size_t>(r) + offset, {n}, t.options());
    };
    Barrier();  // every rank's gradient is in its slot
    if (hi > lo) {
      auto sum = slot(0).narrow(0, lo, hi - lo);
      for (int r = 1; r < rv_.size; ++r) sum.add_(slot(r).narrow(0, lo, hi - lo));
      for (int r = 1; r < rv_.size; ++r) slot(r).narrow(0, lo, hi - lo).copy_(sum);
    }
    Barrier();  // every share is summed into every slot
    return true;
  }

  // Rank 0 creates a segment of `bytes` (shm_open O_EXCL, 0600, a random name) and publishes its name under
  // `key` in the rendezvous store; the others open it. Returns the mapping, or nullptr with *error. The caller
  // unlinks the name (rank 0) once every rank has it mapped.
  void* MapSegment(const std::string& key, size_t bytes, std::string* name, std::string* error) {
    int fd = -1;
    try {
      if (rv_.rank == 0) {
        std::random_device rd;
        *name = "/ladder-shm-" + std::to_string(getpid()) + "-" + std::to_string(rd()) + std::to_string(rd());
        fd = shm_open(name->c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
        // posix_fallocate, not only ftruncate: a sparse segment in a /dev/shm too small for it (a container's
        // 64 MB) would kill the ranks with SIGBUS at the first write instead of failing here.
        int rc = fd < 0 ? errno : ftruncate(fd, static_cast<off_t>(bytes)) != 0 ? errno : 0;
        if (rc == 0) rc = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
        if (rc != 0) {
          *error = "shm backend: cannot create a shared segment of " + std::to_string(bytes) + " bytes in /dev/shm (" +
                   std::strerror(rc) + ")";
          if (fd >= 0) close(fd), shm_unlink(name->c_str());
          name->clear();
          rv_.store->set(key, {});  // the others learn that there is none
          return nullptr;
        }
        rv_.store->set(key, std::vector<uint8_t>(name->begin(), name->end()));
      } else {
        const auto v = rv_.store->get(key);
        const std::string theirs(v.begin(), v.end());
        if (theirs.empty()) {
          *error = "shm backend: rank 0 could not create the shared segment";
          return nullptr;
        }
        fd = shm_open(theirs.c_str(), O_RDWR | O_CLOEXEC, 0);
        if (fd < 0) {
          *error = "shm backend: rank " + std::to_string(rv_.rank) + " cannot open rank 0's segment " + theirs +
                   " (" + std::strerror(errno) + "): are all ranks on one node?";
          return nullptr;
        }
      }
    } catch (const std::exception& e) {
      if (fd >= 0) close(fd);
      *error = std::string("shm backend: rendezvous failed: ") + e.what();
      return nullptr;
    }
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
      *error = "shm backend: cannot map a shared segment of " + std::to_string(bytes) + " bytes (" +
               std::strerror(errno) + ")";
      return nullptr;
    }
    return p;
  }

  torch::Tensor Slot(int r, int64_t n, const torch::TensorOptions& opts) {
    return torch::from_blob(base_ + sizeof(Header) + chunk_ * static_cast<size_t>(r), {n}, opts);
  }
  torch::Tensor Result(int64_t n, const torch::TensorOptions& opts) { return Slot(rv_.size, n, opts); }

  Rendezvous rv_;
  size_t chunk_;
  size_t bytes_ = 0;
  char* base_ = nullptr;
  Header* header_ = nullptr;
  int buffers_made_ = 0;
  std::shared_ptr<SharedBuffers> shared_ = std::make_shared<SharedBuffers>();
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
