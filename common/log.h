#pragma once
// One-line diagnostics on stderr: "2026-11-22T18:00:00.123Z I coordinator: message". Thread-safe (one write
// call per line). Daemons log through this; CLI output for people goes to stdout instead.
#include <string_view>

namespace ladder {
enum class LogLevel { kDebug, kInfo, kWarning, kError };
void Log(LogLevel level, std::string_view component, std::string_view message);
inline void LogInfo(std::string_view c, std::string_view m) { Log(LogLevel::kInfo, c, m); }
inline void LogWarning(std::string_view c, std::string_view m) { Log(LogLevel::kWarning, c, m); }
inline void LogError(std::string_view c, std::string_view m) { Log(LogLevel::kError, c, m); }
// Lines below this level are dropped; set once from main (LADDER_LOG=debug|info|warning|error).
void SetLogLevelFromEnv();
// Sets the level unless LADDER_LOG chose one (the CLI quiets its in-process daemons this way).
void SetDefaultLogLevel(LogLevel level);
}  // namespace ladder
