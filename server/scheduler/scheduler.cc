#include "server/scheduler/scheduler.h"

#include <algorithm>

namespace ladder::scheduler {

std::string_view PriorityName(Priority p) {
  switch (p) {
    case Priority::kSearch: return "search";
    case Priority::kPromoted: return "promoted";
    case Priority::kHero: return "hero";
  }
  return "?";
}

NodeNeed GroupRequest::need() const {
  NodeNeed n;
  n.slots = ranks_per_node;
  n.gpus = ranks_per_node * gpus_per_rank;
  n.cores = cores_per_node;
  n.memory_bytes = memory_per_node;
  n.exclusive = nodes >= 2;
  n.pool = pool;
  return n;
}

bool NodeGroupScheduler::Shape::Dominates(int r_nodes, const NodeNeed& n) const {
  return r_nodes >= nodes && n.slots >= need.slots && n.gpus >= need.gpus && n.cores >= need.cores &&
         n.memory_bytes >= need.memory_bytes && (n.exclusive || !need.exclusive) && n.pool == need.pool;
}

NodeGroupScheduler::NodeGroupScheduler(SchedulerOptions options) : opt_(options) {}

double NodeGroupScheduler::Duration(const GroupRequest& r) const {
  return r.estimated_duration_s.value_or(opt_.default_duration_s);
}

Status NodeGroupScheduler::Validate(const GroupRequest& r) const {
  std::string who = "trial " + std::to_string(r.trial_id) + ": ";
  if (r.nodes < 1) return Status::InvalidArgument(who + "nodes must be >= 1, got " + std::to_string(r.nodes));
  if (r.ranks_per_node < 1) {
    return Status::InvalidArgument(who + "ranks_per_node must be >= 1, got " + std::to_string(r.ranks_per_node));
  }
  if (r.gpus_per_rank < 0) {
    return Status::InvalidArgument(who + "gpus_per_rank must be >= 0, got " + std::to_string(r.gpus_per_rank));
  }
  if (r.cores_per_node < 0) {
    return Status::InvalidArgument(who + "cores_per_node must be >= 0, got " + std::to_string(r.cores_per_node));
  }
  if (r.memory_per_node < 0) {
    return Status::InvalidArgument(who + "memory_per_node must be >= 0, got " + std::to_string(r.memory_per_node));
  }
  if (r.estimated_duration_s && !(*r.estimated_duration_s > 0)) {
    return Status::InvalidArgument(who + "estimated_duration_s must be > 0, got " +
                                   std::to_string(*r.estimated_duration_s));
  }
  return Status::Ok();
}

Status NodeGroupScheduler::Feasible(const GroupRequest& r) const {
  std::vector<int> classes;
  NodeNeed need = r.need();
  cluster_.EligibleClasses(need, &classes);
  int up = cluster_.UpTotal(classes);
  if (up >= r.nodes) return Status::Ok();
  return Status::FailedPrecondition("trial " + std::to_string(r.trial_id) + " needs " + std::to_string(r.nodes) +
                                    " node(s) with " + std::to_string(need.slots) + " slot(s) and " +
                                    std::to_string(need.gpus) + " GPU(s) each" +
                                    (need.pool.empty() ? "" : " in pool '" + need.pool + "'") + "; the cluster has " +
                                    std::to_string(up) + " such node(s) up");
}

int NodeGroupScheduler::BucketFor(const GroupRequest& r) {
  NodeNeed n = r.need();
  auto key = std::make_tuple(r.nodes, n.slots, n.gpus, n.cores, n.memory_bytes, n.pool);
  auto it = bucket_by_shape_.find(key);
  if (it != bucket_by_shape_.end()) return it->second;
  int b = static_cast<int>(buckets_.size());
  buckets_.emplace_back();
  buckets_.back().shape = Shape{r.nodes, n};
  bucket_by_shape_.emplace(key, b);
  return b;
}

void NodeGroupScheduler::Enqueue(const GroupRequest& r, double submit, uint64_t seq) {
  QueueKey key{-static_cast<int>(r.priority), submit, seq, r.trial_id, Duration(r)};
  int b = BucketFor(r);
  queue_.emplace(key, Queued{r, b});
  queued_[r.trial_id] = key;
  buckets_[b].keys.insert(key);
  buckets_[b].durations.insert(key.duration);
}

void NodeGroupScheduler::Dequeue(const QueueKey& key) {
  auto it = queue_.find(key);
  Bucket& b = buckets_[it->second.bucket];
  b.keys.erase(key);
  b.durations.erase(b.durations.find(key.duration));
  queued_.erase(key.trial);
  queue_.erase(it);
}

Status NodeGroupScheduler::Submit(const GroupRequest& r, double now) {
  if (Status st = Validate(r); !st.ok()) return st;
  if (queued_.count(r.trial_id) || running_.count(r.trial_id)) {
    return Status::AlreadyExists("trial " + std::to_string(r.trial_id) + " is already queued or running");
  }
  Enqueue(r, now, next_seq_++);
  return Status::Ok();
}

Status NodeGroupScheduler::Cancel(int64_t trial_id) {
  auto it = queued_.find(trial_id);
  if (it == queued_.end()) return Status::NotFound("trial " + std::to_string(trial_id) + " is not queued");
  Dequeue(it->second);
  return Status::Ok();
}

void NodeGroupScheduler::SetEnd(int64_t trial, Running& g, double end) {
  by_end_.erase({g.end, trial});
  g.end = end;
  by_end_.insert({g.end, trial});
}

void NodeGroupScheduler::Release(int64_t trial, Running& g) {
  NodeNeed need = g.req.need();
  for (const auto& s : g.group.slices) cluster_.Give(s, need, trial);
  by_end_.erase({g.end, trial});
  preempting_.erase(trial);
  running_by_class_[static_cast<int>(g.req.priority)]--;
}

Status NodeGroupScheduler::Finish(int64_t trial_id) {
  auto it = running_.find(trial_id);
  if (it == running_.end()) return Status::NotFound("trial " + std::to_string(trial_id) + " is not running");
  Release(trial_id, it->second);
  running_.erase(it);
  return Status::Ok();
}

Status NodeGroupScheduler::Requeue(int64_t trial_id, std::optional<double> remaining_estimate_s) {
  auto it = running_.find(trial_id);
  if (it == running_.end()) return Status::NotFound("trial " + std::to_string(trial_id) + " is not running");
  if (remaining_estimate_s && !(*remaining_estimate_s > 0)) {
    return Status::InvalidArgument("trial " + std::to_string(trial_id) + ": remaining estimate must be > 0, got " +
                                   std::to_string(*remaining_estimate_s));
  }
  Running& g = it->second;
  Release(trial_id, g);
  GroupRequest req = g.req;
  if (remaining_estimate_s) req.estimated_duration_s = remaining_estimate_s;
  double submit = g.submit;
  uint64_t seq = g.seq;
  running_.erase(it);
  Enqueue(req, submit, seq);
  return Status::Ok();
}

Status NodeGroupScheduler::UpdateEstimate(int64_t trial_id, double estimated_duration_s) {
  auto it = running_.find(trial_id);
  if (it == running_.end()) return Status::NotFound("trial " + std::to_string(trial_id) + " is not running");
  if (!(estimated_duration_s > 0)) {
    return Status::InvalidArgument("trial " + std::to_string(trial_id) + ": estimate must be > 0, got " +
                                   std::to_string(estimated_duration_s));
  }
  Running& g = it->second;
  g.req.estimated_duration_s = estimated_duration_s;
  if (g.state == RunState::kRunning) SetEnd(trial_id, g, g.start + estimated_duration_s);
  return Status::Ok();
}

Status NodeGroupScheduler::Attach(const GroupRequest& r, const NodeGroup& group, double started) {
  if (Status st = Validate(r); !st.ok()) return st;
  if (queued_.count(r.trial_id) || running_.count(r.trial_id)) {
    return Status::AlreadyExists("trial " + std::to_string(r.trial_id) + " is already queued or running");
  }
  NodeNeed need = r.need();
  if (group.size() != r.nodes) {
    return Status::InvalidArgument("trial " + std::to_string(r.trial_id) + ": group has " +
                                   std::to_string(group.size()) + " node(s), the request " + std::to_string(r.nodes));
  }
  for (const auto& s : group.slices) {
    if (static_cast<int>(s.slots.size()) != need.slots || static_cast<int>(s.gpus.size()) != need.gpus) {
      return Status::InvalidArgument("trial " + std::to_string(r.trial_id) + ": node index " +
                                     std::to_string(s.node) + " holds " + std::to_string(s.slots.size()) +
                                     " slot(s) and " + std::to_string(s.gpus.size()) + " GPU(s), the request " +
                                     std::to_string(need.slots) + " and " + std::to_string(need.gpus));
    }
  }
  for (size_t i = 0; i < group.slices.size(); ++i) {
    Status st = cluster_.TakeExact(group.slices[i], need, r.trial_id);
    if (!st.ok()) {
      for (size_t j = 0; j < i; ++j) cluster_.Give(group.slices[j], need, r.trial_id);
      return st;
    }
  }
  Running g;
  g.req = r;
  g.group = group;
  g.start = started;
  g.end = started + Duration(r);
  g.submit = started;
  g.seq = next_seq_++;
  by_end_.insert({g.end, r.trial_id});
  running_by_class_[static_cast<int>(r.priority)]++;
  running_.emplace(r.trial_id, std::move(g));
  return Status::Ok();
}

Status NodeGroupScheduler::SetNodeState(std::string_view id, NodeState state, std::vector<int64_t>* affected) {
  if (Status st = cluster_.SetState(id, state); !st.ok()) return st;
  if (state != NodeState::kDown && state != NodeState::kQuarantined) return Status::Ok();
  int node = *cluster_.IndexOf(id);
  for (int64_t trial : cluster_.trials_on(node)) {
    auto it = running_.find(trial);
    if (it == running_.end()) continue;
    it->second.state = RunState::kFailed;
    preempting_.erase(trial);
    // The caller stops the rest of the group now: its other nodes are expected back at once.
    SetEnd(trial, it->second, it->second.start);  // Reserve() reads ends before `now` as `now`
    if (affected) affected->push_back(trial);
  }
  return Status::Ok();
}

const NodeGroup* NodeGroupScheduler::GroupOf(int64_t trial_id) const {
  auto it = running_.find(trial_id);
  return it == running_.end() ? nullptr : &it->second.group;
}

bool NodeGroupScheduler::IsPreempting(int64_t trial_id) const {
  auto it = running_.find(trial_id);
  return it != running_.end() && it->second.state == RunState::kPreempting;
}

int NodeGroupScheduler::RacksSpanned(const NodeGroup& group) const { return SpannedRacks(group.nodes()); }

int NodeGroupScheduler::SpannedRacks(const std::vector<int>& nodes) const {
  // Nodes come rack by rack from PlanNodes, but count distinct racks in general.
  int count = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    int rack = cluster_.rack_of(nodes[i]);
    bool seen = false;
    for (size_t j = 0; j < i && !seen; ++j) seen = cluster_.rack_of(nodes[j]) == rack;
    if (!seen) ++count;
  }
  return count;
}

void NodeGroupScheduler::Age(double now) {
  if (opt_.aging_interval_s <= 0) return;
  const int search = -static_cast<int>(Priority::kSearch);
  auto it = queue_.lower_bound(QueueKey{search, -std::numeric_limits<double>::infinity(), 0, 0, 0});
  while (it != queue_.end() && it->first.neg_class == search && it->first.submit + opt_.aging_interval_s <= now) {
    QueueKey key = it->first;
    key.neg_class = -static_cast<int>(Priority::kPromoted);
    Bucket& b = buckets_[it->second.bucket];
    b.keys.erase(it->first);
    b.keys.insert(key);
    auto node = queue_.extract(it++);
    node.key() = key;
    queue_.insert(std::move(node));
    queued_[key.trial] = key;
  }
}

bool NodeGroupScheduler::PlanNodes(const GroupRequest& r, const NodeNeed& need, bool include_reserved,
                                   std::vector<int>* nodes) {
  nodes->clear();
  if (!need.exclusive && r.nodes == 1) {
    int n = cluster_.FindPartialNode(need, include_reserved);
    if (n >= 0) {
      nodes->push_back(n);
      return true;
    }
  }
  cluster_.EligibleClasses(need, &classes_);
  if (cluster_.IdleTotal(classes_, include_reserved) < r.nodes) return false;
  const int racks = cluster_.rack_count();
  usable_.assign(racks, 0);
  for (int rack = 0; rack < racks; ++rack) usable_[rack] = cluster_.IdleInRack(rack, classes_, include_reserved);
  if (!ChooseRacks(cluster_, usable_, r.nodes, opt_.placement, &plan_, &scratch_)) return false;
  for (const auto& [rack, k] : plan_) cluster_.IdleNodesInRack(rack, classes_, k, include_reserved, nodes);
  return static_cast<int>(nodes->size()) == r.nodes;
}

void NodeGroupScheduler::StartOn(const GroupRequest& r, const NodeNeed& need, const std::vector<int>& nodes,
                                 double now, double submit, uint64_t seq, std::vector<Decision>* out) {
  Running g;
  g.req = r;
  g.group.slices.reserve(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    g.group.slices.push_back(cluster_.Take(nodes[i], need, r.trial_id, static_cast<int>(i) * r.ranks_per_node));
  }
  if (starts_left_ > 0) --starts_left_;
  g.start = now;
  g.end = now + Duration(r);
  g.submit = submit;
  g.seq = seq;
  by_end_.insert({g.end, r.trial_id});
  running_by_class_[static_cast<int>(r.priority)]++;
  counters_.started++;
  Decision d;
  d.kind = Decision::Kind::kStart;
  d.trial_id = r.trial_id;
  d.group = g.group;
  out->push_back(std::move(d));
  running_.emplace(r.trial_id, std::move(g));
}

bool NodeGroupScheduler::TryStart(const GroupRequest& r, double now, bool include_reserved, double submit,
                                  uint64_t seq, std::vector<Decision>* out) {
  NodeNeed need = r.need();
  if (!PlanNodes(r, need, include_reserved, &nodes_)) return false;
  StartOn(r, need, nodes_, now, submit, seq, out);
  return true;
}

void NodeGroupScheduler::ClearReservationMarks() {
  for (int n : reserved_marks_) cluster_.SetReserved(n, false);
  reserved_marks_.clear();
}

int NodeGroupScheduler::BeginCapacityScan(const GroupRequest& head) {
  cluster_.EligibleClasses(head.need(), &classes_);
  const int racks = cluster_.rack_count();
  usable_.assign(racks, 0);
  for (int rack = 0; rack < racks; ++rack) usable_[rack] = cluster_.IdleInRack(rack, classes_, true);
  if (static_cast<int>(stamp_.size()) < cluster_.index_limit()) {
    stamp_.resize(cluster_.index_limit(), 0);
    remaining_.resize(cluster_.index_limit(), 0);
  }
  ++stamp_now_;
  return cluster_.IdleTotal(classes_, true);
}

bool NodeGroupScheduler::EligibleForScan(int n) const {
  return cluster_.present(n) && cluster_.state(n) == NodeState::kUp &&
         std::find(classes_.begin(), classes_.end(), cluster_.class_of(n)) != classes_.end();
}

void NodeGroupScheduler::Reserve(const GroupRequest& head, double now) {
  reservation_.reset();
  int have = BeginCapacityScan(head);
  auto eligible = [&](int n) { return EligibleForScan(n); };
  freed_.clear();
  double shadow = now;
  for (auto it = by_end_.begin(); it != by_end_.end() && have < head.nodes; ++it) {
    const Running& g = running_.at(it->second);
    shadow = std::max(it->first, now);
    for (const auto& s : g.group.slices) {
      int n = s.node;
      if (stamp_[n] != stamp_now_) stamp_[n] = stamp_now_, remaining_[n] = static_cast<int>(cluster_.trials_on(n).size());
      if (--remaining_[n] == 0 && eligible(n)) {
        freed_.push_back(n);
        usable_[cluster_.rack_of(n)]++;
        have++;
      }
    }
  }
  if (have < head.nodes) return;  // not enough UP nodes even when everything ends
  if (!ChooseRacks(cluster_, usable_, head.nodes, opt_.placement, &plan_, &scratch_)) return;
  Reservation res;
  res.trial_id = head.trial_id;
  res.start = shadow;
  for (const auto& [rack, k] : plan_) {
    // Nodes busy now first (reserving them costs backfill nothing), then idle ones.
    int taken = 0;
    for (int n : freed_) {
      if (taken < k && cluster_.rack_of(n) == rack) res.nodes.push_back(n), ++taken;
    }
    if (taken < k) {
      size_t before = res.nodes.size();
      cluster_.IdleNodesInRack(rack, classes_, k - taken, true, &res.nodes);
      taken += static_cast<int>(res.nodes.size() - before);
    }
  }
  std::sort(res.nodes.begin(), res.nodes.end());
  for (int n : res.nodes) {
    cluster_.SetReserved(n, true);
    reserved_marks_.push_back(n);
  }
  reservation_ = std::move(res);
}

namespace {
// The cost of freeing a node (MaybePreempt): the highest class on it, then the least work lost (latest start
// first).
struct FreeCandidate {
  int cls;
  double neg_start;
  int node;
  bool operator<(const FreeCandidate& o) const {
    return cls != o.cls ? cls < o.cls : neg_start != o.neg_start ? neg_start < o.neg_start : node < o.node;
  }
};
}  // namespace

std::vector<int64_t> NodeGroupScheduler::ChooseVictims(const std::vector<int>& coming) {
  // Per planned rack: idle nodes first, then nodes being freed already, then the cheapest freeable nodes.
  std::vector<std::vector<FreeCandidate>> by_plan(plan_.size());
  auto plan_index = [&](int rack) {
    for (size_t i = 0; i < plan_.size(); ++i) {
      if (plan_[i].first == rack) return static_cast<int>(i);
    }
    return -1;
  };
  for (int n : freed_) {
    int i = plan_index(cluster_.rack_of(n));
    if (i < 0) continue;
    FreeCandidate c{0, std::numeric_limits<double>::infinity(), n};
    for (int64_t t : cluster_.trials_on(n)) {
      const Running& g = running_.at(t);
      c.cls = std::max(c.cls, static_cast<int>(g.req.priority));
      c.neg_start = std::min(c.neg_start, -g.start);
    }
    by_plan[i].push_back(c);
  }
  std::vector<int64_t> victims;
  std::vector<int> idle_now;
  for (size_t i = 0; i < plan_.size(); ++i) {
    const auto [rack, k] = plan_[i];
    idle_now.clear();
    cluster_.IdleNodesInRack(rack, classes_, k, true, &idle_now);
    int taken = static_cast<int>(idle_now.size());
    for (int n : coming) {
      if (taken < k && cluster_.rack_of(n) == rack) ++taken;
    }
    if (taken >= k) continue;
    std::sort(by_plan[i].begin(), by_plan[i].end());
    for (const FreeCandidate& c : by_plan[i]) {
      if (taken >= k) break;
      ++taken;
      for (int64_t t : cluster_.trials_on(c.node)) victims.push_back(t);
    }
  }
  std::sort(victims.begin(), victims.end());
  victims.erase(std::unique(victims.begin(), victims.end()), victims.end());
  return victims;
}

void NodeGroupScheduler::MaybePreempt(const GroupRequest& head, double now, std::vector<Decision>* out) {
  const int hp = static_cast<int>(head.priority);
  int lower = 0;
  for (int c = 0; c < hp; ++c) lower += running_by_class_[c];
  if (lower == 0) return;
  int have = BeginCapacityScan(head);
  auto eligible = [&](int n) { return EligibleForScan(n); };
  auto count_down = [&](const Running& g, std::vector<int>* freed) {
    for (const auto& s : g.group.slices) {
      int n = s.node;
      if (stamp_[n] != stamp_now_) stamp_[n] = stamp_now_, remaining_[n] = static_cast<int>(cluster_.trials_on(n).size());
      if (--remaining_[n] == 0 && eligible(n)) {
        if (freed) freed->push_back(n);
        usable_[cluster_.rack_of(n)]++;
        have++;
      }
    }
  };
  // Nodes that preemptions already under way will free.
  std::vector<int> coming;
  for (int64_t t : preempting_) count_down(running_.at(t), &coming);
  if (have >= head.nodes) return;  // enough is on its way
  // Nodes that stopping lower-class groups would free.
  freed_.clear();
  for (const auto& [trial, g] : running_) {
    if (g.state == RunState::kRunning && g.req.preemptible && static_cast<int>(g.req.priority) < hp) {
      count_down(g, &freed_);
    }
  }
  if (have < head.nodes) return;
  if (!ChooseRacks(cluster_, usable_, head.nodes, opt_.placement, &plan_, &scratch_)) return;
  const std::vector<int64_t> victims = ChooseVictims(coming);
  for (int64_t t : victims) {
    Running& g = running_.at(t);
    if (g.state != RunState::kRunning) continue;
    g.state = RunState::kPreempting;
    preempting_.insert(t);
    SetEnd(t, g, std::min(g.end, now + opt_.preemption_grace_s));
    counters_.preempted++;
    Decision d;
    d.kind = Decision::Kind::kPreempt;
    d.trial_id = t;
    d.group = g.group;
    d.for_trial_id = head.trial_id;
    out->push_back(std::move(d));
  }
}

void NodeGroupScheduler::MarkFailed(const Shape& failed, bool reserved, double limit) {
  for (Bucket& b : buckets_) {
    if (b.mode == Bucket::Mode::kDone || !failed.Dominates(b.shape.nodes, b.shape.need)) continue;
    if (reserved) {
      b.mode = Bucket::Mode::kDone;
    } else if (b.mode == Bucket::Mode::kAny) {
      // Reserved nodes remain, for requests that end before the head's reservation starts.
      b.mode = *b.durations.begin() <= limit ? Bucket::Mode::kReservedOnly : Bucket::Mode::kDone;
    }
  }
}

void NodeGroupScheduler::Backfill(const QueueKey& head, double now, double shadow, std::vector<Decision>* out) {
  const double limit = shadow - now;  // a request whose estimate is at most this ends before the shadow time
  for (Bucket& b : buckets_) {
    b.cur = b.keys.begin();
    if (b.cur != b.keys.end() && b.cur->trial == head.trial) ++b.cur;
    b.mode = b.cur == b.keys.end() ? Bucket::Mode::kDone : Bucket::Mode::kAny;
  }
  int examined = 0;
  while (true) {
    // The bucket whose next request comes first in queue order.
    Bucket* best = nullptr;
    for (Bucket& b : buckets_) {
      if (b.mode != Bucket::Mode::kDone && (best == nullptr || *b.cur < *best->cur)) best = &b;
    }
    if (best == nullptr || starts_left_ == 0 || ++examined > opt_.backfill_depth || !cluster_.AnyFree()) break;
    Bucket& b = *best;
    const QueueKey key = *b.cur;
    counters_.examined++;
    auto advance = [&] {
      ++b.cur;
      if (b.cur != b.keys.end() && b.cur->trial == head.trial) ++b.cur;
      if (b.cur == b.keys.end()) b.mode = Bucket::Mode::kDone;
    };
    bool reserved = b.mode == Bucket::Mode::kReservedOnly;
    if (reserved && key.duration > limit) {
      advance();  // this one may not touch reserved nodes; a later one of the shape may
      continue;
    }
    const GroupRequest& r = queue_.at(key).req;
    if (PlanNodes(r, b.shape.need, reserved, &nodes_)) {
      advance();  // before Dequeue erases `key` from the bucket
      StartOn(r, b.shape.need, nodes_, now, key.submit, key.seq, out);
      counters_.backfilled++;
      Dequeue(key);  // `r` dangles from here on
      continue;
    }
    MarkFailed(b.shape, reserved, limit);
  }
}

std::vector<Decision> NodeGroupScheduler::Schedule(double now, size_t max_starts) {
  counters_.passes++;
  std::vector<Decision> out;
  starts_left_ = max_starts;
  Age(now);
  ClearReservationMarks();
  reservation_.reset();
  // In queue order, start what fits until the first request that does not: the head.
  for (auto it = queue_.begin(); it != queue_.end() && starts_left_ > 0;) {
    const QueueKey key = it->first;
    const GroupRequest& r = it->second.req;
    ++it;
    counters_.examined++;
    if (!Feasible(r).ok()) continue;  // never blocks the queue
    NodeNeed need = r.need();
    if (PlanNodes(r, need, true, &nodes_)) {
      StartOn(r, need, nodes_, now, key.submit, key.seq, &out);
      Dequeue(key);  // `r` dangles from here on
      continue;
    }
    if (opt_.preemption) MaybePreempt(r, now, &out);
    if (!opt_.backfill) break;
    Reserve(r, now);
    Backfill(key, now, reservation_ ? reservation_->start : std::numeric_limits<double>::infinity(), &out);
    break;
  }
  ClearReservationMarks();
  return out;
}

}  // namespace ladder::scheduler
