#include "worker/stage.h"

#include "worker/stage_internal.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

namespace ladder::worker {

namespace {
constexpr size_t kChunk = 4 << 20;
}  // namespace

namespace internal {

std::string Errno(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

std::string Bytes(uint64_t n) {
  char buf[32];
  if (n >= (uint64_t{1} << 30)) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(n) / (1 << 30));
  } else if (n >= (uint64_t{1} << 20)) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(n) / (1 << 20));
  } else {
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(n));
  }
  return buf;
}

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

std::optional<uint64_t> FreeBytes(const StageOptions& options, const std::string& dir) {
  if (options.free_bytes) return options.free_bytes(dir);
  struct statvfs v {};
  if (::statvfs(dir.c_str(), &v) != 0) return std::nullopt;
  return static_cast<uint64_t>(v.f_bavail) * v.f_frsize;
}

NodeLock::~NodeLock() {
  if (fd_ >= 0) ::close(fd_);
}

std::string NodeLock::Lock(const std::string& path) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) return Errno("cannot open", path);
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno != EINTR) return Errno("cannot lock", path);
  }
  return "";
}

std::optional<uint32_t> ManifestCrc(const std::string& path, const std::string& from, uint64_t size, int64_t mtime) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (!j.is_object() || j.value("from", "") != from || j.value("size", uint64_t{0}) != size ||
      j.value("mtime_ns", int64_t{0}) != mtime || !j.contains("crc32")) {
    return std::nullopt;
  }
  return j["crc32"].get<uint32_t>();
}

bool WriteSmallFile(const std::string& path, const std::string& text, std::string* error) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      *error = Errno("cannot write", tmp);
      return false;
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    *error = Errno("cannot rename to", path);
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

std::string CopyChecked(const std::string& from, const std::string& tmp, uint64_t size, uint32_t* crc_out,
                        bool sync) {
  const int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return Errno("cannot read", from);
  const int out = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (out < 0) {
    const std::string e = Errno("cannot create", tmp);
    ::close(in);
    return e;
  }
  // Sized to the file: a 4 MiB buffer zeroed for each of many small files cost more than copying them.
  std::vector<unsigned char> buf(static_cast<size_t>(std::min<uint64_t>(kChunk, size + 1)));
  uLong crc = crc32(0L, Z_NULL, 0);
  uint64_t copied = 0;
  std::string error;
  for (;;) {
    const ssize_t n = ::read(in, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = Errno("cannot read", from);
      break;
    }
    if (n == 0) break;
    crc = crc32(crc, buf.data(), static_cast<uInt>(n));
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = ::write(out, buf.data() + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) {
        error = Errno("cannot write", tmp);  // ENOSPC among others
        break;
      }
      done += w;
    }
    if (!error.empty()) break;
    copied += static_cast<uint64_t>(n);
  }
  ::close(in);
  if (error.empty() && sync && ::fsync(out) != 0) error = Errno("cannot sync", tmp);
  if (::close(out) != 0 && error.empty()) error = Errno("cannot write", tmp);
  if (error.empty() && copied != size) {
    error = "the source " + from + " changed while it was copied (" + std::to_string(size) + " bytes before, " +
            std::to_string(copied) + " read)";
  }
  if (error.empty()) {
    uint64_t back_size = 0;
    auto back = FileCrc32(tmp, &back_size, &error);
    if (back && (*back != crc || back_size != size)) {
      error = "the copy " + tmp + " does not read back as written (CRC-32 or size differ): the local disk is faulty?";
    }
  }
  if (!error.empty()) {
    ::unlink(tmp.c_str());
    return error;
  }
  *crc_out = static_cast<uint32_t>(crc);
  return "";
}

std::string SyncDir(const std::string& dir) {
  const int d = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d < 0) return Errno("cannot open", dir);
  const int r = ::syncfs(d);
  std::string error = r != 0 ? Errno("cannot sync", dir) : "";
  ::close(d);
  return error;
}

}  // namespace internal

using namespace internal;

bool StatFile(const std::string& path, uint64_t* size, int64_t* mtime_ns) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  *size = static_cast<uint64_t>(st.st_size);
  *mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return true;
}

std::optional<uint32_t> FileCrc32(const std::string& path, uint64_t* size, std::string* error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = Errno("cannot read", path);
    return std::nullopt;
  }
  struct stat st {};
  const uint64_t length = ::fstat(fd, &st) == 0 && st.st_size > 0 ? static_cast<uint64_t>(st.st_size) : 0;
  std::vector<unsigned char> buf(static_cast<size_t>(std::min<uint64_t>(kChunk, length + 1)));
  uLong crc = crc32(0L, Z_NULL, 0);
  *size = 0;
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *error = Errno("cannot read", path);
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    crc = crc32(crc, buf.data(), static_cast<uInt>(n));
    *size += static_cast<uint64_t>(n);
  }
  ::close(fd);
  return static_cast<uint32_t>(crc);
}

std::string StageManifest(const std::string& from, uint64_t size, int64_t mtime_ns, uint32_t crc32) {
  return nlohmann::json{{"from", from}, {"size", size}, {"mtime_ns", mtime_ns}, {"crc32", crc32}}.dump() + "\n";
}

std::string EnsureStaged(const std::string& from, const std::string& to, const StageOptions& o, std::string* note) {
  namespace fs = std::filesystem;
  const auto t0 = std::chrono::steady_clock::now();
  const std::string name = from.substr(from.rfind('/') + 1);
  const std::string dest = to + "/" + name, marker = to + "/." + name + ".ladder-stage";
  const std::string sbcast = to + "/." + name + ".sbcast", sbcast_meta = sbcast + ".json";
  uint64_t size = 0;
  int64_t mtime = 0;
  if (!StatFile(from, &size, &mtime)) {
    struct stat st {};
    if (::stat(from.c_str(), &st) == 0) return "cannot stage " + from + ": not a regular file (stage an archive)";
    return Errno("cannot stage", from);
  }
  std::error_code ec;
  fs::create_directories(to, ec);
  if (ec) return "cannot create the local directory " + to + ": " + ec.message();
  // One rank of this node at a time; the lock is released when the descriptor closes (also when a rank dies).
  NodeLock lock;
  if (std::string e = lock.Lock(to + "/." + name + ".lock"); !e.empty()) return e;
  auto took = [&] { return Seconds(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()); };
  uint64_t have = 0;
  int64_t have_mtime = 0;
  const bool dest_there = StatFile(dest, &have, &have_mtime);
  if (dest_there && have == size && ManifestCrc(marker, from, size, mtime)) {
    ::unlink(sbcast.c_str());  // a delivery of what is here already
    ::unlink(sbcast_meta.c_str());
    *note = dest + ": reused (" + Bytes(size) + ", staged before on this node)";
    return "";
  }
  std::string error;
  // Delivered by sbcast: taken once it checks out.
  if (auto want = ManifestCrc(sbcast_meta, from, size, mtime)) {
    uint64_t got_size = 0;
    std::string crc_error;
    auto got = FileCrc32(sbcast, &got_size, &crc_error);
    if (got && *got == *want && got_size == size && ::rename(sbcast.c_str(), dest.c_str()) == 0) {
      ::unlink(sbcast_meta.c_str());
      if (!WriteSmallFile(marker, StageManifest(from, size, mtime, *want), &error)) return error;
      *note = dest + ": taken from sbcast (" + Bytes(size) + ", CRC-32 checked in " + took() + ")";
      return "";
    }
  }
  // Copy: the directory must hold it (an older copy it replaces counts as free).
  const auto free = FreeBytes(o, to);
  if (free && *free + (dest_there ? have : 0) < size) {
    return "not enough space to stage " + from + " (" + Bytes(size) + ") into " + to + " on node " + o.node +
           ": " + Bytes(*free) + " free";
  }
  const std::string tmp = to + "/." + name + ".tmp." + std::to_string(::getpid());
  uint32_t crc = 0;
  error = CopyChecked(from, tmp, size, &crc);
  if (!error.empty()) return error;
  ::unlink(marker.c_str());  // no marker may describe a file that is being replaced
  if (::rename(tmp.c_str(), dest.c_str()) != 0) {
    error = Errno("cannot rename to", dest);
    ::unlink(tmp.c_str());
    return error;
  }
  if (!WriteSmallFile(marker, StageManifest(from, size, mtime, crc), &error)) return error;
  ::unlink(sbcast.c_str());
  ::unlink(sbcast_meta.c_str());
  *note = dest + ": copied from " + from + " (" + Bytes(size) + ", CRC-32 checked, " + took() + ")";
  return "";
}

}  // namespace ladder::worker
