#pragma once
// A terminal screen (tmux capture-pane -e: text with SGR escapes) as an HTML page that looks like the terminal,
// so a test can screenshot a TUI with headless Chromium. Only what ncurses sends for ladder watch is drawn:
// bold (1), reverse video (7) and their resets (0, 22, 27); other escapes are dropped.
#include <string>

namespace ladder::testing {

inline std::string AnsiScreenToHtml(const std::string& screen, const std::string& title) {
  std::string out = "<!doctype html><meta charset=utf-8><title>" + title +
                    "</title><style>body{margin:0;background:#1d2430}pre{margin:0;padding:10px;color:#e6e9ef;"
                    "font:14px/1.25 'DejaVu Sans Mono',monospace}.r{background:#e6e9ef;color:#1d2430}.b{font-weight:"
                    "700;color:#fff}.r.b{color:#000}</style><pre>";
  bool bold = false, reverse = false, open = false;
  auto restyle = [&] {
    if (open) out += "</span>";
    open = bold || reverse;
    if (open) out += std::string("<span class='") + (reverse ? "r " : "") + (bold ? "b" : "") + "'>";
  };
  for (size_t i = 0; i < screen.size(); ++i) {
    const char c = screen[i];
    if (c == '\x1b' && i + 1 < screen.size() && screen[i + 1] == '[') {
      size_t end = screen.find_first_of("ABCDEFGHJKSTfmnsulh", i + 2);
      if (end == std::string::npos) break;
      if (screen[end] == 'm') {
        std::string codes = screen.substr(i + 2, end - i - 2);
        if (codes.empty()) codes = "0";
        size_t from = 0;
        while (from <= codes.size()) {
          size_t semi = codes.find(';', from);
          if (semi == std::string::npos) semi = codes.size();
          const std::string code = codes.substr(from, semi - from);
          if (code == "0" || code.empty()) bold = reverse = false;
          if (code == "1") bold = true;
          if (code == "22") bold = false;
          if (code == "7") reverse = true;
          if (code == "27") reverse = false;
          from = semi + 1;
        }
        restyle();
      }
      i = end;
      continue;
    }
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  if (open) out += "</span>";
  return out + "</pre>";
}

}  // namespace ladder::testing
