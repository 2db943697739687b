#pragma once
// Internal to ladder-stage (worker/stage*.cc): the helpers a file's copy, an archive's extraction and a node's
// share of shard files have in common.
#include <cstdint>
#include <optional>
#include <string>

#include "worker/stage.h"

namespace ladder::worker::internal {

std::string Errno(const std::string& what, const std::string& path);  // "what path: strerror(errno)"
std::string Bytes(uint64_t n);                                        // "512 bytes", "3.0 MiB", "1.20 GiB"
std::string Seconds(double s);                                        // "0.12 s"

// Free bytes where `dir` lives: options.free_bytes, else statvfs.
std::optional<uint64_t> FreeBytes(const StageOptions& options, const std::string& dir);

// Writes a small file by a temporary file and a rename.
bool WriteSmallFile(const std::string& path, const std::string& text, std::string* error);

// The manifest in `path` when it describes `from` at this size and mtime; its CRC-32.
std::optional<uint32_t> ManifestCrc(const std::string& path, const std::string& from, uint64_t size, int64_t mtime);

// Copies `from` (`size` bytes) into `tmp` (created new), computing the source's CRC-32, then reads `tmp` back and
// checks it; fsyncs it when `sync` (a caller copying many files syncs the filesystem once instead: SyncDir).
// "" or what went wrong (`tmp` removed then).
std::string CopyChecked(const std::string& from, const std::string& tmp, uint64_t size, uint32_t* crc_out,
                        bool sync = true);

// syncfs of the filesystem that holds `dir`: everything written there is on disk. "" or the error.
std::string SyncDir(const std::string& dir);

// An exclusive flock on `path` (created), held until destruction: the ranks of one node take turns; a rank that
// dies releases it with its descriptor.
class NodeLock {
 public:
  NodeLock() = default;
  NodeLock(const NodeLock&) = delete;
  NodeLock& operator=(const NodeLock&) = delete;
  ~NodeLock();
  std::string Lock(const std::string& path);  // "" once held
 private:
  int fd_ = -1;
};

}  // namespace ladder::worker::internal
