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
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

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

// CRC-32 (zlib) of a whole file, read once; nullopt with *error when it cannot be read. *size gets its length.
std::optional<uint32_t> FileCrc32(const std::string& path, uint64_t* size, std::string* error);

// The marker/manifest text for a source file: {"from", "size", "mtime_ns", "crc32"}.
std::string StageManifest(const std::string& from, uint64_t size, int64_t mtime_ns, uint32_t crc32);

// A file's size and modification time (ns); false when it cannot be stat'ed.
bool StatFile(const std::string& path, uint64_t* size, int64_t* mtime_ns);

}  // namespace ladder::worker
