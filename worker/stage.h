#pragma once
// Staging (the spec's `stage:`): a dataset file on shared storage (Lustre, GPFS) copied once to each node's local
// storage, checked, and reused by that node's later trials — many readers of one shared file are what brings a
// parallel filesystem down. `ladder-stage --from F --to DIR ... -- COMMAND` runs it in front of every rank of a
// trial (the coordinator prefixes the command; with srun and mpirun launches every rank on every node runs it),
// then execs COMMAND.
//
// On a node, for F staged into DIR (N = F's file name):
//   DIR/N                     the copy; only ever created by a rename, after it was checked
//   DIR/.N.ladder-stage       what DIR/N is a checked copy of: {"from", "size", "mtime_ns", "crc32"}
//   DIR/.N.sbcast, .N.sbcast.json   what `ladder up --slurm --run` broadcast with sbcast and the source's manifest:
//                             taken (renamed to DIR/N) once its size and CRC-32 match, else copied anew
//   DIR/.N.lock               ranks of one node take turns (flock): one copies, the others reuse
// Reuse needs the source's size and mtime to match the marker (a stat of the shared file, not a read) and the copy's
// size to match; anything else is copied again. A copy reads the source once, computing its CRC-32 (zlib), writes a
// temporary file, reads that back and compares, then renames it into place. Before copying, the local directory's
// free space must hold the file: otherwise the error names the directory, the node and both sizes.
//
// An archive (extract: true; A = its file name, S = A without its suffix), worker/stage_archive.cc:
//   DIR/S/                    the archive's files and directories, unpacked by libarchive in one read of A (its
//                             CRC-32 computed on the way), each file read back and checked against the CRC-32 of
//                             what the archive held; only ever created by a rename of DIR/.S.tmp.PID
//   DIR/.S.ladder-stage       {"from", "size", "mtime_ns", "crc32" (the archive's), "files", "bytes"}
//   DIR/.A.sbcast(.json)      an sbcast delivery of the archive: unpacked instead of the shared file when its
//                             CRC-32 matches the manifest's
//   DIR/.S.lock
// Reuse: the marker matches the archive's size and mtime and DIR/S holds as many files as it says. An entry that
// would land outside DIR/S (an absolute path, "..") or is not a file or directory (links, devices) is refused,
// naming it; the node's free space is checked before each file, the error naming node, directory and sizes.
//
// A node's share of shard files (shard: node; worker/stage_shards.cc): the sources are a directory's files (by
// name; NAME = the directory's name, L = DIR/NAME) or a list (NAME = "ladder-shards", L = DIR); file k goes to the
// group's node k mod count (NodeShare):
//   L/F                       each file of this node's share, copied and checked as above
//   DIR/.NAME.ladder-stage    {"source", "files": {F: {"from", "size", "mtime_ns", "crc32"}}}: what L holds
//   DIR/.NAME.lock
// A file is reused while its source's size and mtime match; files of the node's earlier share that are not in
// this one are removed first (their space counts as free), so L holds exactly this node's share.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ladder::worker {

struct StageOptions {
  std::string node;  // this node's name, for messages
  // Free bytes where `dir` lives (statvfs); a test substitutes its own.
  std::function<std::optional<uint64_t>(const std::string& dir)> free_bytes;
};

// Makes sure `from` is staged into `to` on this node. "" when it is (then *note says whether it was reused,
// taken from sbcast or copied, with sizes and time), else what went wrong, naming the paths.
std::string EnsureStaged(const std::string& from, const std::string& to, const StageOptions& options,
                         std::string* note);

// Makes sure the archive `from` is unpacked into `to`/ArchiveStem(name) on this node; as EnsureStaged.
std::string EnsureExtracted(const std::string& from, const std::string& to, const StageOptions& options,
                            std::string* note);

// Which of a trial's nodes this is: index in [0, count).
struct NodeShare {
  int index = 0, count = 1;
};
// From a rank's environment (`get` as getenv): by LADDER_LAUNCHER, srun: SLURM_NODEID of SLURM_NNODES (the step's);
// mpirun: OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_LOCAL_SIZE of LADDER_NODES; per_node (or none):
// RANK / LOCAL_WORLD_SIZE of LADDER_NODES. Without LADDER_NODES: node 0 of 1. nullopt with *error when the
// variables are there but do not make a node of the group.
std::optional<NodeShare> NodeShareFromEnv(const std::function<const char*(const char*)>& get, std::string* error);

// The shard files: `dir`'s regular files (by name, dot files left out), or `files` in their order.
struct ShardSource {
  std::string dir;
  std::vector<std::string> files;
};
// Makes sure this node's share of `source` is staged into `to` (see above); as EnsureStaged.
std::string EnsureShardStaged(const ShardSource& source, const std::string& to, NodeShare share,
                              const StageOptions& options, std::string* note);

// CRC-32 (zlib) of a whole file, read once; nullopt with *error when it cannot be read. *size gets its length.
std::optional<uint32_t> FileCrc32(const std::string& path, uint64_t* size, std::string* error);

// The marker/manifest text for a source file: {"from", "size", "mtime_ns", "crc32"}.
std::string StageManifest(const std::string& from, uint64_t size, int64_t mtime_ns, uint32_t crc32);

// A file's size and modification time (ns); false when it cannot be stat'ed.
bool StatFile(const std::string& path, uint64_t* size, int64_t* mtime_ns);

}  // namespace ladder::worker
