#pragma once
// Text from a file, a socket or a trial's stdout made safe to put in an error message or a log line: valid,
// printable UTF-8 is kept; anything else is escaped so that a message never carries raw bytes (mojibake on a
// terminal, control sequences, bidirectional overrides) and never grows with its input.
//
//   Printable("ab\x01")       -> ab\x01          (a byte that is not printable UTF-8: \xNN)
//   Printable("a\tb\n")       -> a\tb\n
//   Printable("\u202e")       -> \u202e          (C1 controls, bidi and zero-width format characters: \uNNNN)
//   Printable(10 MB, 80)      -> the first ~80 bytes then "... (10485760 bytes)"
//
// Pure and thread-agnostic; linear in min(s.size(), max_bytes).
#include <cstddef>
#include <string>
#include <string_view>

namespace ladder {

inline constexpr size_t kDefaultPrintableBytes = 200;

std::string Printable(std::string_view s, size_t max_bytes = kDefaultPrintableBytes);

// As Printable, but newlines and tabs are kept: a log's tail shown as lines (a trial's stderr), still without raw
// bytes or terminal escape sequences. Unbounded unless max_bytes says otherwise.
std::string PrintableText(std::string_view s, size_t max_bytes = static_cast<size_t>(-1));

// True when `s` is valid UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF).
bool IsValidUtf8(std::string_view s);

}  // namespace ladder
