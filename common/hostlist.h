#pragma once
// Slurm's compressed host lists ("n[001-003,7]"), as SLURM_JOB_NODELIST and inventories write them: read by the
// coordinator's inventory and by a worker that learns its allocation's nodes.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ladder {

// "n[001-003,7]" -> n001 n002 n003 n7; a name without brackets is itself. Empty result and `error` set when
// malformed (unbalanced brackets, a range that runs backwards, more than `limit` names).
std::vector<std::string> ExpandHostlist(std::string_view list, std::string* error, size_t limit = 1000000);

}  // namespace ladder
