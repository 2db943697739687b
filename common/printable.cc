#include "common/printable.h"

#include <cstdint>
#include <cstdio>

namespace ladder {
namespace {

// The length of the UTF-8 sequence at s[i] and its code point, or 0 when it is not a valid sequence.
size_t DecodeUtf8(std::string_view s, size_t i, uint32_t* cp) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  size_t n = 0;
  uint32_t v = 0, min = 0;
  if ((c & 0xE0) == 0xC0) {
    n = 2, v = c & 0x1F, min = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3, v = c & 0x0F, min = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4, v = c & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xC0) != 0x80) return 0;
    v = (v << 6) | (b(k) & 0x3F);
  }
  if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
  *cp = v;
  return n;
}

// Code points that are valid but change how a terminal shows the rest: C1 controls, zero-width and
// bidirectional formatting characters, line/paragraph separators, BOM.
bool IsInvisible(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202E) ||
         (cp >= 0x2060 && cp <= 0x206F) || cp == 0xFEFF;
}

void AppendEscaped(std::string& out, char c) {
  switch (c) {
    case '\n': out += "\\n"; return;
    case '\r': out += "\\r"; return;
    case '\t': out += "\\t"; return;
    default: {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
      out += buf;
    }
  }
}

}  // namespace

namespace {

std::string Escape(std::string_view s, size_t max_bytes, bool keep_lines) {
  std::string out;
  const size_t limit = s.size() > max_bytes ? max_bytes : s.size();
  out.reserve(limit + 16);
  size_t i = 0;
  while (i < limit) {
    uint32_t cp = 0;
    const size_t n = DecodeUtf8(s, i, &cp);
    if (n == 0) {
      AppendEscaped(out, s[i]);
      ++i;
    } else if (n == 1) {
      if ((cp < 0x20 || cp == 0x7F) && !(keep_lines && (cp == '\n' || cp == '\t'))) {
        AppendEscaped(out, s[i]);
      } else {
        out += s[i];
      }
      ++i;
    } else if (IsInvisible(cp)) {
      char buf[12];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
      out += buf;
      i += n;
    } else {
      out.append(s.data() + i, n);
      i += n;
    }
  }
  if (limit < s.size()) out += "... (" + std::to_string(s.size()) + " bytes)";
  return out;
}

}  // namespace

std::string Printable(std::string_view s, size_t max_bytes) { return Escape(s, max_bytes, false); }

std::string PrintableText(std::string_view s, size_t max_bytes) { return Escape(s, max_bytes, true); }

bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    const size_t n = DecodeUtf8(s, i, &cp);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

}  // namespace ladder
