#include "trainer/allocator_tuning.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace ladder::trainer {
namespace {

const char* const kAllocatorVariables[] = {"GLIBC_TUNABLES", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_",
                                           "MALLOC_TOP_PAD_"};

// Its own test binary: the thresholds are process-wide.
TEST(AllocatorTuning, FreedBlocksStayInTheHeapForReuse) {
#if !defined(__GLIBC__)
  GTEST_SKIP() << "not glibc";
#elif defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's allocator replaces glibc's: mallopt and mallinfo2 do not reach it";
#else
  for (const char* v : kAllocatorVariables) unsetenv(v);
  EXPECT_EQ(TuneAllocator(), "mmap threshold 32 MiB, trim threshold 1024 MiB");
  constexpr size_t kBytes = 4 << 20;  // far above glibc's default 128 KiB mmap threshold
  const auto before = mallinfo2();
  static void* volatile block;
  block = std::malloc(kBytes);
  ASSERT_NE(block, nullptr);
  std::memset(block, 1, kBytes);
  const auto during = mallinfo2();
  EXPECT_EQ(during.hblkhd, before.hblkhd) << "the block was mmap'd instead of taken from the heap";
  std::free(block);
  const auto after = mallinfo2();
  EXPECT_GE(after.arena, during.arena) << "the heap was trimmed: the next step would fault the pages in again";
  EXPECT_GE(after.fordblks, kBytes) << "the freed block is kept for reuse";
#endif
}

TEST(AllocatorTuning, TheEnvironmentWins) {
  setenv("MALLOC_TRIM_THRESHOLD_", "0", 1);
#if defined(__GLIBC__)
  EXPECT_EQ(TuneAllocator(), "left as set by MALLOC_TRIM_THRESHOLD_");
#else
  EXPECT_EQ(TuneAllocator(), "not glibc; left as it is");
#endif
  unsetenv("MALLOC_TRIM_THRESHOLD_");
}

}  // namespace
}  // namespace ladder::trainer
