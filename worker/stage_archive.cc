// extract: true — an archive unpacked once per node (worker/stage.h), read by libarchive in one pass over the file.
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "search/core/spec.h"
#include "worker/stage.h"
#include "worker/stage_internal.h"

namespace ladder::worker {

using namespace internal;
namespace fs = std::filesystem;

namespace {

constexpr size_t kBlock = 1 << 20;

// The archive's bytes as libarchive asks for them, CRC-32 and count kept on the way: one read of the file.
struct ArchiveSource {
  int fd = -1;
  std::vector<unsigned char> buf = std::vector<unsigned char>(kBlock);
  uLong crc = crc32(0L, Z_NULL, 0);
  uint64_t read = 0;
  int error = 0;  // errno of a failed read

  ssize_t Next() {
    for (;;) {
      const ssize_t n = ::read(fd, buf.data(), buf.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        error = errno;
        return -1;
      }
      crc = crc32(crc, buf.data(), static_cast<uInt>(n));
      read += static_cast<uint64_t>(n);
      return n;
    }
  }
};

la_ssize_t ReadArchive(struct archive* a, void* client, const void** out) {
  auto* src = static_cast<ArchiveSource*>(client);
  const ssize_t n = src->Next();
  if (n < 0) archive_set_error(a, src->error, "read failed");
  *out = src->buf.data();
  return n;
}

// An entry's path below the extraction directory: "./" and trailing slashes dropped; "" with *error for one that
// would land outside it.
std::string SafeRelative(const std::string& raw, std::string* error) {
  if (!raw.empty() && raw.front() == '/') {
    *error = "entry '" + raw + "' has an absolute path: it would land outside the directory";
    return "";
  }
  fs::path out;
  for (const auto& part : fs::path(raw)) {
    const std::string p = part.string();
    if (p.empty() || p == ".") continue;
    if (p == "..") {
      *error = "entry '" + raw + "' climbs out of the directory ('..')";
      return "";
    }
    out /= part;
  }
  return out.string();
}

struct Extraction {
  const std::string& archive_name;  // for messages
  const std::string& dir;           // the temporary directory it unpacks into
  const StageOptions& options;
  uint64_t free = 0;                // bytes the node had where dir lives
  uint64_t files = 0, bytes = 0;

  std::string NoSpace(const std::string& entry, uint64_t size) const {
    return "not enough space to extract " + archive_name + " into " + dir.substr(0, dir.rfind('/')) + " on node " +
           options.node + ": its files need more than " + Bytes(bytes + size) + " (" + Bytes(bytes) +
           " extracted, then '" + entry + "' of " + Bytes(size) + "), " + Bytes(free) + " free";
  }

  // One regular file: written, then read back and compared with the CRC-32 of what the archive held.
  std::string File(struct archive* a, const std::string& rel, uint64_t size) {
    if (bytes + size > free) return NoSpace(rel, size);
    const std::string path = dir + "/" + rel;
    std::error_code ec;
    fs::create_directories(fs::path(path).parent_path(), ec);
    const int out = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0) return Errno("cannot create", path);
    uLong crc = crc32(0L, Z_NULL, 0);
    uint64_t written = 0;
    std::string error;
    std::vector<unsigned char> zeros;  // only for a sparse file's holes (zeroing 1 MiB per file cost seconds)
    auto put = [&](const unsigned char* p, size_t n) {
      crc = crc32(crc, p, static_cast<uInt>(n));
      for (size_t done = 0; done < n;) {
        const ssize_t w = ::write(out, p + done, n - done);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return Errno("cannot write", path);  // ENOSPC among others
        done += static_cast<size_t>(w);
      }
      written += n;
      return std::string();
    };
    for (;;) {
      const void* block = nullptr;
      size_t n = 0;
      la_int64_t offset = 0;
      const int r = archive_read_data_block(a, &block, &n, &offset);
      if (r == ARCHIVE_EOF) break;
      if (r < ARCHIVE_WARN) {
        error = "cannot read '" + rel + "' from " + archive_name + ": " + archive_error_string(a);
        break;
      }
      if (written < static_cast<uint64_t>(offset) && zeros.empty()) zeros.assign(kBlock, 0);
      while (error.empty() && written < static_cast<uint64_t>(offset)) {  // a sparse file's hole
        error = put(zeros.data(), std::min<uint64_t>(zeros.size(), static_cast<uint64_t>(offset) - written));
      }
      if (error.empty()) error = put(static_cast<const unsigned char*>(block), n);
      if (!error.empty()) break;
    }
    if (::close(out) != 0 && error.empty()) error = Errno("cannot write", path);
    if (!error.empty()) return error;
    uint64_t back_size = 0;
    auto back = FileCrc32(path, &back_size, &error);
    if (!back) return error;
    if (*back != crc || back_size != written) {
      return "the extracted " + path + " does not read back as written (CRC-32 or size differ): the local disk is "
             "faulty?";
    }
    ++files;
    bytes += written;
    return "";
  }

  std::string Entry(struct archive* a, struct archive_entry* e) {
    std::string error;
    const char* raw = archive_entry_pathname(e);
    const std::string rel = SafeRelative(raw ? raw : "", &error);
    if (!error.empty()) return error;
    if (archive_entry_hardlink(e) != nullptr) {
      return "entry '" + std::string(raw) + "' is a hard link: only files and directories are extracted";
    }
    switch (archive_entry_filetype(e)) {
      case AE_IFDIR: {
        std::error_code ec;
        if (!rel.empty()) fs::create_directories(dir + "/" + rel, ec);
        return ec ? "cannot create " + dir + "/" + rel + ": " + ec.message() : "";
      }
      case AE_IFREG:
        if (rel.empty()) return "entry '" + std::string(raw) + "' names no file";
        return File(a, rel, archive_entry_size_is_set(e) ? static_cast<uint64_t>(archive_entry_size(e)) : 0);
      case AE_IFLNK:
        return "entry '" + std::string(raw) + "' is a symbolic link: only files and directories are extracted";
      default:
        return "entry '" + std::string(raw) + "' is not a file or a directory: only those are extracted";
    }
  }
};

// Unpacks `path` (the archive, or its sbcast delivery) into x->dir, which must not exist. *crc and *read: the
// CRC-32 and length of the whole file, read once.
std::string Unpack(const std::string& path, Extraction* x, uint32_t* crc, uint64_t* read) {
  ArchiveSource src;
  src.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (src.fd < 0) return Errno("cannot read", path);
  struct archive* a = archive_read_new();
  archive_read_support_filter_all(a);
  archive_read_support_format_tar(a);
  archive_read_support_format_zip(a);
  x->files = x->bytes = 0;
  std::string error;
  std::error_code ec;
  fs::create_directories(x->dir, ec);
  if (ec) error = "cannot create " + x->dir + ": " + ec.message();
  if (error.empty() && archive_read_open(a, &src, nullptr, ReadArchive, nullptr) != ARCHIVE_OK) {
    error = "cannot read " + path + " as an archive: " + archive_error_string(a);
  }
  for (struct archive_entry* e = nullptr; error.empty();) {
    const int r = archive_read_next_header(a, &e);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) {
      error = "cannot read " + path + " as an archive: " + archive_error_string(a);
      break;
    }
    error = x->Entry(a, e);
  }
  archive_read_free(a);
  while (error.empty()) {  // the archive's end (padding after the last entry): the CRC-32 covers the whole file
    const ssize_t n = src.Next();
    if (n < 0) error = "cannot read " + path + ": " + std::strerror(src.error);
    if (n <= 0) break;
  }
  ::close(src.fd);
  *crc = static_cast<uint32_t>(src.crc);
  *read = src.read;
  return error;
}

uint64_t CountFiles(const std::string& dir) {
  uint64_t n = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    n += it->is_regular_file(ec);
  }
  return n;
}

// The marker when it describes `from` at this size and mtime: its files count.
std::optional<uint64_t> MarkerFiles(const std::string& marker, const std::string& from, uint64_t size, int64_t mtime) {
  if (!ManifestCrc(marker, from, size, mtime)) return std::nullopt;
  std::ifstream in(marker);
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (!j.is_object() || !j.contains("files")) return std::nullopt;
  return j.value("files", uint64_t{0});
}

}  // namespace

std::string EnsureExtracted(const std::string& from, const std::string& to, const StageOptions& o, std::string* note) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string name = from.substr(from.rfind('/') + 1), stem = search::ArchiveStem(name);
  if (stem.empty()) return "cannot extract " + from + ": not a .tar, .tar.gz, .tgz, .tar.bz2, .tar.xz, .tar.zst or .zip";
  const std::string dest = to + "/" + stem, marker = to + "/." + stem + ".ladder-stage";
  const std::string sbcast = to + "/." + name + ".sbcast", sbcast_meta = sbcast + ".json";
  uint64_t size = 0;
  int64_t mtime = 0;
  std::error_code ec;
  if (!StatFile(from, &size, &mtime)) {
    return fs::exists(from, ec) ? "cannot extract " + from + ": not a regular file" : Errno("cannot stage", from);
  }
  fs::create_directories(to, ec);
  if (ec) return "cannot create the local directory " + to + ": " + ec.message();
  NodeLock lock;
  if (std::string e = lock.Lock(to + "/." + stem + ".lock"); !e.empty()) return e;
  const auto files = MarkerFiles(marker, from, size, mtime);
  if (files && fs::is_directory(dest, ec) && CountFiles(dest) == *files) {
    fs::remove(sbcast, ec);
    fs::remove(sbcast_meta, ec);
    *note = dest + "/: reused (" + std::to_string(*files) + " files from " + name + ", extracted before on this node)";
    return "";
  }
  // Whatever is there is not the archive's current content: gone before the space is measured.
  fs::remove(marker, ec);
  fs::remove_all(dest, ec);
  const std::string tmp = to + "/." + stem + ".tmp." + std::to_string(::getpid());
  fs::remove_all(tmp, ec);
  const uint64_t free = FreeBytes(o, to).value_or(UINT64_MAX);
  const auto want = ManifestCrc(sbcast_meta, from, size, mtime);
  Extraction x{name, tmp, o, free};
  uint32_t crc = 0;
  uint64_t read = 0;
  std::string error;
  std::string how = "extracted from " + from;
  if (want) {  // delivered by sbcast: unpacked from the node's own disk, kept only if its CRC-32 checks out
    error = Unpack(sbcast, &x, &crc, &read);
    if (error.empty() && (crc != *want || read != size)) error = "the sbcast delivery's CRC-32 does not match";
    if (error.empty()) how = "extracted from the sbcast delivery of " + name;
    if (!error.empty() && error.find("not enough space") != std::string::npos) {
      fs::remove_all(tmp, ec);
      return error;
    }
    fs::remove(sbcast, ec);
    fs::remove(sbcast_meta, ec);
  }
  if (!want || !error.empty()) {
    fs::remove_all(tmp, ec);
    error = Unpack(from, &x, &crc, &read);
    if (error.empty() && read != size) {
      error = "the source " + from + " changed while it was extracted (" + std::to_string(size) + " bytes before, " +
              std::to_string(read) + " read)";
    }
  }
  if (!error.empty()) {
    fs::remove_all(tmp, ec);
    return error;
  }
  error = SyncDir(tmp);  // the extracted files on disk before the rename makes them the node's copy
  if (!error.empty()) {
    fs::remove_all(tmp, ec);
    return error;
  }
  if (::rename(tmp.c_str(), dest.c_str()) != 0) {
    error = Errno("cannot rename to", dest);
    fs::remove_all(tmp, ec);
    return error;
  }
  nlohmann::json m = nlohmann::json::parse(StageManifest(from, size, mtime, crc));
  m["files"] = x.files;
  m["bytes"] = x.bytes;
  if (!WriteSmallFile(marker, m.dump() + "\n", &error)) return error;
  *note = dest + "/: " + how + " (" + std::to_string(x.files) + " files, " + Bytes(x.bytes) + " from " +
          Bytes(size) + ", each CRC-32 checked, " +
          Seconds(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()) + ")";
  return "";
}

}  // namespace ladder::worker
