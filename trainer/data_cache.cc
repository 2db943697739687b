#include "trainer/data_cache.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <list>

namespace ladder::trainer {

namespace {

struct FileStamp {
  dev_t dev;
  ino_t ino;
  off_t size;
  int64_t mtime_ns;
  bool operator==(const FileStamp&) const = default;
};

struct Entry {
  std::string spec;
  int64_t seq_len;
  std::vector<FileStamp> files;
  Dataset data;
  int64_t bytes;
};

// Most recently used first.
std::list<Entry>& Cache() {
  static std::list<Entry> cache;
  return cache;
}

int64_t Bytes(const Dataset& d) {
  return static_cast<int64_t>((d.x.size() + d.targets.size()) * sizeof(float) + d.y.size() * sizeof(int64_t));
}

// The stamps of every file `spec` reads, as they are now; false with *error when one cannot be stat'ed.
bool Stamps(const std::string& spec, std::vector<FileStamp>* out, std::string* error) {
  out->clear();
  for (const std::string& path : DataFiles(spec)) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
      *error = path + ": " + std::strerror(errno);
      return false;
    }
    out->push_back({st.st_dev, st.st_ino, st.st_size, int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec});
  }
  return true;
}

// The entry for (spec, options) whose files are unchanged, moved to the front; Cache().end() when none.
std::list<Entry>::iterator Find(const std::string& spec, const DataOptions& options,
                                const std::vector<FileStamp>& stamps) {
  auto& cache = Cache();
  for (auto it = cache.begin(); it != cache.end(); ++it) {
    if (it->spec == spec && it->seq_len == options.seq_len && it->files == stamps) {
      cache.splice(cache.begin(), cache, it);
      return cache.begin();
    }
  }
  return cache.end();
}

}  // namespace

const Dataset* FindData(const std::string& spec, const DataOptions& options) {
  if (Cache().empty()) return nullptr;  // a cold start: not even a stat
  std::vector<FileStamp> stamps;
  std::string error;
  if (!Stamps(spec, &stamps, &error)) return nullptr;
  auto it = Find(spec, options, stamps);
  return it == Cache().end() ? nullptr : &it->data;
}

bool PreloadData(const std::string& spec, const DataOptions& options, std::string* error, int64_t max_bytes) {
  std::vector<FileStamp> stamps;
  if (!Stamps(spec, &stamps, error)) return false;
  auto& cache = Cache();
  if (Find(spec, options, stamps) != cache.end()) return true;
  // Entries of the same spec are stale now (their files changed): drop them before loading.
  cache.remove_if([&](const Entry& e) { return e.spec == spec && e.seq_len == options.seq_len; });
  // Files larger than the bound are not read at all (a trial of them loads them itself, as a cold start does):
  // the zygote would block every other start while it read them, only to drop the rows.
  int64_t on_disk = 0;
  for (const FileStamp& f : stamps) on_disk += f.size;
  if (on_disk > max_bytes) {
    *error = spec + ": " + std::to_string(on_disk) + " bytes on disk, more than the cache keeps (" +
             std::to_string(max_bytes) + ")";
    return false;
  }
  Entry e{spec, options.seq_len, stamps, {}, 0};
  if (!LoadData(spec, options, &e.data, error)) return false;
  // A file changed while it was read: its rows may be neither the old nor the new file's.
  std::vector<FileStamp> after;
  if (!Stamps(spec, &after, error)) return false;
  if (after != stamps) {
    *error = spec + ": changed while it was read";
    return false;
  }
  e.bytes = Bytes(e.data);
  if (e.bytes > max_bytes) {
    *error = spec + ": " + std::to_string(e.bytes) + " bytes of rows, more than the cache keeps (" +
             std::to_string(max_bytes) + ")";
    return false;
  }
  int64_t total = e.bytes + DataCacheBytes();
  while (total > max_bytes && !cache.empty()) {
    total -= cache.back().bytes;
    cache.pop_back();
  }
  cache.push_front(std::move(e));
  return true;
}

int64_t DataCacheBytes() {
  int64_t total = 0;
  for (const Entry& e : Cache()) total += e.bytes;
  return total;
}

}  // namespace ladder::trainer
