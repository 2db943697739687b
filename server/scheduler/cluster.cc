#include "server/scheduler/cluster.h"

#include <algorithm>

namespace ladder::scheduler {

std::string_view NodeStateName(NodeState s) {
  switch (s) {
    case NodeState::kUp: return "up";
    case NodeState::kDraining: return "draining";
    case NodeState::kDown: return "down";
    case NodeState::kQuarantined: return "quarantined";
  }
  return "?";
}

std::optional<NodeState> ParseNodeState(std::string_view s) {
  for (NodeState st : {NodeState::kUp, NodeState::kDraining, NodeState::kDown, NodeState::kQuarantined}) {
    if (NodeStateName(st) == s) return st;
  }
  return std::nullopt;
}

namespace {
std::string Label(const NodeSpec& spec, const char* key) {
  auto it = spec.labels.find(key);
  return it == spec.labels.end() ? std::string() : it->second;
}
}  // namespace

Status Cluster::Validate(const NodeSpec& spec) const {
  if (spec.id.empty()) return Status::InvalidArgument("node id: must not be empty");
  const auto& r = spec.resources;
  if (r.slots < 1) return Status::InvalidArgument("node " + spec.id + ": slots must be >= 1, got " + std::to_string(r.slots));
  if (r.cores < 0) return Status::InvalidArgument("node " + spec.id + ": cores must be >= 0, got " + std::to_string(r.cores));
  if (r.gpus < 0) return Status::InvalidArgument("node " + spec.id + ": gpus must be >= 0, got " + std::to_string(r.gpus));
  if (r.memory_bytes < 0) {
    return Status::InvalidArgument("node " + spec.id + ": memory must be >= 0, got " + std::to_string(r.memory_bytes));
  }
  return Status::Ok();
}

int Cluster::RackFor(const NodeSpec& spec) {
  std::string name = Label(spec, kRackLabel);
  auto it = rack_by_name_.find(name);
  if (it != rack_by_name_.end()) return it->second;
  std::string sw_name = Label(spec, kSwitchLabel);
  int sw;
  auto sit = switch_by_name_.find(sw_name);
  if (sit == switch_by_name_.end()) {
    sw = static_cast<int>(switches_.size());
    switches_.push_back({sw_name, {}});
    switch_by_name_.emplace(sw_name, sw);
  } else {
    sw = sit->second;
  }
  int r = static_cast<int>(racks_.size());
  Rack rack;
  rack.name = name;
  rack.idle.resize(classes_.size());
  rack.reserved_idle.resize(classes_.size());
  racks_.push_back(std::move(rack));
  switches_[sw].racks.push_back(r);
  rack_by_name_.emplace(std::move(name), r);
  return r;
}

int Cluster::ClassFor(const NodeResources& res) {
  for (size_t c = 0; c < classes_.size(); ++c) {
    if (classes_[c].res == res) return static_cast<int>(c);
  }
  classes_.push_back({res});
  for (auto& rack : racks_) {
    rack.idle.resize(classes_.size());
    rack.reserved_idle.resize(classes_.size());
  }
  return static_cast<int>(classes_.size()) - 1;
}

void Cluster::ResizeRack(int rack, int delta) {
  racks_[rack].size += delta;
  max_rack_size_ = 0;
  for (const auto& r : racks_) max_rack_size_ = std::max(max_rack_size_, r.size);
}

int Cluster::IdealRacks(int nodes) const {
  if (max_rack_size_ <= 0) return 1;
  return (nodes + max_rack_size_ - 1) / max_rack_size_;
}

void Cluster::Place(int n) {
  Node& node = nodes_[n];
  node.cls = ClassFor(node.spec.resources);
  node.rack = RackFor(node.spec);
  ResizeRack(node.rack, +1);
  const auto& r = node.spec.resources;
  node.free_slots = r.slots;
  node.free_gpus = r.gpus;
  node.free_cores = r.cores;
  node.free_memory = r.memory_bytes;
  node.slot_used.assign(r.slots, 0);
  node.gpu_used.assign(r.gpus, 0);
  node.exclusive = false;
}

void Cluster::CountUp(int n, int sign) {
  const Node& node = nodes_[n];
  if (!node.present || node.spec.state != NodeState::kUp) return;
  up_count_ += sign;
  classes_[node.cls].up += sign;
}

void Cluster::Unindex(int n) {
  Node& node = nodes_[n];
  if (node.in_idle) {
    Rack& rack = racks_[node.rack];
    rack.idle[node.cls].erase(n);
    classes_[node.cls].idle--;
    if (node.reserved) {
      rack.reserved_idle[node.cls]--;
      classes_[node.cls].reserved_idle--;
    }
    node.in_idle = false;
  }
  if (node.in_partial) {
    partial_.erase(node.partial_key);
    node.in_partial = false;
  }
}

void Cluster::Index(int n) {
  Node& node = nodes_[n];
  if (!node.present || node.spec.state != NodeState::kUp) return;
  if (node.trials.empty()) {
    Rack& rack = racks_[node.rack];
    rack.idle[node.cls].insert(n);
    classes_[node.cls].idle++;
    if (node.reserved) {
      rack.reserved_idle[node.cls]++;
      classes_[node.cls].reserved_idle++;
    }
    node.in_idle = true;
  } else if (!node.exclusive && node.free_slots > 0) {
    node.partial_key = {node.free_gpus, node.free_slots, n};
    partial_.insert(node.partial_key);
    node.in_partial = true;
  }
}

Status Cluster::AddNode(NodeSpec spec) {
  if (Status st = Validate(spec); !st.ok()) return st;
  auto it = by_id_.find(spec.id);
  int n;
  if (it != by_id_.end()) {
    if (nodes_[it->second].present) return Status::AlreadyExists("node " + spec.id + " already exists");
    n = it->second;
  } else {
    n = static_cast<int>(nodes_.size());
    nodes_.emplace_back();
    by_id_.emplace(spec.id, n);
  }
  Node& node = nodes_[n];
  node.spec = std::move(spec);
  node.present = true;
  node.trials.clear();
  node.reserved = false;
  Place(n);
  present_count_++;
  CountUp(n, +1);
  Index(n);
  return Status::Ok();
}

Status Cluster::UpdateNode(const NodeSpec& spec) {
  auto idx = IndexOf(spec.id);
  if (!idx) return Status::NotFound("node " + spec.id + " not found");
  if (Status st = Validate(spec); !st.ok()) return st;
  int n = *idx;
  Node& node = nodes_[n];
  bool topology_same = node.spec.resources == spec.resources &&
                       Label(node.spec, kRackLabel) == Label(spec, kRackLabel) &&
                       Label(node.spec, kSwitchLabel) == Label(spec, kSwitchLabel);
  if (topology_same) {
    node.spec.labels = spec.labels;
    return Status::Ok();
  }
  if (!node.trials.empty()) {
    return Status::FailedPrecondition("node " + spec.id + ": resources, rack and switch cannot change while " +
                                      std::to_string(node.trials.size()) + " group(s) run on it");
  }
  CountUp(n, -1);
  Unindex(n);
  ResizeRack(node.rack, -1);
  node.spec.resources = spec.resources;
  node.spec.labels = spec.labels;
  Place(n);
  CountUp(n, +1);
  Index(n);
  return Status::Ok();
}

Status Cluster::RemoveNode(std::string_view id) {
  auto idx = IndexOf(id);
  if (!idx) return Status::NotFound("node " + std::string(id) + " not found");
  Node& node = nodes_[*idx];
  if (!node.trials.empty()) {
    return Status::FailedPrecondition("node " + std::string(id) + " still holds " +
                                      std::to_string(node.trials.size()) + " group(s): finish or requeue them first");
  }
  CountUp(*idx, -1);
  Unindex(*idx);
  ResizeRack(node.rack, -1);
  node.present = false;
  node.reserved = false;
  present_count_--;
  return Status::Ok();
}

Status Cluster::SetState(std::string_view id, NodeState state) {
  auto idx = IndexOf(id);
  if (!idx) return Status::NotFound("node " + std::string(id) + " not found");
  int n = *idx;
  CountUp(n, -1);
  Unindex(n);
  nodes_[n].spec.state = state;
  CountUp(n, +1);
  Index(n);
  return Status::Ok();
}

std::optional<int> Cluster::IndexOf(std::string_view id) const {
  auto it = by_id_.find(id);
  if (it == by_id_.end() || !nodes_[it->second].present) return std::nullopt;
  return it->second;
}

void Cluster::EligibleClasses(const NodeNeed& need, std::vector<int>* out) const {
  out->clear();
  for (size_t c = 0; c < classes_.size(); ++c) {
    const auto& r = classes_[c].res;
    if (r.slots >= need.slots && r.gpus >= need.gpus && r.cores >= need.cores &&
        r.memory_bytes >= need.memory_bytes && r.pool == need.pool) {
      out->push_back(static_cast<int>(c));
    }
  }
}

int Cluster::IdleInRack(int rack, const std::vector<int>& classes, bool include_reserved) const {
  const Rack& r = racks_[rack];
  int n = 0;
  for (int c : classes) {
    n += static_cast<int>(r.idle[c].size());
    if (!include_reserved) n -= r.reserved_idle[c];
  }
  return n;
}

int Cluster::IdleTotal(const std::vector<int>& classes, bool include_reserved) const {
  int n = 0;
  for (int c : classes) n += classes_[c].idle - (include_reserved ? 0 : classes_[c].reserved_idle);
  return n;
}

int Cluster::UpTotal(const std::vector<int>& classes) const {
  int n = 0;
  for (int c : classes) n += classes_[c].up;
  return n;
}

void Cluster::IdleNodesInRack(int rack, const std::vector<int>& classes, int k, bool include_reserved,
                              std::vector<int>* out) const {
  const Rack& r = racks_[rack];
  size_t start = out->size();
  for (int pass = 0; pass < (include_reserved ? 2 : 1); ++pass) {
    for (int c : classes) {
      for (int n : r.idle[c]) {
        if (static_cast<int>(out->size() - start) >= k) break;
        if (nodes_[n].reserved == (pass == 1)) out->push_back(n);
      }
    }
  }
  // Lowest index first within what was taken (several classes interleave).
  std::sort(out->begin() + static_cast<std::ptrdiff_t>(start), out->end());
}

bool Cluster::AnyFree() const {
  if (!partial_.empty()) return true;
  for (const auto& c : classes_) {
    if (c.idle > 0) return true;
  }
  return false;
}

bool Cluster::FitsNow(int node, const NodeNeed& need) const {
  const Node& n = nodes_[node];
  if (!n.present || n.spec.state != NodeState::kUp || n.exclusive) return false;
  if ((need.exclusive && !n.trials.empty()) || n.spec.resources.pool != need.pool) return false;
  return n.free_slots >= need.slots && n.free_gpus >= need.gpus && n.free_cores >= need.cores &&
         n.free_memory >= need.memory_bytes;
}

int Cluster::FindPartialNode(const NodeNeed& need, bool include_reserved, int max_probe) const {
  if (need.exclusive) return -1;
  int probes = 0;
  for (auto it = partial_.lower_bound({need.gpus, need.slots, -1}); it != partial_.end() && probes < max_probe;
       ++it, ++probes) {
    int n = std::get<2>(*it);
    if (!include_reserved && nodes_[n].reserved) continue;
    if (FitsNow(n, need)) return n;
  }
  return -1;
}

NodeSlice Cluster::Take(int node, const NodeNeed& need, int64_t trial, int first_rank) {
  Unindex(node);
  Node& n = nodes_[node];
  NodeSlice slice;
  slice.node = node;
  slice.first_rank = first_rank;
  for (int i = 0; i < static_cast<int>(n.slot_used.size()) && static_cast<int>(slice.slots.size()) < need.slots; ++i) {
    if (!n.slot_used[i]) n.slot_used[i] = 1, slice.slots.push_back(i);
  }
  for (int i = 0; i < static_cast<int>(n.gpu_used.size()) && static_cast<int>(slice.gpus.size()) < need.gpus; ++i) {
    if (!n.gpu_used[i]) n.gpu_used[i] = 1, slice.gpus.push_back(i);
  }
  n.free_slots -= need.slots;
  n.free_gpus -= need.gpus;
  n.free_cores -= need.cores;
  n.free_memory -= need.memory_bytes;
  n.trials.push_back(trial);
  if (need.exclusive) n.exclusive = true;
  Index(node);
  return slice;
}

Status Cluster::TakeExact(const NodeSlice& slice, const NodeNeed& need, int64_t trial) {
  if (!present(slice.node)) return Status::NotFound("node index " + std::to_string(slice.node) + " not found");
  Node& n = nodes_[slice.node];
  auto bad = [&](const std::string& what) {
    return Status::FailedPrecondition("node " + n.spec.id + ": " + what + " for trial " + std::to_string(trial));
  };
  if (n.exclusive || (need.exclusive && !n.trials.empty())) return bad("held by another group");
  for (int s : slice.slots) {
    if (s < 0 || s >= static_cast<int>(n.slot_used.size()) || n.slot_used[s]) return bad("slot " + std::to_string(s) + " is not free");
  }
  for (int g : slice.gpus) {
    if (g < 0 || g >= static_cast<int>(n.gpu_used.size()) || n.gpu_used[g]) return bad("gpu " + std::to_string(g) + " is not free");
  }
  if (n.free_cores < need.cores || n.free_memory < need.memory_bytes) return bad("not enough cores or memory");
  Unindex(slice.node);
  for (int s : slice.slots) n.slot_used[s] = 1;
  for (int g : slice.gpus) n.gpu_used[g] = 1;
  n.free_slots -= static_cast<int>(slice.slots.size());
  n.free_gpus -= static_cast<int>(slice.gpus.size());
  n.free_cores -= need.cores;
  n.free_memory -= need.memory_bytes;
  n.trials.push_back(trial);
  if (need.exclusive) n.exclusive = true;
  Index(slice.node);
  return Status::Ok();
}

void Cluster::Give(const NodeSlice& slice, const NodeNeed& need, int64_t trial) {
  Unindex(slice.node);
  Node& n = nodes_[slice.node];
  for (int s : slice.slots) n.slot_used[s] = 0;
  for (int g : slice.gpus) n.gpu_used[g] = 0;
  n.free_slots += static_cast<int>(slice.slots.size());
  n.free_gpus += static_cast<int>(slice.gpus.size());
  n.free_cores += need.cores;
  n.free_memory += need.memory_bytes;
  auto it = std::find(n.trials.begin(), n.trials.end(), trial);
  if (it != n.trials.end()) n.trials.erase(it);
  if (n.trials.empty()) n.exclusive = false;
  Index(slice.node);
}

void Cluster::SetReserved(int node, bool reserved) {
  if (nodes_[node].reserved == reserved) return;
  Unindex(node);
  nodes_[node].reserved = reserved;
  Index(node);
}

}  // namespace ladder::scheduler
