#include "worker/slurm_topology.h"

#include <cstdlib>
#include <sstream>
#include <vector>

#include "common/executable.h"
#include "common/hostlist.h"

namespace ladder::worker {

namespace {

// The value of `key=` among the line's space-separated fields ("" when absent).
std::string Field(const std::string& line, const std::string& key) {
  std::istringstream in(line);
  for (std::string word; in >> word;) {
    if (word.rfind(key + "=", 0) == 0) return word.substr(key.size() + 1);
  }
  return "";
}

}  // namespace

std::map<std::string, SlurmLabels> ParseSlurmTopology(const std::string& text, std::string* error) {
  // node → (level, the lowest-level switch listing it); switch → the switch above it. Upper switches list every
  // node below them too ("SwitchName=top Level=1 ... Nodes=n[1-4] Switches=leaf[1-2]"): the leaf is the lowest.
  std::map<std::string, std::pair<int, std::string>> leaf_of;
  std::map<std::string, std::string> parent_of;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const std::string name = Field(line, "SwitchName");
    if (name.empty()) continue;  // not a switch line (a message, a blank line)
    const std::string level_text = Field(line, "Level");
    const int level = level_text.empty() ? 0 : std::atoi(level_text.c_str());
    for (const char* key : {"Nodes", "Switches"}) {
      const std::string list = Field(line, key);
      if (list.empty()) continue;
      std::string bad;
      std::vector<std::string> members;
      // A list may join several hostlists with commas outside brackets: "n[1-2],m3".
      std::string part;
      int depth = 0;
      auto flush = [&] {
        if (part.empty()) return;
        for (auto& m : ExpandHostlist(part, &bad)) members.push_back(m);
        if (!bad.empty() && error && error->empty()) *error = "cannot read '" + part + "' in: " + line;
        part.clear();
      };
      for (char c : list) {
        depth += c == '[' ? 1 : c == ']' ? -1 : 0;
        if (c == ',' && depth == 0) {
          flush();
        } else {
          part += c;
        }
      }
      flush();
      for (const auto& m : members) {
        if (std::string(key) == "Switches") {
          parent_of[m] = name;
        } else if (auto it = leaf_of.find(m); it == leaf_of.end() || level < it->second.first) {
          leaf_of[m] = {level, name};
        }
      }
    }
  }
  std::map<std::string, SlurmLabels> out;
  for (const auto& [node, leaf] : leaf_of) {
    auto up = parent_of.find(leaf.second);
    out[node] = {leaf.second, up == parent_of.end() ? "" : up->second};
  }
  return out;
}

std::string AddSlurmTopologyLabels(const std::string& node, std::map<std::string, std::string>* labels,
                                   std::string* note) {
  std::string text;
  const int status = ShellOutput("scontrol show topology 2>&1", &text);
  if (status == -1) return "cannot run scontrol";
  if (status != 0) {
    if (text.find("No topology information") != std::string::npos) {
      *note = "the Slurm cluster has no topology plugin: no rack or switch labels";
      return "";
    }
    return "scontrol show topology failed: " + text.substr(0, 300);
  }
  std::string error;
  auto all = ParseSlurmTopology(text, &error);
  auto it = all.find(node);
  if (it == all.end()) return "no switch of `scontrol show topology` lists node '" + node + "'" +
                              (error.empty() ? "" : " (" + error + ")");
  (*labels)["rack"] = it->second.rack;
  if (!it->second.sw.empty()) (*labels)["switch"] = it->second.sw;
  *note = "Slurm topology: rack " + it->second.rack + (it->second.sw.empty() ? "" : ", switch " + it->second.sw);
  return "";
}

std::string SlurmNodeAddress() {
  const char* node = std::getenv("SLURMD_NODENAME");
  if (!node || !*node || std::string(node).find_first_of("'\\") != std::string::npos) return "";
  std::string text;
  if (ShellOutput("scontrol show node '" + std::string(node) + "' 2>/dev/null", &text) != 0) return "";
  std::istringstream in(text);
  for (std::string word; in >> word;) {
    if (word.rfind("NodeAddr=", 0) == 0) return word.substr(9);
  }
  return "";
}

}  // namespace ladder::worker
