#pragma once
// Slurm-style hostlists: a name with one bracketed list of numbers and ranges, "n[001-003,7]". Read by the node
// inventory (server/scheduler/inventory.h) and by the worker from `scontrol show topology` (worker/slurm_topology.h).
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ladder {

// "n[001-003,7]" -> n001 n002 n003 n7; a name without brackets is itself. Empty result and `error` set when
// malformed (unbalanced brackets, a range that runs backwards, more than `limit` names).
std::vector<std::string> ExpandHostlist(std::string_view list, std::string* error, size_t limit = 1000000);

}  // namespace ladder
