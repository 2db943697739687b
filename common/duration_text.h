#pragma once
// Durations and instants as people write and read them: "90s", "15m", "8h", "30d" on command lines (token
// expiry, dashboard session lifetimes), and a UTC time in messages ("2026-11-27 06:00:00 UTC").
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ladder {

// Seconds of a positive whole number with one unit: s, m, h or d ("30d" = 2,592,000). nullopt for anything else
// (no unit, another unit, zero, a sign, a fraction, more than 100 years); DurationTextError says why.
std::optional<int64_t> ParseDurationSeconds(std::string_view text);
// "" when `text` parses, else why not, naming the text ("'30x': the unit must be s, m, h or d (e.g. 30d)").
std::string DurationTextError(std::string_view text);
// The shortest of the same units that says `seconds` exactly: 86400 -> "1d", 5400 -> "90m", 61 -> "61s".
std::string FormatDurationSeconds(int64_t seconds);
// `unix_seconds` as "YYYY-MM-DD HH:MM:SS UTC".
std::string FormatUtc(double unix_seconds);

}  // namespace ladder
