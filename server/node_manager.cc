#include "server/node_manager.h"

#include <algorithm>

#include "common/log.h"
#include "common/wall_clock.h"
#include "server/log_component.h"

namespace ladder::server {

namespace {

// The node's pool: its worker's label `pool` ("" without one).
std::string PoolOf(const v1::WorkerResources& r) {
  const auto it = r.labels().find("pool");
  return it == r.labels().end() ? "" : it->second;
}

scheduler::NodeSpec NodeSpecOf(const v1::WorkerInfo& info, scheduler::NodeState state) {
  scheduler::NodeSpec spec;
  spec.id = info.node_id();
  const auto& r = info.resources();
  spec.resources.cores = std::max(1, r.cores());
  spec.resources.slots = std::max(1, r.slots());
  spec.resources.gpus = std::max(0, r.gpus());
  spec.resources.memory_bytes = std::max<int64_t>(0, r.memory_bytes());
  spec.labels.insert(r.labels().begin(), r.labels().end());
  spec.resources.pool = PoolOf(r);
  spec.state = state;
  return spec;
}

const char* StateWord(v1::WorkerState st) {
  return st == v1::WORKER_UP ? "up" : st == v1::WORKER_DRAINING ? "draining" : "down";
}

}  // namespace

NodeManager::NodeManager(store::Store& store, scheduler::NodeGroupScheduler& sched, EventHub& hub,
                         const CoordinatorOptions& options, std::function<void()> request_schedule)
    : store_(store),
      sched_(sched),
      hub_(hub),
      opt_(options),
      request_schedule_(std::move(request_schedule)),
      interval_(options.heartbeat_interval),
      lease_(options.heartbeat_timeout),
      admit_tokens_(std::max(1, options.registrations_per_second)),
      admit_at_(Clock::now()) {}

bool NodeManager::Admit(const std::shared_ptr<WorkerLink>& link, const v1::RegisterWorker& reg) {
  const int rate = opt_.registrations_per_second;
  if (rate <= 0 || reg.running_size() > 0) return true;
  const auto now = Clock::now();
  admit_tokens_ = std::min<double>(rate, admit_tokens_ + rate * std::chrono::duration<double>(now - admit_at_).count());
  admit_at_ = now;
  if (admit_tokens_ >= 1) {
    admit_tokens_ -= 1;
    return true;
  }
  // Refused: its own slot, one period after the last one given (the bucket refills at that pace), at most
  // kMaxRegistrationRetry ahead.
  const auto period = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(1.0 / rate));
  next_retry_slot_ = std::min(std::max(next_retry_slot_, now) + period, now + kMaxRegistrationRetry);
  const auto wait = std::max<int64_t>(
      1, std::chrono::duration_cast<std::chrono::milliseconds>(next_retry_slot_ - now).count());
  const std::string reason = "registrations are coming faster than " + std::to_string(rate) +
                             " a second; retry after " + std::to_string(wait) + " ms";
  v1::CoordinatorMessage m;
  m.mutable_retry_registration()->set_retry_after_ms(static_cast<int32_t>(wait));
  m.mutable_retry_registration()->set_reason(reason);
  link->Send(m);
  link->Close(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, reason));
  ++refused_;
  if (now - refused_log_at_ >= std::chrono::seconds(1)) {
    LogInfo(kLog, std::to_string(refused_ - refused_logged_) + " registrations told to retry later (" + reason + ")");
    refused_logged_ = refused_;
    refused_log_at_ = now;
  }
  return false;
}

void NodeManager::ScaleHeartbeats(const WorkerLink* registering) {
  if (opt_.heartbeats_per_second <= 0 || opt_.heartbeat_interval.count() <= 0) return;
  const auto wanted = std::chrono::milliseconds(static_cast<int64_t>(link_nodes_.size()) * 1000 /
                                                opt_.heartbeats_per_second);
  if (wanted < 2 * interval_) return;
  while (interval_ * 2 <= wanted) interval_ *= 2;
  lease_ = opt_.heartbeat_timeout * (interval_ / opt_.heartbeat_interval);
  LogInfo(kLog, std::to_string(link_nodes_.size()) + " workers connected: heartbeat interval " +
                    std::to_string(interval_.count()) + " ms, lease " + std::to_string(lease_.count()) + " ms");
  v1::CoordinatorMessage m;
  m.mutable_heartbeat_interval()->set_heartbeat_interval_ms(static_cast<int32_t>(interval_.count()));
  m.mutable_heartbeat_interval()->set_lease_ms(static_cast<int32_t>(lease_.count()));
  const auto now = Clock::now();
  for (auto& [id, n] : nodes_) {
    if (!n.link) continue;
    if (n.link.get() != registering) n.link->Send(m);  // that one hears it in its Registered
    n.lease_deadline = std::max(n.lease_deadline, now + lease_);
  }
}

void NodeManager::Load() {
  for (auto& node : store_.LoadNodes()) {
    const auto state =
        node.state() == v1::WORKER_QUARANTINED ? scheduler::NodeState::kQuarantined : scheduler::NodeState::kDown;
    auto st = sched_.AddNode(NodeSpecOf(node, state));
    if (!st.ok()) LogWarning(kLog, "node " + node.node_id() + " from the database: " + st.message());
    Node& n = nodes_[node.node_id()];
    n.info = std::move(node);
    n.info.set_busy_slots(0);
    if (n.info.state() != v1::WORKER_QUARANTINED) {
      n.info.set_state(v1::WORKER_DOWN);
      n.info.set_state_reason("not registered since the coordinator started");
    }
  }
}

std::optional<std::set<int64_t>> NodeManager::Connect(const std::shared_ptr<WorkerLink>& link,
                                                      const v1::RegisterWorker& reg, std::string* node_out) {
  std::string node = reg.node_id().empty() ? reg.resources().hostname() : reg.node_id();
  if (node.empty() || reg.resources().slots() <= 0) {
    link->Close(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "register: node_id and slots > 0 are required"));
    return std::nullopt;
  }
  Node& n = nodes_[node];
  if (n.link && n.link != link) {
    // An older connection of the same node: fence it. Its trials are judged by this registration.
    link_nodes_.erase(n.link.get());
    n.link->Close(grpc::Status(grpc::StatusCode::ABORTED, "replaced by a newer connection of node " + node));
  }
  std::set<int64_t> previous = std::move(n.trials);
  n.trials.clear();
  n.link = link;
  n.stopping = false;
  link_nodes_[link.get()] = node;
  n.info.set_node_id(node);
  if (n.info.state() != v1::WORKER_QUARANTINED) {
    n.info.set_state(v1::WORKER_UP);
    n.info.clear_state_reason();
  }
  *n.info.mutable_resources() = reg.resources();
  n.info.set_epoch(next_worker_epoch_++);
  n.info.set_last_seen_unix(WallNow());
  n.lease_deadline = Clock::now() + lease_;
  // The node joins the cluster (or comes back with what it reports now).
  auto spec = NodeSpecOf(n.info, scheduler::NodeState::kDown);
  scheduler::Status st = sched_.cluster().IndexOf(node) ? sched_.UpdateNode(spec) : sched_.AddNode(spec);
  if (!st.ok()) LogWarning(kLog, "worker " + node + ": " + st.message() + " (keeping what the scheduler had)");
  *node_out = node;
  return previous;
}

void NodeManager::Register(const std::shared_ptr<WorkerLink>& link, const v1::RegisterWorker& reg) {
  if (!Admit(link, reg)) return;
  std::string node;
  auto previous = Connect(link, reg, &node);
  if (!previous) return;
  ScaleHeartbeats(link.get());  // before the answer: the new worker is told the interval the fleet has now
  Node& n = nodes_.at(node);
  v1::CoordinatorMessage reply;
  auto* r = reply.mutable_registered();
  r->set_node_id(node);
  r->set_worker_epoch(n.info.epoch());
  r->set_heartbeat_interval_ms(static_cast<int32_t>(interval_.count()));
  r->set_lease_ms(static_cast<int32_t>(lease_.count()));
  std::set<int64_t> reported;
  for (const auto& run : reg.running()) {
    reported.insert(run.trial_id());
    if (listener_->Reattach(node, link, run)) {
      previous->erase(run.trial_id());
    } else {
      r->add_cancel_trials(run.trial_id());
    }
  }
  store_.UpsertNode(n.info);
  hub_.Record("worker_up", 0, 0, node);
  link->Send(reply);
  LogInfo(kLog, "worker " + node + " registered: " + std::to_string(reg.resources().slots()) + " slots, epoch " +
                    std::to_string(n.info.epoch()));
  listener_->RegisteredWithout(node, reported);
  // Trials this node had before but no longer reports are lost.
  if (!previous->empty()) {
    listener_->RunsLost(node, *previous, "worker " + node + " came back without it", NodeLoss::kFault);
  }
  SyncNode(n);
  UpdateBusy(node);
  hub_.Worker(n.info);
  request_schedule_();
  const std::string pool = PoolOf(reg.resources());
  if (!pool.empty() && pool_in_use_ && !pool_in_use_(pool)) {
    ReleasePool(pool, "no running search needs pool '" + pool + "'");
  }
}

void NodeManager::ReleasePool(const std::string& pool, const std::string& reason) {
  v1::CoordinatorMessage m;
  m.mutable_release()->set_reason(reason);
  for (auto& [id, n] : nodes_) {
    if (!n.link || PoolOf(n.info.resources()) != pool) continue;
    LogInfo(kLog, "worker " + id + " released: " + reason);
    n.link->Send(m);
  }
}

std::optional<std::string> NodeManager::NodeOf(const std::shared_ptr<WorkerLink>& link) const {
  auto it = link_nodes_.find(link.get());
  if (it == link_nodes_.end()) return std::nullopt;
  auto nit = nodes_.find(it->second);
  if (nit == nodes_.end() || nit->second.link != link) return std::nullopt;
  return it->second;
}

void NodeManager::Renew(const std::string& node) {
  Node& n = nodes_.at(node);
  n.lease_deadline = Clock::now() + lease_;
  n.info.set_last_seen_unix(WallNow());
}

void NodeManager::Disconnected(const std::shared_ptr<WorkerLink>& link, const std::string& reason) {
  auto it = link_nodes_.find(link.get());
  if (it == link_nodes_.end()) return;
  std::string node = it->second;
  link_nodes_.erase(it);
  auto nit = nodes_.find(node);
  if (nit == nodes_.end() || nit->second.link != link) return;
  // Only a loss that affects trials is worth a warning.
  Log(nit->second.trials.empty() ? LogLevel::kInfo : LogLevel::kWarning, kLog,
      "worker " + node + " disconnected: " + reason);
  MarkDown(nit->second, "worker " + node + (nit->second.stopping ? " stopped: " : " disconnected: ") + reason,
           nit->second.stopping ? NodeLoss::kWorkerStopped : NodeLoss::kFault);
}

void NodeManager::TokenEnded(const std::shared_ptr<WorkerLink>& link, const grpc::Status& status) {
  link->Close(status);
  auto it = link_nodes_.find(link.get());
  if (it == link_nodes_.end()) return;  // not registered: closing it is all
  std::string node = it->second;
  link_nodes_.erase(it);
  auto nit = nodes_.find(node);
  if (nit == nodes_.end() || nit->second.link != link) return;
  LogWarning(kLog, "worker " + node + " disconnected: " + status.error_message());
  MarkDown(nit->second, "worker " + node + " disconnected: " + status.error_message(), NodeLoss::kTokenEnded);
}

bool NodeManager::LoopWasLate(Clock::time_point now, Clock::duration late) {
  const auto until = now + lease_;
  if (until <= stall_grace_until_) return false;
  stall_grace_until_ = until;
  bool any = false;
  for (const auto& [node, n] : nodes_) {
    const bool leased = n.info.state() == v1::WORKER_UP || (n.info.state() == v1::WORKER_DRAINING && n.link);
    any = any || (leased && n.lease_deadline < until);
  }
  if (any && late >= std::chrono::seconds(1)) {
    LogWarning(kLog, "the coordinator's loop ran " +
                         std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(late).count()) +
                         " ms late; the workers' leases are judged from now (their messages waited as long)");
  }
  return any;
}

void NodeManager::CheckLeases(Clock::time_point now) {
  if (now <= stall_grace_until_) return;
  for (auto& [node, n] : nodes_) {
    // A draining node keeps its trials (an operator's drain, its worker's announced stop): its lease holds them.
    const bool leased = n.info.state() == v1::WORKER_UP || (n.info.state() == v1::WORKER_DRAINING && n.link);
    if (leased && now > n.lease_deadline) {
      LogWarning(kLog, "worker " + node + " missed its heartbeats; lease expired");
      if (n.link) {
        link_nodes_.erase(n.link.get());
        n.link->Close(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "lease expired"));
      }
      // After its worker said it is stopping (WorkerStopping), a silence is that stop, not a fault: its trials keep
      // their attempt, as when its stream ends.
      const std::string why = "lease expired (no heartbeat for " + std::to_string(lease_.count()) + " ms)";
      if (n.stopping) {
        MarkDown(n, "worker " + node + " stopped: " + why, NodeLoss::kWorkerStopped);
      } else {
        MarkDown(n, why);
      }
    }
  }
}

void NodeManager::Drain(const std::string& node, const std::string& reason) {
  auto it = nodes_.find(node);
  if (it == nodes_.end() || it->second.info.state() != v1::WORKER_UP) return;
  Node& n = it->second;
  n.info.set_state(v1::WORKER_DRAINING);
  n.info.set_state_reason(reason);
  SyncNode(n);
  store_.UpsertNode(n.info);
  hub_.Worker(n.info);
}

void NodeManager::Stopping(const std::string& node, const std::string& reason) {
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return;
  it->second.stopping = true;
  Drain(node, reason);
}

grpc::Status NodeManager::Release(const std::string& node, v1::WorkerInfo* out) {
  auto it = nodes_.find(node);
  if (it == nodes_.end()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "no node '" + node + "' (ladder nodes lists them)");
  }
  Node& n = it->second;
  if (n.info.state() != v1::WORKER_QUARANTINED) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "node '" + node + "' is not quarantined (it is " +
                                                                  StateWord(n.info.state()) + ")");
  }
  const std::string was = n.info.state_reason();
  n.failures.clear();
  n.info.set_recent_failures(0);
  if (n.link) {
    n.info.set_state(v1::WORKER_UP);
    n.info.clear_state_reason();
  } else {
    n.info.set_state(v1::WORKER_DOWN);
    n.info.set_state_reason("released from quarantine; no worker connected");
  }
  SyncNode(n);
  store_.UpsertNode(n.info);
  hub_.Record("worker_released", 0, 0, node + ": released from quarantine (" + was + ")");
  LogInfo(kLog, "node " + node + " released from quarantine (was: " + was + ")");
  *out = n.info;
  return grpc::Status::OK;
}

void NodeManager::AddRun(const std::string& node, int64_t trial_id) {
  auto it = nodes_.find(node);
  if (it != nodes_.end()) it->second.trials.insert(trial_id);
}

void NodeManager::RemoveRun(const std::string& node, int64_t trial_id) {
  auto it = nodes_.find(node);
  if (it != nodes_.end()) it->second.trials.erase(trial_id);
}

std::shared_ptr<WorkerLink> NodeManager::Link(const std::string& node) const {
  auto it = nodes_.find(node);
  return it == nodes_.end() ? nullptr : it->second.link;
}

std::string NodeManager::Hostname(const std::string& node) const {
  auto it = nodes_.find(node);
  return it == nodes_.end() ? std::string() : it->second.info.resources().hostname();
}

std::optional<std::string> NodeManager::Address(const std::string& node) const {
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return std::nullopt;
  const auto& r = it->second.info.resources();
  return r.address().empty() ? r.hostname() : r.address();
}

void NodeManager::UpdateBusy(const std::string& node) {
  auto it = nodes_.find(node);
  auto idx = sched_.cluster().IndexOf(node);
  if (it == nodes_.end() || !idx) return;
  const auto& spec = sched_.cluster().spec(*idx);
  int busy = spec.resources.slots - sched_.cluster().free_slots(*idx);
  if (busy == it->second.info.busy_slots()) return;
  it->second.info.set_busy_slots(busy);
  hub_.Worker(it->second.info);
}

std::vector<v1::WorkerInfo> NodeManager::Infos() const {
  std::vector<v1::WorkerInfo> out;
  out.reserve(nodes_.size());
  for (const auto& [id, n] : nodes_) out.push_back(n.info);
  return out;
}

std::vector<int64_t> NodeManager::SyncNode(Node& n) {
  std::vector<int64_t> affected;
  scheduler::NodeState state = !n.link                                          ? scheduler::NodeState::kDown
                               : n.info.state() == v1::WORKER_QUARANTINED ||
                                         n.info.state() == v1::WORKER_DRAINING ? scheduler::NodeState::kDraining
                                                                                : scheduler::NodeState::kUp;
  auto st = sched_.SetNodeState(n.info.node_id(), state, &affected);
  if (!st.ok()) LogError(kLog, "node " + n.info.node_id() + ": scheduler: " + st.message());
  return affected;
}

void NodeManager::MarkDown(Node& n, const std::string& reason, NodeLoss loss) {
  if (n.info.state() != v1::WORKER_QUARANTINED) {
    n.info.set_state(v1::WORKER_DOWN);
    n.info.set_state_reason(reason);
  }
  n.link = nullptr;
  if (!n.trials.empty() && loss == NodeLoss::kFault) RecordFailure(n, reason);
  std::vector<int64_t> affected = SyncNode(n);
  std::set<int64_t> ids(n.trials.begin(), n.trials.end());
  ids.insert(affected.begin(), affected.end());
  if (!ids.empty()) listener_->RunsLost(n.info.node_id(), ids, reason, loss);  // stops the groups' other members
  n.trials.clear();
  UpdateBusy(n.info.node_id());
  store_.UpsertNode(n.info);
  hub_.Record("worker_down", 0, 0, n.info.node_id() + ": " + reason);
  hub_.Worker(n.info);
  request_schedule_();
}

void NodeManager::RecordFailure(Node& n, const std::string& reason) {
  auto now = Clock::now();
  std::erase_if(n.failures, [&](Clock::time_point t) { return now - t > opt_.quarantine_window; });
  n.failures.push_back(now);
  n.info.set_recent_failures(static_cast<int32_t>(n.failures.size()));
  if (n.info.state() == v1::WORKER_QUARANTINED || opt_.quarantine_after <= 0 ||
      static_cast<int>(n.failures.size()) < opt_.quarantine_after) {
    return;
  }
  n.info.set_state(v1::WORKER_QUARANTINED);
  n.info.set_state_reason(std::to_string(n.failures.size()) + " failures within " +
                          std::to_string(opt_.quarantine_window.count()) + " s; last: " + reason);
  store_.UpsertNode(n.info);
  hub_.Record("worker_quarantined", 0, 0, n.info.node_id() + ": " + n.info.state_reason());
  LogWarning(kLog, "node " + n.info.node_id() + " quarantined: " + n.info.state_reason());
  hub_.Worker(n.info);
}

}  // namespace ladder::server
