// shard: node — each node of a trial's group stages only its share of a list of shard files (worker/stage.h).
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "worker/stage.h"
#include "worker/stage_internal.h"

namespace ladder::worker {

using namespace internal;
namespace fs = std::filesystem;

namespace {

// A non-negative integer from the environment; nullopt when unset or not one.
std::optional<long> EnvInt(const std::function<const char*(const char*)>& get, const char* name) {
  const char* v = get(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < 0) return std::nullopt;
  return n;
}

struct Shard {
  std::string name, from;
  uint64_t size = 0;
  int64_t mtime = 0;
};

// The sources in order: a directory's regular files by name (dot files left out), or the list as given.
std::string ListShards(const ShardSource& source, std::vector<std::string>* out) {
  if (source.dir.empty()) {
    *out = source.files;
    return "";
  }
  DIR* d = ::opendir(source.dir.c_str());
  if (d == nullptr) return Errno("cannot list the shard directory", source.dir);
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const std::string path = source.dir + "/" + e->d_name;
    uint64_t size = 0;
    int64_t mtime = 0;
    if (StatFile(path, &size, &mtime)) out->push_back(path);
  }
  ::closedir(d);
  std::sort(out->begin(), out->end());
  if (out->empty()) return "the shard directory " + source.dir + " holds no files";
  return "";
}

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::json::parse(ss.str(), nullptr, false);
  return j.is_object() ? j : nlohmann::json::object();
}

// Whether `old` (a manifest entry) is a checked copy of `s` that is still in `local`.
bool Reusable(const nlohmann::json& old, const Shard& s, const std::string& local) {
  uint64_t have = 0;
  int64_t have_mtime = 0;
  return old.is_object() && old.value("from", "") == s.from && old.value("size", uint64_t{0}) == s.size &&
         old.value("mtime_ns", int64_t{0}) == s.mtime && old.contains("crc32") &&
         StatFile(local + "/" + s.name, &have, &have_mtime) && have == s.size;
}

uint64_t LocalSize(const std::string& path) {
  uint64_t size = 0;
  int64_t mtime = 0;
  return StatFile(path, &size, &mtime) ? size : 0;
}

// This node's share of the sources, stat'ed: "" or what is wrong (a missing file, two with one name).
std::string MyShare(const ShardSource& source, NodeShare share, std::vector<Shard>* mine, size_t* total) {
  std::vector<std::string> all;
  if (std::string e = ListShards(source, &all); !e.empty()) return e;
  *total = all.size();
  std::set<std::string> names;
  for (size_t k = static_cast<size_t>(share.index); k < all.size(); k += static_cast<size_t>(share.count)) {
    Shard s{all[k].substr(all[k].rfind('/') + 1), all[k]};
    if (!StatFile(s.from, &s.size, &s.mtime)) {
      std::error_code ec;
      return fs::exists(s.from, ec) ? "cannot stage the shard " + s.from + ": not a regular file"
                                    : Errno("cannot stage the shard", s.from);
    }
    if (!names.insert(s.name).second) return "two shards are named " + s.name + " (they land in one directory)";
    mine->push_back(std::move(s));
  }
  return "";
}

// What staging a share does: keep the reusable files, copy the others, remove the earlier share's.
struct SharePlan {
  nlohmann::json files = nlohmann::json::object();  // the kept files' manifest entries, then each copied one's
  std::set<std::string> in_share;
  std::vector<const Shard*> to_copy;
  std::vector<std::string> to_remove;  // files of an earlier share (this stage's own: named in its manifest)
  uint64_t need = 0, freeable = 0, share_bytes = 0;
};

SharePlan Plan(const std::vector<Shard>& mine, const nlohmann::json& old, const std::string& local) {
  SharePlan p;
  for (const auto& s : mine) {
    p.in_share.insert(s.name);
    p.share_bytes += s.size;
    if (old.contains(s.name) && Reusable(old[s.name], s, local)) {
      p.files[s.name] = old[s.name];
      continue;
    }
    p.to_copy.push_back(&s);
    p.need += s.size;
    p.freeable += LocalSize(local + "/" + s.name);  // replaced
  }
  for (const auto& [f, entry] : old.items()) {
    if (p.in_share.count(f)) continue;
    p.to_remove.push_back(f);
    p.freeable += LocalSize(local + "/" + f);
  }
  return p;
}

// Copies each file checked (worker/stage.cc's CopyChecked) by a temporary file and a rename, then syncs the
// filesystem once; *files gets each copied one's manifest entry. "" or the first error.
std::string CopyShare(const std::vector<const Shard*>& to_copy, const std::string& local, nlohmann::json* files) {
  for (const Shard* s : to_copy) {
    const std::string tmp = local + "/." + s->name + ".tmp." + std::to_string(::getpid());
    uint32_t crc = 0;
    std::string error = CopyChecked(s->from, tmp, s->size, &crc, /*sync=*/false);
    if (error.empty() && ::rename(tmp.c_str(), (local + "/" + s->name).c_str()) != 0) {
      error = Errno("cannot rename to", local + "/" + s->name);
      ::unlink(tmp.c_str());
    }
    if (!error.empty()) return error;
    (*files)[s->name] = {{"from", s->from}, {"size", s->size}, {"mtime_ns", s->mtime}, {"crc32", crc}};
  }
  // One sync for the whole share (a fsync per file cost 8.7 s for 500 small files per node, bench/slurm) before the
  // manifest names the copies as checked.
  if (to_copy.empty()) return "";
  std::string error = SyncDir(local);
  if (!error.empty()) {
    for (const Shard* s : to_copy) (*files)[s->name].erase("crc32");  // named, never reused
  }
  return error;
}

}  // namespace

std::optional<NodeShare> NodeShareFromEnv(const std::function<const char*(const char*)>& get, std::string* error) {
  const char* launcher_c = get("LADDER_LAUNCHER");
  const std::string launcher = launcher_c ? launcher_c : "";
  std::optional<long> index, count, rank, per_node;
  const char* how = "";
  if (launcher == "srun") {
    index = EnvInt(get, "SLURM_NODEID");
    count = EnvInt(get, "SLURM_NNODES");
    how = "SLURM_NODEID of SLURM_NNODES";
  } else {
    const bool mpi = launcher == "mpirun";
    rank = EnvInt(get, mpi ? "OMPI_COMM_WORLD_RANK" : "RANK");
    per_node = EnvInt(get, mpi ? "OMPI_COMM_WORLD_LOCAL_SIZE" : "LOCAL_WORLD_SIZE");
    count = EnvInt(get, "LADDER_NODES");
    if (!count) return NodeShare{};  // not a trial's rank (run by hand): the one node
    if (rank && per_node && *per_node > 0) index = *rank / *per_node;
    if (!rank && !per_node) index = 0;  // a one-rank-per-node launch without the variables
    how = mpi ? "OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_LOCAL_SIZE of LADDER_NODES"
              : "RANK / LOCAL_WORLD_SIZE of LADDER_NODES";
  }
  if (!index || !count || *count < 1 || *index >= *count) {
    *error = std::string("cannot tell which of the trial's nodes this is (") + how + ")";
    return std::nullopt;
  }
  return NodeShare{static_cast<int>(*index), static_cast<int>(*count)};
}

std::string EnsureShardStaged(const ShardSource& source, const std::string& to, NodeShare share,
                              const StageOptions& o, std::string* note) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string name = source.dir.empty() ? "ladder-shards" : source.dir.substr(source.dir.rfind('/') + 1);
  const std::string local = source.dir.empty() ? to : to + "/" + name;
  const std::string manifest = to + "/." + name + ".ladder-stage";
  const std::string what = source.dir.empty() ? "the shard list" : source.dir;
  std::vector<Shard> mine;
  size_t total = 0;
  if (std::string e = MyShare(source, share, &mine, &total); !e.empty()) return e;
  std::error_code ec;
  fs::create_directories(local, ec);
  if (ec) return "cannot create the local directory " + local + ": " + ec.message();
  NodeLock lock;
  if (std::string e = lock.Lock(to + "/." + name + ".lock"); !e.empty()) return e;
  SharePlan plan = Plan(mine, ReadJson(manifest).value("files", nlohmann::json::object()), local);
  const auto free = FreeBytes(o, local);
  if (free && *free + plan.freeable < plan.need) {
    return "not enough space to stage node " + o.node + "'s share of " + what + " (" + std::to_string(mine.size()) +
           " of " + std::to_string(total) + " files, " + Bytes(plan.share_bytes) + "; " + Bytes(plan.need) +
           " to copy) into " + local + " on node " + o.node + ": " + Bytes(*free) + " free";
  }
  // The manifest first names what may be replaced as this stage's (no CRC-32: never reused), so that a crash
  // half-way leaves nothing it would not clean up.
  std::string error;
  nlohmann::json pending = plan.files;
  for (const Shard* s : plan.to_copy) pending[s->name] = {{"from", s->from}};
  for (const auto& f : plan.to_remove) pending[f] = {{"from", ""}};
  if (!WriteSmallFile(manifest, nlohmann::json{{"source", what}, {"files", pending}}.dump() + "\n", &error)) {
    return error;
  }
  for (const auto& f : plan.to_remove) fs::remove(local + "/" + f, ec);
  error = CopyShare(plan.to_copy, local, &plan.files);
  for (const auto& [f, entry] : pending.items()) {  // one that failed stays named, to be cleaned up
    if (!plan.files.contains(f) && plan.in_share.count(f)) plan.files[f] = entry;
  }
  std::string write_error;
  WriteSmallFile(manifest, nlohmann::json{{"source", what}, {"files", plan.files}}.dump() + "\n", &write_error);
  if (!error.empty()) return error;
  if (!write_error.empty()) return write_error;
  *note = local + "/: node " + std::to_string(share.index) + " of " + std::to_string(share.count) + "'s share of " +
          what + ", " + std::to_string(mine.size()) + " of " + std::to_string(total) + " files (" +
          Bytes(plan.share_bytes) + "): " + std::to_string(plan.to_copy.size()) + " copied, " +
          std::to_string(mine.size() - plan.to_copy.size()) + " reused, " + std::to_string(plan.to_remove.size()) +
          " of another share removed (CRC-32 checked, " +
          Seconds(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()) + ")";
  return "";
}

}  // namespace ladder::worker
