#include "trainer/allocator_tuning.h"

#include <cstdlib>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace ladder::trainer {

std::string TuneAllocator(const AllocatorOptions& o) {
#if defined(__GLIBC__)
  for (const char* var : {"GLIBC_TUNABLES", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_"}) {
    if (std::getenv(var) != nullptr) return std::string("left as set by ") + var;
  }
  if (mallopt(M_MMAP_THRESHOLD, static_cast<int>(o.mmap_threshold_bytes)) != 1 ||
      mallopt(M_TRIM_THRESHOLD, static_cast<int>(o.trim_threshold_bytes)) != 1) {
    return "mallopt refused the thresholds; left as they were";
  }
  return "mmap threshold " + std::to_string(o.mmap_threshold_bytes >> 20) + " MiB, trim threshold " +
         std::to_string(o.trim_threshold_bytes >> 20) + " MiB";
#else
  (void)o;
  return "not glibc; left as it is";
#endif
}

}  // namespace ladder::trainer
