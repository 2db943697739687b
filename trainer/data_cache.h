#pragma once
// Datasets loaded once per ladder-train --zygote instead of once per trial. Before it forks a trial,
// the zygote loads the trial's --data into this process-wide cache (PreloadData); the child inherits the parsed
// rows in the memory it was forked with (copy-on-write: nothing is copied unless written) and takes them from
// here (FindData) instead of reading and parsing the file again, which on digits costs about as much as an
// epoch. A cold ladder-train never preloads, so it never finds anything and loads as before.
//
// An entry is used only when it was loaded from the same --data text, with the same options, and every file that
// text names is still the same file: device, inode, size and modification time (nanoseconds) as stat(2) says now,
// in the child's own working directory. A file rewritten, replaced or moved since is loaded again by the child,
// as a cold start would. Generated data (synthetic:, teacher:, climate:, cosmo:, markov:) has no file and is always
// the same; hdf5: is never preloaded (each rank reads its own rows). Bounded: at most kMaxDataCacheBytes of rows in all (the least recently used entry goes first); a dataset
// larger than that (or whose files are) is not cached, and each of its trials loads it itself.
#include <cstdint>
#include <string>

#include "trainer/data_sources.h"

namespace ladder::trainer {

inline constexpr int64_t kMaxDataCacheBytes = int64_t{1} << 30;

// The cached dataset for `spec` if it is still current, else nullptr. The pointer stays valid in this process
// until the next PreloadData.
const Dataset* FindData(const std::string& spec, const DataOptions& options);

// Loads `spec` (relative paths against the working directory) into the cache unless a current entry is there.
// true when the cache now holds it; false with *error when it cannot be loaded or is too large to keep (the
// child then loads it itself and reports its own error).
// `max_bytes` bounds the cache (tests give a small one).
bool PreloadData(const std::string& spec, const DataOptions& options, std::string* error,
                 int64_t max_bytes = kMaxDataCacheBytes);

// Bytes of rows the cache holds (for tests).
int64_t DataCacheBytes();

}  // namespace ladder::trainer
