#pragma once
// The component of the worker's log lines (common/log.h), defined once for the many files that log them:
// those files may share a translation unit (LADDER_UNITY_BUILD, docs/DEVELOPERS.md).

namespace ladder::worker {
inline constexpr const char* kLog = "worker";
}  // namespace ladder::worker
