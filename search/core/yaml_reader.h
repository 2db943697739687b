#pragma once
// Internal to search/: reading a yaml-cpp tree while collecting every SpecError instead of stopping at the
// first. Each Read* reports a wrong type at the node's mark and returns nullopt; callers keep going.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "search/core/spec.h"

namespace ladder::search::internal {

class ErrorSink {
 public:
  explicit ErrorSink(std::string file) : file_(std::move(file)) {}
  void Add(const YAML::Mark& mark, std::string field, std::string message);
  // At the node's mark; an empty value (`key:` with nothing after it) is reported at its key, noted with
  // NoteKey, since yaml-cpp marks it where the next token starts.
  void At(const YAML::Node& node, std::string field, std::string message);
  void NoteKey(const YAML::Node& value, const YAML::Node& key);
  // Sorted by position (stable: errors at one node keep their order); errors without a position last.
  std::vector<SpecError> Take();
  bool empty() const { return errors_.empty(); }

 private:
  std::string file_;
  std::vector<SpecError> errors_;
  // An empty value's node -> its key's mark, by the value's position (looked up in At: linear in the spec).
  std::unordered_multimap<int, std::pair<YAML::Node, YAML::Mark>> null_keys_;
};

struct MapEntry {
  std::string key;
  YAML::Node key_node;
  YAML::Node value;
};
using MapEntries = std::vector<MapEntry>;

// "a.b" + "c" -> "a.b.c"; "" + "c" -> "c".
std::string JoinField(std::string_view parent, std::string_view key);

// How a node reads in an error message: 'text' for a scalar, "a mapping", "a sequence", "nothing".
std::string Describe(const YAML::Node& node);

// The entries of mapping `node` (whose dotted path is `field`). Reports a node that is not a mapping
// (returns nullopt), keys that are not scalars, duplicate keys, and keys not in `allowed` — naming the
// allowed ones and the closest if it is within edit distance 2. Reported entries are left out.
// An empty value (`budget:` with nothing after it) reads as an empty mapping.
std::optional<MapEntries> ReadMapping(ErrorSink& sink, const YAML::Node& node, const std::string& field,
                                      const std::vector<std::string>& allowed);

const MapEntry* Find(const MapEntries& entries, std::string_view key);

// A string that may hold placeholders, with where it was read (a section reader returns it for the spec
// reader's placeholder check).
struct TemplateText {
  YAML::Mark mark;
  std::string text;
};

std::optional<std::string> ReadString(ErrorSink& sink, const YAML::Node& node, const std::string& field);
std::optional<int64_t> ReadInt(ErrorSink& sink, const YAML::Node& node, const std::string& field,
                               int64_t min, int64_t max);
std::optional<uint64_t> ReadUint64(ErrorSink& sink, const YAML::Node& node, const std::string& field);
std::optional<double> ReadNumber(ErrorSink& sink, const YAML::Node& node, const std::string& field);
std::optional<bool> ReadBool(ErrorSink& sink, const YAML::Node& node, const std::string& field);
// One of `options` (a scalar); `extra` adds accepted spellings that are not listed in the message.
std::optional<std::string> ReadEnum(ErrorSink& sink, const YAML::Node& node, const std::string& field,
                                    const std::vector<std::string>& options,
                                    const std::vector<std::string>& extra = {});

std::string FormatNumber(double v);

bool IsIdentifier(std::string_view s);  // [A-Za-z_][A-Za-z0-9_]*

// Optimal-string-alignment edit distance (insert, delete, substitute, swap two neighbours).
int EditDistance(std::string_view a, std::string_view b);

// The candidate closest to `word` within edit distance 2, or empty.
std::string ClosestMatch(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace ladder::search::internal
