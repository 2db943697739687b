#include "trainer/torchscript_file.h"

#include <caffe2/serialize/versions.h>
#include <sys/stat.h>
#include <unistd.h>
#include <torch/version.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

namespace ladder::trainer {

namespace {

uint32_t Le(const unsigned char* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

bool ReadAt(std::ifstream& in, uint64_t offset, size_t n, std::vector<unsigned char>* out) {
  out->assign(n, 0);
  in.clear();
  in.seekg(static_cast<std::streamoff>(offset));
  return static_cast<bool>(in.read(reinterpret_cast<char*>(out->data()), static_cast<std::streamsize>(n)));
}

// "ARCHIVE/version" or "ARCHIVE/.data/version": the record that holds the file format version.
bool IsVersionRecord(const std::string& name) {
  const auto slash = name.find('/');
  if (slash == std::string::npos) return false;
  const std::string rest = name.substr(slash + 1);
  return rest == "version" || rest == ".data/version";
}

}  // namespace

std::string OneLineError(const std::string& what) {
  std::string line = what.substr(0, what.find('\n'));
  if (line.find("failed in the TorchScript interpreter") != std::string::npos) {
    size_t end = what.find_last_not_of("\n ");
    if (end != std::string::npos) {
      const size_t start = what.rfind('\n', end), from = start == std::string::npos ? 0 : start + 1;
      line = what.substr(from, end + 1 - from);
    }
  }
  if (line.size() > 300) line = line.substr(0, 300) + "...";
  return line;
}

std::string LibTorchVersion() { return TORCH_VERSION; }

int64_t MaxReadableTorchScriptVersion() {
  return static_cast<int64_t>(caffe2::serialize::kMaxSupportedFileFormatVersion);
}

int64_t TorchScriptFileVersion(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return -1;
  const auto size = static_cast<uint64_t>(in.tellg());
  // The end-of-central-directory record (22 bytes and a comment of at most 64 KiB) closes the file.
  const uint64_t tail = std::min<uint64_t>(size, 22 + 65535);
  std::vector<unsigned char> end;
  if (tail < 22 || !ReadAt(in, size - tail, tail, &end)) return -1;
  int64_t eocd = -1;
  for (int64_t i = static_cast<int64_t>(tail) - 22; i >= 0 && eocd < 0; --i) {
    if (Le(&end[static_cast<size_t>(i)], 4) == 0x06054b50) eocd = i;
  }
  if (eocd < 0) return -1;
  const unsigned char* e = &end[static_cast<size_t>(eocd)];
  const uint32_t entries = Le(e + 10, 2), dir_size = Le(e + 12, 4), dir_offset = Le(e + 16, 4);
  std::vector<unsigned char> dir;
  if (static_cast<uint64_t>(dir_offset) + dir_size > size || !ReadAt(in, dir_offset, dir_size, &dir)) return -1;
  size_t at = 0;
  for (uint32_t k = 0; k < entries && at + 46 <= dir.size(); ++k) {
    const unsigned char* c = &dir[at];
    if (Le(c, 4) != 0x02014b50) return -1;
    const uint32_t method = Le(c + 10, 2), stored = Le(c + 20, 4), name_len = Le(c + 28, 2);
    const uint32_t extra_len = Le(c + 30, 2), comment_len = Le(c + 32, 2), local = Le(c + 42, 4);
    if (at + 46 + name_len > dir.size()) return -1;
    const std::string name(reinterpret_cast<const char*>(c + 46), name_len);
    at += 46 + name_len + extra_len + comment_len;
    if (!IsVersionRecord(name)) continue;
    std::vector<unsigned char> header, text;
    if (method != 0 || stored == 0 || stored > 32 || !ReadAt(in, local, 30, &header) ||
        Le(header.data(), 4) != 0x04034b50 ||
        !ReadAt(in, static_cast<uint64_t>(local) + 30 + Le(&header[26], 2) + Le(&header[28], 2), stored, &text)) {
      return -1;
    }
    int64_t v = 0;
    size_t digits = 0;
    for (; digits < text.size() && text[digits] >= '0' && text[digits] <= '9'; ++digits)
      v = v * 10 + (text[digits] - '0');
    return digits > 0 ? v : -1;
  }
  return -1;
}

bool LoadTorchScript(const std::string& path, torch::jit::Module* out, std::string* error) {
  const std::string prefix = "--model torchscript:" + path + ": ";
  const std::string libtorch = "LibTorch " + LibTorchVersion() + " (reads TorchScript file format versions " +
                               std::to_string(caffe2::serialize::kMinSupportedFileFormatVersion) + " to " +
                               std::to_string(MaxReadableTorchScriptVersion()) + ")";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || ::access(path.c_str(), R_OK) != 0) {
    *error = prefix + "cannot read it: " + std::strerror(errno);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    *error = prefix + "not a file";
    return false;
  }
  const int64_t version = TorchScriptFileVersion(path);
  if (version > MaxReadableTorchScriptVersion()) {
    *error = prefix + "written by a newer PyTorch than this ladder-train's " + libtorch +
             ": the file has format version " + std::to_string(version) + "; save it with PyTorch " +
             LibTorchVersion() + " or build ladder-train against a newer LibTorch";
    return false;
  }
  try {
    *out = torch::jit::load(path, torch::kCPU);
    return true;
  } catch (const c10::Error& e) {
    *error = OneLineError(e.what_without_backtrace());
  } catch (const std::exception& e) {
    *error = OneLineError(e.what());
  }
  *error = prefix +
           (version < 0 ? "not a TorchScript file (no zip archive with a version record): "
                        : "cannot be loaded by " + libtorch + " (the file has format version " +
                              std::to_string(version) + "; written by another PyTorch?): ") +
           *error;
  return false;
}

}  // namespace ladder::trainer
