#include "cli/slurm_stage.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "cli/slurm_job.h"
#include "common/token.h"
#include "worker/stage.h"

namespace ladder::cli {

namespace {

// One file to every node: the directory, the data, then its manifest (a manifest without its data is never seen).
std::string SendOne(const search::StageFile& f, const SlurmAllocation& alloc, uint64_t* size) {
  int64_t mtime = 0;
  if (!worker::StatFile(f.from, size, &mtime)) return "cannot stat " + f.from;
  std::string error;
  uint64_t read = 0;
  const auto crc = worker::FileCrc32(f.from, &read, &error);
  if (!crc) return error;
  if (read != *size) return f.from + " changed while it was read";
  // The file as it is (an archive to extract too: each node unpacks its delivery), under its own name.
  const std::string n = std::to_string(alloc.nodes.size()), name = f.from.substr(f.from.rfind('/') + 1);
  std::string out;
  if (RunSlurm({"srun", "--overlap", "--nodes=" + n, "--ntasks=" + n, "--ntasks-per-node=1", "--mpi=none",
                "--job-name=ladder-stage", "mkdir", "-p", f.to},
               &out) != 0) {
    return "srun mkdir -p " + f.to + " failed: " + out.substr(0, 300);
  }
  const std::string manifest = std::filesystem::temp_directory_path() /
                               ("ladder-stage-" + std::to_string(::getpid()) + "-" + name + ".json");
  WriteFileAtomically(manifest, worker::StageManifest(f.from, *size, mtime, *crc), 0644);
  int rc = RunSlurm({"sbcast", "-f", f.from, f.to + "/." + name + ".sbcast"}, &out);
  if (rc == 0) rc = RunSlurm({"sbcast", "-f", manifest, f.to + "/." + name + ".sbcast.json"}, &out);
  std::error_code ec;
  std::filesystem::remove(manifest, ec);
  return rc == 0 ? "" : "sbcast failed: " + out.substr(0, 300);
}

}  // namespace

void SbcastStage(const std::vector<search::StageFile>& files, const SlurmAllocation& alloc) {
  for (const auto& f : files) {
    if (f.shard_node) continue;  // every node a share of its own: each copies it
    const auto t0 = std::chrono::steady_clock::now();
    uint64_t size = 0;
    const std::string error = SendOne(f, alloc, &size);
    if (!error.empty()) {
      std::cerr << "ladder up: stage " << f.from << ": " << error << " (each node's trials copy it themselves)\n";
      continue;
    }
    char line[512];
    std::snprintf(line, sizeof line, "ladder up: stage %s (%.1f MiB) sent to the %zu nodes' %s with sbcast in %.2f s\n",
                  f.from.c_str(), static_cast<double>(size) / (1 << 20), alloc.nodes.size(), f.to.c_str(),
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    std::cout << line << std::flush;
  }
}

}  // namespace ladder::cli
