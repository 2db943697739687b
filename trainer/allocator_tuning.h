#pragma once
// Keeps the C library's allocator from handing memory back to the kernel between training steps.
//
// Every step frees and allocates again the same activation and gradient temporaries. With glibc's defaults,
// blocks of 128 KiB and more (a 64 x 512 float activation is exactly that) are mmap'd and unmapped each time,
// and the heap top is given back whenever more than twice that is free there, so the next step touches fresh
// pages: hundreds of page faults per step, each zeroing a page (and dearer in a VM). With a 32 MiB mmap threshold
// and a 1 GiB trim threshold the allocator reuses that memory instead, as tcmalloc and jemalloc (which PyTorch's
// CPU performance guide recommends) do by design; the process keeps up to its peak heap until it exits.
//
// Lifecycle: call once at start-up, before other threads exist. It changes nothing when the environment already
// chooses (GLIBC_TUNABLES, MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_ or MALLOC_TOP_PAD_ set) or when the C
// library is not glibc.
#include <cstdint>
#include <string>

namespace ladder::trainer {

inline constexpr int64_t kDefaultMmapThresholdBytes = int64_t{32} << 20;  // glibc's largest allowed value
inline constexpr int64_t kDefaultTrimThresholdBytes = int64_t{1} << 30;

struct AllocatorOptions {
  int64_t mmap_threshold_bytes = kDefaultMmapThresholdBytes;
  int64_t trim_threshold_bytes = kDefaultTrimThresholdBytes;
};

// Returns what it did, in words ("mmap threshold 32 MiB, trim threshold 1024 MiB", or why it did nothing).
std::string TuneAllocator(const AllocatorOptions& options = {});

}  // namespace ladder::trainer
