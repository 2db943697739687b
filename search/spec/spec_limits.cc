#include "search/spec/spec_limits.h"

#include <string>
#include <vector>

#include "common/printable.h"

namespace ladder::search::internal {
namespace {

std::string KeyOfText(std::string_view line) {
  size_t i = line.find_first_not_of(" -\t");
  if (i == std::string_view::npos || line[i] == '#') return "";
  size_t colon = line.find(": ", i);
  if (colon == std::string_view::npos && line.back() == ':') colon = line.size() - 1;
  if (colon == std::string_view::npos) return "";
  std::string_view key = line.substr(i, colon - i);
  if (key.empty() || key.find_first_of("{}[],\"'") != std::string_view::npos) return "";
  while (!key.empty() && key.back() == ' ') key.remove_suffix(1);
  return Printable(key, 64);
}

class ShapeWalk {
 public:
  explicit ShapeWalk(ErrorSink& sink) : sink_(sink) {}

  bool Walk(const YAML::Node& n, const std::string& field, int depth) {
    if (++nodes_ > kMaxSpecNodes) {
      sink_.At(n, field, "the spec has more than " + std::to_string(kMaxSpecNodes) +
                             " values (an alias counts at each use); refused");
      return false;
    }
    if (n.IsScalar()) {
      if (n.Scalar().size() > kMaxSpecScalarBytes) {
        sink_.At(n, field, "a value of " + std::to_string(n.Scalar().size()) + " bytes; the limit is " +
                               std::to_string(kMaxSpecScalarBytes));
        return false;
      }
      return true;
    }
    if (!n.IsSequence() && !n.IsMap()) return true;
    if (depth >= kMaxSpecDepth) {
      sink_.At(n, field, "nested deeper than " + std::to_string(kMaxSpecDepth) + " levels; refused");
      return false;
    }
    size_t items = 0;
    for (auto it = n.begin(); it != n.end(); ++it, ++items) {
      if (items == kMaxSpecItems) {
        sink_.At(n, field, std::string("more than ") + std::to_string(kMaxSpecItems) + " " +
                               (n.IsMap() ? "entries" : "items") + "; the limit is " + std::to_string(kMaxSpecItems));
        return false;
      }
      if (n.IsSequence()) {
        if (!Walk(*it, field + "[" + std::to_string(items) + "]", depth + 1)) return false;
      } else {
        const std::string key = it->first.IsScalar() ? Printable(it->first.Scalar(), 64) : "?";
        if (!Walk(it->first, JoinField(field, key), depth + 1)) return false;
        if (!Walk(it->second, JoinField(field, key), depth + 1)) return false;
      }
    }
    return true;
  }

 private:
  ErrorSink& sink_;
  size_t nodes_ = 0;
};

}  // namespace

bool CheckSpecText(ErrorSink& sink, std::string_view text) {
  if (text.size() > kMaxSpecBytes) {
    YAML::Mark start;
    start.line = 0, start.column = 0;
    sink.Add(start, "", "the spec is " + std::to_string(text.size()) + " bytes; the limit is " +
                            std::to_string(kMaxSpecBytes));
    return false;
  }
  size_t line_start = 0;
  int line = 0;
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      ++line;
      line_start = ++i;
      continue;
    }
    size_t n = 1;
    bool ok = c >= 0x20 || c == '\t' || c == '\r';
    if (c == 0x7F) ok = false;
    if (c >= 0x80) {
      n = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
      ok = n != 0 && i + n <= text.size() && IsValidUtf8(text.substr(i, n));
      if (!ok) n = 1;
    }
    if (!ok) {
      size_t eol = text.find('\n', i);
      std::string_view whole = text.substr(line_start, eol == std::string_view::npos ? std::string_view::npos
                                                                                      : eol - line_start);
      YAML::Mark mark;
      mark.line = line;
      mark.column = static_cast<int>(i - line_start);
      sink.Add(mark, KeyOfText(whole),
               std::string(c >= 0x80 ? "not UTF-8" : "a control character") + " (byte " +
                   Printable(text.substr(i, 1)) + "); a spec is UTF-8 text");
      return false;
    }
    i += n;
  }
  return true;
}

std::string KeyOfLine(std::string_view text, int line) {
  // The lines' starts up to `line`; then the nearest line at or above it that has a key (an error at the end of
  // the text, "end of map flow not found", belongs to the entry above it).
  std::vector<size_t> starts = {0};
  for (size_t pos = 0; static_cast<int>(starts.size()) <= line;) {
    pos = text.find('\n', pos);
    if (pos == std::string_view::npos) break;
    starts.push_back(++pos);
  }
  for (size_t k = starts.size(); k-- > 0;) {
    size_t eol = text.find('\n', starts[k]);
    std::string key =
        KeyOfText(text.substr(starts[k], eol == std::string_view::npos ? std::string_view::npos : eol - starts[k]));
    if (!key.empty() || starts.size() - k > 8) return key;
  }
  return "";
}

bool CheckSpecShape(ErrorSink& sink, const YAML::Node& root) {
  return ShapeWalk(sink).Walk(root, "", 0);
}

}  // namespace ladder::search::internal
