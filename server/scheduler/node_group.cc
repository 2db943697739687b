#include "server/scheduler/node_group.h"

#include <algorithm>

#include "common/id_set.h"

namespace ladder::scheduler {

std::vector<int> NodeGroup::nodes() const {
  std::vector<int> out;
  out.reserve(slices.size());
  for (const auto& s : slices) out.push_back(s.node);
  return out;
}

std::string BracketIdSet(const std::vector<int>& ids) {
  std::string s = FormatIdSet(ids);
  if (s.find_first_of("-,") != std::string::npos) return "[" + s + "]";
  return s;
}

std::string NodeGroup::ToString() const {
  // Nodes that hold the same GPU set (or, without GPUs, the same slot set) print as one term, in the order
  // of their first node.
  struct Term {
    bool gpu;
    std::vector<int> ids;
    std::vector<int> nodes;
  };
  std::vector<Term> terms;
  for (const auto& s : slices) {
    bool gpu = !s.gpus.empty();
    std::vector<int> ids = gpu ? s.gpus : s.slots;
    std::sort(ids.begin(), ids.end());
    auto it = std::find_if(terms.begin(), terms.end(),
                           [&](const Term& t) { return t.gpu == gpu && t.ids == ids; });
    if (it == terms.end()) {
      terms.push_back({gpu, std::move(ids), {s.node}});
    } else {
      it->nodes.push_back(s.node);
    }
  }
  std::string out;
  for (const auto& t : terms) {
    if (!out.empty()) out += ' ';
    out += "n" + BracketIdSet(t.nodes);
    if (!t.ids.empty()) out += (t.gpu ? ":gpu" : ":slot") + BracketIdSet(t.ids);
  }
  return out;
}

}  // namespace ladder::scheduler
