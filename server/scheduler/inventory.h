#pragma once
// A static cluster inventory (for the simulator, tests, and clusters whose nodes are known in advance), in a
// line format modelled on slurm.conf's NodeName lines:
//
//   # comments start with '#'; blank lines are ignored
//   defaults cores=42 gpus=6 memory=512G          # applies to the lines after it
//   h[001-018] rack=r01 switch=s1                 # a hostlist: h001 .. h018 (zero padding kept)
//   h[019-036] rack=r02 switch=s1 state=draining
//   login1 gpus=0 cores=8 slots=8 label.zone=a    # any other label as label.NAME=VALUE
//
// Keys (case-insensitive): cores, slots (ranks the node runs at once; default: gpus when > 0, else cores),
// gpus, memory (bytes, or with a K/M/G/T suffix, binary multiples, "GiB"/"GB"/"G" alike), rack, switch,
// state (up | draining | down | quarantined), label.NAME. A hostlist holds one bracketed list of numbers and
// ranges: "n[1-4,7]", "rack1-n[01-18]".
//
// Errors name file:line, the field and the value, escaped (common/printable.h); every error in the file is
// reported, not only the first (up to kMaxInventoryErrors).
// The parser does no I/O: the caller reads the file.
#include <string>
#include <string_view>
#include <vector>

#include "common/hostlist.h"
#include "server/scheduler/cluster.h"

namespace ladder::scheduler {

// What an inventory may cost: its size, its nodes in all (hostlists expanded), the errors kept (the rest are
// counted in one last error).
inline constexpr size_t kMaxInventoryBytes = 16 << 20;
inline constexpr size_t kMaxInventoryNodes = 65536;  // several times the largest machines (Frontier: 9,408 nodes)
inline constexpr size_t kMaxInventoryErrors = 1000;
inline constexpr size_t kMaxInventoryLabels = 64;  // label.NAME settings of one line

struct InventoryError {
  std::string file;
  int line = 0;       // 1-based; 0 when not tied to a line
  std::string field;  // the key, "name" for the node name, or "" for the whole line
  std::string message;
  std::string ToString() const;  // "cluster.inv:4: gpus: expected a whole number >= 0, got 'six'"
};

// Parses `text` (called `file` in errors). Returns the errors; `nodes` is filled (in file order) only when
// there are none.
std::vector<InventoryError> ParseInventory(std::string_view text, std::string_view file,
                                           std::vector<NodeSpec>* nodes);

// The hostlists of its lines (common/hostlist.h).
using ::ladder::ExpandHostlist;

}  // namespace ladder::scheduler
