#include "search/core/command_template.h"

#include <cctype>

namespace ladder::search {

std::vector<std::string> SplitCommandLine(const std::string& line, std::string* error) {
  std::vector<std::string> words;
  std::string cur;
  bool in_word = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char ch = line[i];
    if (ch == '\'') {
      size_t end = line.find('\'', i + 1);
      if (end == std::string::npos) {
        *error = "unterminated single quote at character " + std::to_string(i + 1);
        return {};
      }
      cur += line.substr(i + 1, end - i - 1);
      in_word = true;
      i = end;
    } else if (ch == '"') {
      size_t j = i + 1;
      for (; j < line.size() && line[j] != '"'; ++j) {
        if (line[j] == '\\' && j + 1 < line.size() &&
            (line[j + 1] == '"' || line[j + 1] == '\\' || line[j + 1] == '$' || line[j + 1] == '`')) {
          ++j;
        }
        cur += line[j];
      }
      if (j >= line.size()) {
        *error = "unterminated double quote at character " + std::to_string(i + 1);
        return {};
      }
      in_word = true;
      i = j;
    } else if (ch == '\\' && i + 1 < line.size()) {
      cur += line[++i];
      in_word = true;
    } else if (std::isspace(static_cast<unsigned char>(ch))) {
      if (in_word) words.push_back(cur), cur.clear(), in_word = false;
    } else {
      cur += ch;
      in_word = true;
    }
  }
  if (in_word) words.push_back(cur);
  return words;
}

ParsedTemplate ParseTemplate(const std::string& text) {
  ParsedTemplate out;
  std::string lit;
  auto flush = [&] {
    if (!lit.empty()) out.pieces.push_back({false, lit}), lit.clear();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char ch = text[i];
    if (ch == '{') {
      if (i + 1 < text.size() && text[i + 1] == '{') {
        lit += '{';
        ++i;
        continue;
      }
      size_t end = text.find('}', i + 1);
      std::string name = end == std::string::npos ? "" : text.substr(i + 1, end - i - 1);
      bool ident = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
      for (char c : name) ident = ident && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
      if (!ident) {
        out.error = "malformed placeholder at character " + std::to_string(i + 1) +
                    " (placeholders look like {name}; write {{ and }} for literal braces)";
        return out;
      }
      flush();
      out.pieces.push_back({true, name});
      i = end;
    } else if (ch == '}') {
      if (i + 1 < text.size() && text[i + 1] == '}') {
        lit += '}';
        ++i;
        continue;
      }
      out.error = "unmatched '}' at character " + std::to_string(i + 1) + " (write }} for a literal brace)";
      return out;
    } else {
      lit += ch;
    }
  }
  flush();
  return out;
}

}  // namespace ladder::search
