#include "trainer/comm/node_layout.h"

#include <charconv>

namespace ladder::trainer::comm {

namespace {

struct LauncherVars {
  const char* size;        // ranks on this node
  const char* local_rank;  // this rank's index on its node
};
constexpr LauncherVars kLaunchers[] = {
    {"LOCAL_WORLD_SIZE", "LOCAL_RANK"},
    {"OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"SLURM_NTASKS_PER_NODE", "SLURM_LOCALID"},
};

bool ParseNonNegative(const char* s, int* out) {
  const char* end = s + std::char_traits<char>::length(s);
  auto [p, ec] = std::from_chars(s, end, *out);
  return ec == std::errc() && p == end && *out >= 0;
}

}  // namespace

bool ResolveNodeLayout(int rank, int world_size, const CommOptions& options, const EnvLookup& env,
                       NodeLayout* out, std::string* error) {
  *out = NodeLayout{};
  const LauncherVars* launcher = nullptr;
  if (options.ranks_per_node > 0) {
    out->ranks_per_node = options.ranks_per_node;
    out->source = "--ranks-per-node";
  } else {
    for (const auto& l : kLaunchers) {
      const char* v = env(l.size);
      if (!v || !*v) continue;
      int n = 0;
      if (!ParseNonNegative(v, &n) || n == 0) {
        *error = std::string("hierarchical allreduce: ") + l.size + "='" + v + "' is not a positive integer";
        return false;
      }
      out->ranks_per_node = n;
      out->source = l.size;
      launcher = &l;
      break;
    }
  }
  if (out->ranks_per_node == 0) {
    out->source = "host name";
    return true;
  }
  const int n = out->ranks_per_node;
  if (world_size % n != 0) {
    *error = "hierarchical allreduce: world size " + std::to_string(world_size) + " is not divisible by " +
             std::to_string(n) + " ranks per node (from " + out->source + ")";
    return false;
  }
  if (launcher) {
    const char* lr = env(launcher->local_rank);
    int local = 0;
    if (lr && *lr && (!ParseNonNegative(lr, &local) || local != rank % n)) {
      *error = "hierarchical allreduce: rank " + std::to_string(rank) + " has " + launcher->local_rank + "='" +
               lr + "', but nodes of " + std::to_string(n) + " consecutive ranks (" + out->source +
               ") put it at local rank " + std::to_string(rank % n) +
               "; place ranks in node blocks (e.g. mpirun --map-by slot) or pass --ranks-per-node";
      return false;
    }
  }
  return true;
}

}  // namespace ladder::trainer::comm
