#pragma once
// Slurm's switch topology as ladder's topology labels. `scontrol show topology` (topology/tree) prints one line per
// switch:
//   SwitchName=leaf1 Level=0 LinkSpeed=1 Nodes=n[1-2]
//   SwitchName=top Level=1 LinkSpeed=1 Switches=leaf[1-2]
// A node's `rack` is the leaf switch that lists it (the nodes one hop apart: what the scheduler keeps a group
// inside), its `switch` the switch above that leaf ("" at the top). Pure: the caller runs scontrol.
#include <map>
#include <string>

namespace ladder::worker {

struct SlurmLabels {
  std::string rack, sw;
};

// Node name → its labels; nodes no leaf lists are absent. `error` gets the first line that cannot be read (the
// rest is still used), and is left empty otherwise.
std::map<std::string, SlurmLabels> ParseSlurmTopology(const std::string& scontrol_output, std::string* error);

// Runs `scontrol show topology` and adds `node`'s rack and switch to `labels`. Returns what went wrong in words
// ("" when the labels were added, or when the cluster has no topology plugin: then there is nothing to add and the
// note says so in `note`).
std::string AddSlurmTopologyLabels(const std::string& node, std::map<std::string, std::string>* labels,
                                   std::string* note);

// The address Slurm reaches this node at (NodeAddr of `scontrol show node $SLURMD_NODENAME`): what the other nodes
// of the allocation reach it at too (a worker's MASTER_ADDR, ladder up --slurm's coordinator). "" outside Slurm or
// when scontrol does not say.
std::string SlurmNodeAddress();

}  // namespace ladder::worker
