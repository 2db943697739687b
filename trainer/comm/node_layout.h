#pragma once
// Which ranks share a node, for the hierarchical allreduce. Pure logic (the environment is passed in), so the
// precedence and the error messages are unit-tested without launching processes.
//
// Ranks per node come from, in this order:
//   1. --ranks-per-node (CommOptions::ranks_per_node > 0): simulates several nodes on one machine;
//   2. the launcher: LOCAL_WORLD_SIZE (torchrun), OMPI_COMM_WORLD_LOCAL_SIZE (mpirun), SLURM_NTASKS_PER_NODE
//      (srun --ntasks-per-node);
//   3. none of these: ranks_per_node = 0, and ranks are grouped by host name (what MPI's shared-memory split
//      does), which also handles nodes with different rank counts.
// With 1 and 2 the layout is in blocks: node = rank / ranks_per_node, local rank = rank % ranks_per_node. When it
// came from the launcher, the launcher's own local rank (LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID)
// must agree with that block layout; a launcher that places ranks round-robin is reported, not silently grouped
// across nodes.
#include <functional>
#include <string>

#include "trainer/comm/communicator.h"

namespace ladder::trainer::comm {

struct NodeLayout {
  int ranks_per_node = 0;  // 0: group by host name
  std::string source;      // "--ranks-per-node", "LOCAL_WORLD_SIZE", ..., or "host name"
};

// Returns the value of an environment variable or nullptr (std::getenv in production).
using EnvLookup = std::function<const char*(const char*)>;

// Resolves the layout for this process (`rank` of `world_size`). Returns false with *error naming the variable
// and the values when the layout is invalid (not a positive integer, world size not divisible by it, or a
// launcher local rank that contradicts the block layout).
bool ResolveNodeLayout(int rank, int world_size, const CommOptions& options, const EnvLookup& env,
                       NodeLayout* out, std::string* error);

}  // namespace ladder::trainer::comm
