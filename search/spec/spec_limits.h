#pragma once
// Internal to search/: what a spec may cost before it is read. ParseSpec checks the text (size, UTF-8, control
// bytes) before yaml-cpp sees it, and the tree's shape (depth, entries per list or mapping, nodes counting each
// use of an alias, scalar length) before the reader walks it, so that every later pass is linear in a bounded
// input. Each refusal is one SpecError naming the line, the field and the limit.
//
// The same limits hold for `ladder search validate` and for CreateSearch on the coordinator's loop.

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "search/core/yaml_reader.h"

namespace ladder::search::internal {

inline constexpr size_t kMaxSpecBytes = 256 * 1024;   // of YAML (a real spec is a few KiB)
inline constexpr int kMaxSpecDepth = 32;              // nested lists and mappings
inline constexpr size_t kMaxSpecItems = 10000;        // entries of one list or mapping (categorical values too)
inline constexpr size_t kMaxSpecNodes = 50000;        // nodes in all, an alias counted at each use
inline constexpr size_t kMaxSpecScalarBytes = 64 * 1024;

// The text: its size, then the first byte that is not UTF-8 or is a control character other than tab, CR, LF.
// False (and one error in `sink`) when it is refused.
bool CheckSpecText(ErrorSink& sink, std::string_view text);

// The key of line `line` (0-based) of `text` when it reads `key: ...` or `- key: ...`, printable; "" otherwise.
// Names the field of an error that has only a position (a YAML syntax error).
std::string KeyOfLine(std::string_view text, int line);

// The parsed tree against the limits above; false (and one error) at the first node past one.
bool CheckSpecShape(ErrorSink& sink, const YAML::Node& root);

}  // namespace ladder::search::internal
