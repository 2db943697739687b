#pragma once
// ladder up --slurm --run SPEC with `stage:`: before any worker starts, every file is broadcast with sbcast to
// every node of the job, with the source's manifest (size, mtime, CRC-32: the source is read once, here), so that
// each node's ladder-stage takes the delivery after checking it instead of reading the shared file itself
// (worker/stage.h); an archive to extract is sent as it is and each node unpacks its delivery; shard files are not
// sent (each node copies its own share). Anything that fails here only costs time: a node without a good delivery
// copies the file.
#include <string>
#include <vector>

#include "cli/slurm_workers.h"
#include "search/core/spec.h"

namespace ladder::cli {

// Prints what it did per file (or why it could not) on stdout/stderr.
void SbcastStage(const std::vector<search::StageFile>& files, const SlurmAllocation& alloc);

}  // namespace ladder::cli
