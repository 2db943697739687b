#pragma once
// The end of a trial's stderr log, for the coordinator's dashboards: what a person would read with `tail`.
#include <cstdint>
#include <string>

namespace ladder::worker {

inline constexpr size_t kLogTailBytes = 4096;

// The last whole lines of the file within its final `max_bytes` bytes (a partial first line is dropped, trailing
// blank space too); "" when the file is missing, empty or unreadable. `size`, when given, gets the file's size
// (-1 when it cannot be read), so a caller can tell whether the log grew since it last looked.
// `since`: only what the file holds from that byte on (what one run appended to a log several runs share).
std::string LogTail(const std::string& path, size_t max_bytes = kLogTailBytes, int64_t* size = nullptr,
                    int64_t since = 0);

// The last non-blank line of the file, at most 200 characters ("" when there is none or it cannot be read).
std::string LastLine(const std::string& path);

// The file's size in bytes (-1 when it cannot be read).
int64_t FileSize(const std::string& path);

}  // namespace ladder::worker
