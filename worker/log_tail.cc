#include "worker/log_tail.h"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>

#include "common/printable.h"

namespace ladder::worker {

int64_t FileSize(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return -1;
  return static_cast<int64_t>(st.st_size);
}

namespace {

// The file's last `max_bytes` bytes from byte `since` on, and whether that is all of it from `since`.
std::string ReadEnd(const std::string& path, size_t max_bytes, bool* whole, int64_t* size, int64_t since = 0) {
  std::ifstream in(path, std::ios::binary);
  if (size) *size = -1;
  if (!in) return "";
  in.seekg(0, std::ios::end);
  const std::streamoff end = in.tellg();
  if (end < 0) return "";
  if (size) *size = static_cast<int64_t>(end);
  const std::streamoff first = std::min<std::streamoff>(std::max<int64_t>(0, since), end);
  const std::streamoff from = std::max<std::streamoff>(first, end - static_cast<std::streamoff>(max_bytes));
  *whole = from == first;
  in.seekg(from);
  std::string text(static_cast<size_t>(end - from), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(std::max<std::streamsize>(0, in.gcount())));
  return text;
}

}  // namespace

std::string LogTail(const std::string& path, size_t max_bytes, int64_t* size, int64_t since) {
  bool whole = true;
  std::string text = ReadEnd(path, max_bytes, &whole, size, since);
  if (!whole) {  // the first line was cut by the byte limit: drop it
    const size_t nl = text.find('\n');
    text = nl == std::string::npos ? "" : text.substr(nl + 1);
  }
  const size_t end = text.find_last_not_of(" \t\r\n");
  // Escaped: it goes out in a proto string (which must be UTF-8: raw bytes made the coordinator drop the whole
  // message) and onto terminals (no escape sequences).
  return end == std::string::npos ? "" : PrintableText(std::string_view(text).substr(0, end + 1));
}

std::string LastLine(const std::string& path) {
  bool whole = true;
  const std::string tail = ReadEnd(path, 4096, &whole, nullptr);
  const size_t end = tail.find_last_not_of(" \t\r\n");
  if (end == std::string::npos) return "";
  size_t start = tail.find_last_of('\n', end);
  start = start == std::string::npos ? 0 : start + 1;
  std::string line = tail.substr(start, end - start + 1);
  return line.size() > 200 ? Printable(line.substr(0, 200)) + "..." : Printable(line);
}

}  // namespace ladder::worker
