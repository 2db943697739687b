#include "trainer/overlap_rule.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace ladder::trainer {

int CoresForRank(int affinity_cpus, int online_cpus, int local_ranks) {
  if (affinity_cpus > 0 && affinity_cpus < online_cpus) return affinity_cpus;
  return std::max(1, online_cpus / std::max(1, local_ranks));
}

bool OverlapAllreduce(const std::string& mode, bool cuda, int threads, int cores_for_rank) {
  if (mode == "on") return true;
  if (mode == "off") return false;
  return cuda || cores_for_rank > std::max(1, threads);
}

int CoresForThisRank() {
  int local_ranks = 1;
  for (const char* name : {"LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE"}) {
    if (const char* v = std::getenv(name); v && std::atoi(v) > 0) {  // SLURM's "2(x3)": its leading count
      local_ranks = std::atoi(v);
      break;
    }
  }
  // ladder-worker runs up to its slot count of ranks on this node at once, this trial's and others': a rank's
  // share of the cores is the node's over that many (measured: with two one-thread trials on two cores, a
  // prefetch thread in each made both 15-20% slower, bench/multifidelity --live).
  if (const char* v = std::getenv("LADDER_WORKER_SLOTS"); v && std::atoi(v) > local_ranks) local_ranks = std::atoi(v);
  cpu_set_t set;
  CPU_ZERO(&set);
  const int affinity = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
  const int online = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  return CoresForRank(affinity, online, local_ranks);
}

bool OverlapAllreduce(const TrainArgs& a, torch::Device device) {
  return OverlapAllreduce(a.overlap, device.is_cuda(), a.threads, CoresForThisRank());
}

int PrefetchDepth(const TrainArgs& a, torch::Device device) {
  if (a.prefetch >= 0) return a.prefetch;
  return OverlapAllreduce("auto", device.is_cuda(), a.threads, CoresForThisRank()) ? 2 : 0;
}

}  // namespace ladder::trainer
