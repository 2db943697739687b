#pragma once
// Command-line templates: splitting a command string into words like a POSIX shell would (without running
// one), and parsing {placeholder} pieces ({{ and }} are literal braces).
#include <string>
#include <vector>

namespace ladder::search {

// Splits on unquoted whitespace; 'single quotes' are literal, "double quotes" allow \" \\ \$ \`, a backslash
// outside quotes escapes the next character. Sets *error on an unterminated quote.
std::vector<std::string> SplitCommandLine(const std::string& line, std::string* error);

struct TemplatePiece {
  bool is_placeholder = false;
  std::string text;  // literal text, or the placeholder's name
};
struct ParsedTemplate {
  std::vector<TemplatePiece> pieces;
  std::string error;  // malformed braces, with a hint
};
ParsedTemplate ParseTemplate(const std::string& text);

}  // namespace ladder::search
