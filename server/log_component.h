#pragma once
// The component of the coordinator's log lines (common/log.h), defined once for the many files that log them:
// those files may share a translation unit (LADDER_UNITY_BUILD, docs/DEVELOPERS.md).

namespace ladder::server {
inline constexpr const char* kLog = "coordinator";
}  // namespace ladder::server
