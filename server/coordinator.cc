#include "server/coordinator.h"

#include <fcntl.h>
#include <stdio.h>  // renameat2

#include <boost/asio/post.hpp>
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/id_set.h"
#include "search/ensemble.h"
#include "common/log.h"
#include "common/token.h"
#include "server/params_codec.h"
#include "server/store/sqlite_db.h"
#include "server/wall_clock.h"

namespace ladder::server {

namespace {

constexpr const char* kLog = "coordinator";

bool IsTerminal(v1::TrialState s) {
  return s == v1::TRIAL_COMPLETED || s == v1::TRIAL_FAILED || s == v1::TRIAL_CANCELLED;
}

scheduler::Priority SchedPriority(v1::Priority p) {
  switch (p) {
    case v1::PRIORITY_HERO: return scheduler::Priority::kHero;
    case v1::PRIORITY_PROMOTED: return scheduler::Priority::kPromoted;
    default: return scheduler::Priority::kSearch;
  }
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
  spec.state = state;
  return spec;
}

// "completed", "cancelled", "failed": how users say a search's state.
std::string SearchStateWord(v1::SearchState st) {
  std::string name = v1::SearchState_Name(st);
  if (name.rfind("SEARCH_", 0) == 0) name = name.substr(7);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

std::string Address(const v1::WorkerResources& r) { return r.address().empty() ? r.hostname() : r.address(); }

// A metric value for a message: 6 significant digits.
std::string FormatValue(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

Coordinator::Coordinator(boost::asio::io_context& loop, store::Store& store, CoordinatorOptions options)
    : loop_(loop),
      store_(store),
      opt_(std::move(options)),
      sched_(opt_.scheduling),
      outbox_(loop, store, opt_.flush_interval),
      lease_timer_(loop) {
  if (opt_.checkpoint_root.empty()) opt_.checkpoint_root = store_.path() + ".checkpoints";
  std::error_code ec;
  auto abs = std::filesystem::absolute(opt_.checkpoint_root, ec);
  if (!ec) opt_.checkpoint_root = abs.lexically_normal().string();
  outbox_.SetHooks({[this] { return !progress_dirty_.empty(); },
                    [this] {
                      for (int64_t id : progress_dirty_) {
                        auto it = trials_.find(id);
                        if (it != trials_.end()) store_.UpdateTrialProgress(it->second.proto);
                      }
                      progress_dirty_.clear();
                    },
                    [this](const std::string& what) { Fatal(what); }});
}

std::string Coordinator::CheckpointDir(const TrialRt& t) const {
  return opt_.checkpoint_root + "/search-" + std::to_string(t.proto.search_id()) + "/trial-" +
         std::to_string(t.proto.id());
}

Coordinator::~Coordinator() = default;

double Coordinator::Now() const { return WallNow(); }

double Coordinator::SchedNow() const { return std::chrono::duration<double>(Clock::now() - sched_epoch_).count(); }

// ------------------------------------------------------------------------------------------------------
// Start-up and restart recovery
// ------------------------------------------------------------------------------------------------------

void Coordinator::Start() {
  started_unix_ = Now();
  auto reattach_deadline = Clock::now() + opt_.heartbeat_timeout;
  for (auto& proto : store_.LoadSearches()) {
    SearchRt s;
    s.proto = std::move(proto);
    if (s.proto.state() == v1::SEARCH_RUNNING) {
      auto parsed = search::ParseSpec(s.proto.spec_yaml(), s.proto.name());
      if (!parsed.ok()) {
        // The spec was valid when accepted; a newer parser may disagree. Fail it visibly, don't guess.
        s.proto.set_state(v1::SEARCH_FAILED);
        s.proto.set_error("stored spec no longer parses: " + parsed.errors.front().ToString());
        store_.UpdateSearch(s.proto);
      } else {
        s.spec = std::move(*parsed.spec);
        s.sampler = search::MakeSampler(s.spec);
        s.trial_sched = search::MakeTrialScheduler(s.spec);
        if (std::string err = LoadPlan(s); !err.empty()) LogWarning(kLog, "search " + std::to_string(s.proto.id()) + ": " + err);
        s.proto.mutable_group()->set_launcher(
            s.spec.group.launcher == search::Launcher::kMpirun ? v1::LAUNCHER_MPIRUN : v1::LAUNCHER_PER_NODE);
      }
    }
    int64_t id = s.proto.id();
    searches_.emplace(id, std::move(s));
  }
  // Every node known before is in the cluster, down until its worker registers again (so that running groups
  // can be re-attached where they are), and listed (ServerInfo, `ladder nodes`) as such. Quarantine outlives a
  // restart.
  for (auto& node : store_.LoadNodes()) {
    auto st = sched_.AddNode(NodeSpecOf(node, node.state() == v1::WORKER_QUARANTINED ? scheduler::NodeState::kQuarantined
                                                                                    : scheduler::NodeState::kDown));
    if (!st.ok()) LogWarning(kLog, "node " + node.node_id() + " from the database: " + st.message());
    WorkerRt& w = workers_[node.node_id()];
    w.info = std::move(node);
    w.info.set_busy_slots(0);
    if (w.info.state() != v1::WORKER_QUARANTINED) {
      w.info.set_state(v1::WORKER_DOWN);
      w.info.set_state_reason("not registered since the coordinator started");
    }
  }
  std::vector<int64_t> epochs;
  auto loaded = store_.LoadTrials(&epochs);
  int64_t max_epoch = store_.MaxAssignmentEpoch();
  for (size_t i = 0; i < loaded.size(); ++i) {
    TrialRt t;
    t.proto = std::move(loaded[i]);
    t.epoch = epochs[i];
    max_epoch = std::max(max_epoch, t.epoch);
    for (const auto& [k, v] : t.proto.params()) t.params[k] = FromProto(v);
    t.proto.set_checkpoint_dir(CheckpointDir(t));
    auto sit = searches_.find(t.proto.search_id());
    if (sit == searches_.end()) continue;
    SearchRt& s = sit->second;
    const int stored_nodes = t.proto.group().nodes();
    *t.proto.mutable_group() = s.proto.group();
    if (stored_nodes > 0) {
      t.proto.mutable_group()->set_nodes(stored_nodes);
    } else if (search::ScalesNodes(s.spec.scheduler) && !t.proto.workflow_step()) {
      t.proto.mutable_group()->set_nodes(search::NodeLevels(s.spec.scheduler, t.proto.number()).front());
    }
    s.trial_ids.push_back(t.proto.id());
    s.next_number = std::max(s.next_number, t.proto.number() + 1);
    if (t.proto.has_objective()) t.last_objective = t.best_objective = t.proto.objective();
    switch (t.proto.state()) {
      case v1::TRIAL_PENDING: s.pending.insert(t.proto.id()); break;
      case v1::TRIAL_RUNNING:
        s.running.insert(t.proto.id());
        for (const auto& p : t.proto.placement()) {
          Member m;
          m.node_id = p.node_id();
          m.epoch = t.epoch;
          m.slots.assign(p.slots().begin(), p.slots().end());
          m.gpus.assign(p.gpus().begin(), p.gpus().end());
          m.first_rank = p.first_rank();
          // mpirun launches: only the first node runs a process the workers know of.
          m.live = s.proto.group().launcher() != v1::LAUNCHER_MPIRUN || p.first_rank() == 0;
          m.attached = !m.live;
          t.members.push_back(std::move(m));
        }
        t.reattach_deadline = reattach_deadline;
        t.last_progress = Clock::now();
        // Rebuild the objective seen so far from the stored points.
        for (const auto& point : store_.LoadMetrics(t.proto.id())) {
          auto it = point.values().find(s.proto.objective_metric());
          if (it == point.values().end()) continue;
          t.last_objective = it->second;
          bool better = !t.best_objective || (s.proto.direction() == v1::MAXIMIZE ? it->second > *t.best_objective
                                                                                 : it->second < *t.best_objective);
          if (better) t.best_objective = it->second;
        }
        break;
      case v1::TRIAL_COMPLETED: ++s.completed; break;
      case v1::TRIAL_FAILED: ++s.failed; break;
      case v1::TRIAL_CANCELLED: ++s.cancelled; break;
      default: break;
    }
    t.workflow_step = s.proto.ensemble().retrain_trial_id() == t.proto.id();
    t.proto.set_workflow_step(t.workflow_step);
    if (t.workflow_step) {
      // Not a configuration of the space: the samplers never heard of it.
    } else if (s.sampler && IsTerminal(t.proto.state())) {
      s.sampler->Tell(t.proto.number(), t.params,
                      t.proto.has_objective() ? std::optional<double>(t.proto.objective()) : std::nullopt);
    } else if (s.sampler) {
      // Pending or running: a model-based sampler spreads new suggestions away from it, as before the restart.
      s.sampler->AddPending(t.proto.number(), t.params);
    }
    int64_t id = t.proto.id();
    trials_.emplace(id, std::move(t));
  }
  next_assignment_epoch_ = max_epoch + 1;
  // The scheduler takes back what runs (exactly where it runs) and queues what waits, in id order.
  for (auto& [id, t] : trials_) {
    SearchRt& s = searches_.at(t.proto.search_id());
    if (s.proto.state() != v1::SEARCH_RUNNING) continue;
    if (t.proto.state() == v1::TRIAL_PENDING) {
      Submit(s, t);
    } else if (t.proto.state() == v1::TRIAL_RUNNING) {
      scheduler::NodeGroup group;
      for (const auto& m : t.members) {
        auto idx = sched_.cluster().IndexOf(m.node_id);
        if (!idx) break;
        group.slices.push_back({*idx, m.slots, m.gpus, m.first_rank});
      }
      auto st = group.size() == static_cast<int>(t.members.size())
                    ? sched_.Attach(GroupRequestFor(s, t), group, SchedNow())
                    : scheduler::Status::NotFound("a node of its placement is unknown");
      if (st.ok()) {
        t.sched = Sched::kRunning;
      } else {
        // It cannot hold its nodes; it is requeued if its workers do not re-attach it in time.
        LogWarning(kLog, "trial " + std::to_string(id) + ": cannot re-attach its node group: " + st.message());
      }
    }
  }
  for (auto& [id, s] : searches_) {
    for (int64_t tid : s.trial_ids) {
      const auto& t = trials_.at(tid);
      if (t.proto.state() == v1::TRIAL_COMPLETED && t.proto.has_objective()) ConsiderBest(s, t);
    }
    if (s.trial_sched) ReplayTrialScheduler(s);
    UpdateSearchCounts(s);
  }
  store_.AppendEvent("coordinator_started", 0, 0, "", Now());
  outbox_.Commit();
  if (!trials_.empty()) {
    LogInfo(kLog, "recovered " + std::to_string(searches_.size()) + " searches and " +
                      std::to_string(trials_.size()) + " trials from " + store_.path());
  }
  outbox_.Start();
  ArmLeaseTimer();
  RequestSchedule();
}

void Coordinator::Stop() {
  stopped_ = true;
  lease_timer_.cancel();
  outbox_.Stop();
  hub_.Clear();
}

void Coordinator::Fatal(const std::string& what) {
  if (outbox_.failed()) return;
  stopped_ = true;
  lease_timer_.cancel();
  outbox_.Abandon();
  progress_dirty_.clear();
  LogError(kLog, "the database failed: " + what +
                     "; the coordinator stops (what it holds in memory may be ahead of what is stored; a restart "
                     "recovers from the database, and workers resend what was not acknowledged)");
  if (opt_.on_fatal) opt_.on_fatal(what);
}

void Coordinator::ArmLeaseTimer() {
  if (stopped_) return;
  lease_timer_.expires_after(std::max(opt_.heartbeat_interval / 2, std::chrono::milliseconds(10)));
  lease_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    try {
      CheckLeases();
    } catch (const store::SqliteError& e) {
      return Fatal(e.what());
    } catch (const std::exception& e) {
      LogError(kLog, std::string("checking the workers' leases failed: ") + e.what());
    }
    ArmLeaseTimer();
  });
}

void Coordinator::CheckLeases() {
  auto now = Clock::now();
  for (auto& [node, w] : workers_) {
    if (w.info.state() == v1::WORKER_UP && now > w.lease_deadline) {
      LogWarning(kLog, "worker " + node + " missed its heartbeats; lease expired");
      if (w.link) {
        link_nodes_.erase(w.link.get());
        w.link->Close(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "lease expired"));
      }
      MarkWorkerDown(w, "lease expired (no heartbeat for " + std::to_string(opt_.heartbeat_timeout.count()) +
                            " ms)");
    }
  }
  CheckWatchdog(now);
  // Trials that were running before a restart and that some worker did not re-attach.
  for (auto& [id, t] : trials_) {
    if (t.reattach_deadline == Clock::time_point{} || now <= t.reattach_deadline) continue;
    t.reattach_deadline = {};
    bool lost = false;
    for (auto& m : t.members) {
      if (m.live && !m.attached) {
        lost = true;
        MemberGone(t, m);
      }
    }
    if (lost && t.proto.state() == v1::TRIAL_RUNNING) {
      RequeueOrFail(t, "no worker re-attached it after the coordinator restarted");
    }
  }
  if (sched_.queued() > 0) RequestSchedule();  // aging, and reservations coming due
}

// ------------------------------------------------------------------------------------------------------
// Ladder service
// ------------------------------------------------------------------------------------------------------

grpc::Status Coordinator::CreateSearch(const v1::CreateSearchRequest& req, v1::CreateSearchResponse* resp) {
  std::string path = req.spec_path().empty() ? "<spec>" : req.spec_path();
  auto parsed = search::ParseSpec(req.spec_yaml(), path);
  if (!parsed.ok()) {
    std::string msg;
    for (const auto& e : parsed.errors) msg += (msg.empty() ? "" : "\n") + e.ToString();
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, msg);
  }
  SearchRt s;
  s.spec = std::move(*parsed.spec);
  if (!v1::Priority_IsValid(req.priority())) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "priority: unknown value " + std::to_string(req.priority()));
  }
  s.sampler = search::MakeSampler(s.spec);
  s.trial_sched = search::MakeTrialScheduler(s.spec);
  auto& p = s.proto;
  p.set_name(s.spec.name);
  p.set_state(v1::SEARCH_RUNNING);
  p.set_spec_yaml(req.spec_yaml());
  p.set_objective_metric(s.spec.objective.metric);
  p.set_direction(s.spec.objective.maximize ? v1::MAXIMIZE : v1::MINIMIZE);
  p.set_max_trials(s.spec.max_trials);
  p.set_parallelism(s.spec.parallelism);
  p.mutable_group()->set_nodes(s.spec.group.nodes);
  p.mutable_group()->set_ranks_per_node(s.spec.group.ranks_per_node);
  p.mutable_group()->set_gpus_per_rank(s.spec.group.gpus_per_rank);
  p.mutable_group()->set_launcher(s.spec.group.launcher == search::Launcher::kMpirun ? v1::LAUNCHER_MPIRUN
                                                                                      : v1::LAUNCHER_PER_NODE);
  p.set_priority(req.priority() == v1::PRIORITY_UNSPECIFIED ? v1::PRIORITY_SEARCH : req.priority());
  p.set_plan_json(req.plan_json());
  if (std::string err = LoadPlan(s); !err.empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "plan_json: " + err);
  }
  p.set_created_unix(Now());
  store_.InsertSearch(&p);
  store_.AppendEvent("search_created", p.id(), 0, p.name(), Now());
  outbox_.Commit();
  int64_t id = p.id();
  LogInfo(kLog, "search " + std::to_string(id) + " '" + p.name() + "' created: " + std::to_string(p.max_trials()) +
                    " trials, " + std::to_string(p.parallelism()) + " at a time");
  auto& stored = searches_.emplace(id, std::move(s)).first->second;
  *resp->mutable_search() = stored.proto;
  hub_.Search(stored.proto);
  RequestSchedule();
  return grpc::Status::OK;
}

grpc::Status Coordinator::ListSearches(const v1::ListSearchesRequest&, v1::ListSearchesResponse* resp) {
  for (const auto& [id, s] : searches_) {
    auto* out = resp->add_searches();
    *out = s.proto;
    out->clear_spec_yaml();
  }
  return grpc::Status::OK;
}

grpc::Status Coordinator::GetSearch(const v1::GetSearchRequest& req, v1::GetSearchResponse* resp) {
  auto it = searches_.find(req.search_id());
  if (it == searches_.end()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "no search with id " + std::to_string(req.search_id()));
  }
  *resp->mutable_search() = it->second.proto;
  return grpc::Status::OK;
}

grpc::Status Coordinator::CancelSearch(const v1::CancelSearchRequest& req, v1::CancelSearchResponse* resp) {
  auto it = searches_.find(req.search_id());
  if (it == searches_.end()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "no search with id " + std::to_string(req.search_id()));
  }
  SearchRt& s = it->second;
  if (s.proto.state() != v1::SEARCH_RUNNING) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "search " + std::to_string(req.search_id()) + " has already ended (" +
                            SearchStateWord(s.proto.state()) + ")");
  }
  SetSearchState(s, v1::SEARCH_CANCELLED, "cancelled by request");
  outbox_.Commit();
  *resp->mutable_search() = s.proto;
  return grpc::Status::OK;
}

grpc::Status Coordinator::ListTrials(const v1::ListTrialsRequest& req, v1::ListTrialsResponse* resp) {
  auto it = searches_.find(req.search_id());
  if (it == searches_.end()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "no search with id " + std::to_string(req.search_id()));
  }
  for (int64_t id : it->second.trial_ids) *resp->add_trials() = trials_.at(id).proto;
  return grpc::Status::OK;
}

grpc::Status Coordinator::GetTrial(const v1::GetTrialRequest& req, v1::GetTrialResponse* resp) {
  auto it = trials_.find(req.trial_id());
  if (it == trials_.end()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "no trial with id " + std::to_string(req.trial_id()));
  }
  *resp->mutable_trial() = it->second.proto;
  if (req.include_metrics()) {
    for (auto& p : store_.LoadMetrics(req.trial_id())) *resp->mutable_trial()->add_metrics() = std::move(p);
  }
  return grpc::Status::OK;
}

grpc::Status Coordinator::ServerInfo(const v1::ServerInfoRequest&, v1::ServerInfoResponse* resp) {
  resp->set_version(opt_.version);
  resp->set_db_path(store_.path());
  resp->set_started_unix(started_unix_);
  for (const auto& [node, w] : workers_) *resp->add_workers() = w.info;
  return grpc::Status::OK;
}

grpc::Status Coordinator::ReleaseNode(const v1::ReleaseNodeRequest& req, v1::ReleaseNodeResponse* resp) {
  auto it = workers_.find(req.node_id());
  if (it == workers_.end()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "no node '" + req.node_id() + "' (ladder nodes lists them)");
  }
  WorkerRt& w = it->second;
  if (w.info.state() != v1::WORKER_QUARANTINED) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "node '" + req.node_id() + "' is not quarantined (it is " +
                            (w.info.state() == v1::WORKER_UP         ? "up"
                             : w.info.state() == v1::WORKER_DRAINING ? "draining"
                                                                     : "down") +
                            ")");
  }
  const std::string was = w.info.state_reason();
  w.failures.clear();
  w.info.set_recent_failures(0);
  if (w.link) {
    w.info.set_state(v1::WORKER_UP);
    w.info.clear_state_reason();
  } else {
    w.info.set_state(v1::WORKER_DOWN);
    w.info.set_state_reason("released from quarantine; no worker connected");
  }
  SyncNode(w);
  store_.UpsertNode(w.info);
  store_.AppendEvent("worker_released", 0, 0, w.info.node_id() + ": released from quarantine (" + was + ")", Now());
  outbox_.Commit();
  LogInfo(kLog, "node " + w.info.node_id() + " released from quarantine (was: " + was + ")");
  hub_.Worker(w.info);
  RequestSchedule();
  *resp->mutable_worker() = w.info;
  return grpc::Status::OK;
}

int64_t Coordinator::AddWatcher(int64_t search_id, EventSink sink) {
  std::vector<v1::Event> snapshot;
  for (const auto& [node, w] : workers_) {
    v1::Event& ev = snapshot.emplace_back();
    ev.set_kind(v1::Event::WORKER_UPDATED);
    *ev.mutable_worker() = w.info;
  }
  for (const auto& [sid, s] : searches_) {
    if (search_id != 0 && sid != search_id) continue;
    v1::Event& ev = snapshot.emplace_back();
    ev.set_time_unix(Now());
    ev.set_kind(v1::Event::SEARCH_UPDATED);
    *ev.mutable_search() = s.proto;
    if (search_id == 0) continue;
    for (int64_t tid : s.trial_ids) {
      v1::Event& tev = snapshot.emplace_back();
      tev.set_kind(v1::Event::TRIAL_UPDATED);
      *tev.mutable_trial() = trials_.at(tid).proto;
    }
  }
  return hub_.Subscribe(search_id, sink, std::move(snapshot));
}

void Coordinator::RemoveWatcher(int64_t id) { hub_.Unsubscribe(id); }

// ------------------------------------------------------------------------------------------------------
// Worker service
// ------------------------------------------------------------------------------------------------------

Coordinator::WorkerRt* Coordinator::WorkerFor(const std::shared_ptr<WorkerLink>& link) {
  auto it = link_nodes_.find(link.get());
  if (it == link_nodes_.end()) return nullptr;
  auto wit = workers_.find(it->second);
  if (wit == workers_.end() || wit->second.link != link) return nullptr;
  return &wit->second;
}

void Coordinator::OnWorkerMessage(const std::shared_ptr<WorkerLink>& link, const v1::WorkerMessage& msg) {
  if (stopped_) return;
  try {
    if (msg.has_register_()) {
      Register(link, msg.register_());
      return;
    }
    WorkerRt* w = WorkerFor(link);
    if (!w) {
      link->Close(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                               "the first message on a worker stream must be register (or this connection was "
                               "replaced by a newer one)"));
      return;
    }
    w->lease_deadline = Clock::now() + opt_.heartbeat_timeout;
    w->info.set_last_seen_unix(Now());
    switch (msg.body_case()) {
      case v1::WorkerMessage::kHeartbeat: break;
      case v1::WorkerMessage::kStarted: OnStarted(*w, msg.started()); break;
      case v1::WorkerMessage::kMetrics: OnMetrics(*w, msg.metrics()); break;
      case v1::WorkerMessage::kExited: OnExited(*w, msg.exited()); break;
      default: break;
    }
  } catch (const store::SqliteError& e) {
    Fatal(e.what());
  } catch (const std::exception& e) {
    LogError(kLog, std::string("handling a worker message failed: ") + e.what());
  }
}

void Coordinator::OnWorkerGone(const std::shared_ptr<WorkerLink>& link, const std::string& reason) {
  auto it = link_nodes_.find(link.get());
  if (it == link_nodes_.end()) return;
  std::string node = it->second;
  link_nodes_.erase(it);
  auto wit = workers_.find(node);
  if (wit == workers_.end() || wit->second.link != link || stopped_) return;
  // Only a loss that affects trials is worth a warning.
  Log(wit->second.trials.empty() ? LogLevel::kInfo : LogLevel::kWarning, kLog,
      "worker " + node + " disconnected: " + reason);
  try {
    MarkWorkerDown(wit->second, "worker " + node + " disconnected: " + reason);
  } catch (const store::SqliteError& e) {
    Fatal(e.what());
  }
}

void Coordinator::Register(const std::shared_ptr<WorkerLink>& link, const v1::RegisterWorker& reg) {
  std::string node = reg.node_id().empty() ? reg.resources().hostname() : reg.node_id();
  if (node.empty() || reg.resources().slots() <= 0) {
    link->Close(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "register: node_id and slots > 0 are required"));
    return;
  }
  WorkerRt& w = workers_[node];
  if (w.link && w.link != link) {
    // An older connection of the same node: fence it. Its trials are judged by this registration.
    link_nodes_.erase(w.link.get());
    w.link->Close(grpc::Status(grpc::StatusCode::ABORTED, "replaced by a newer connection of node " + node));
  }
  std::set<int64_t> previous = std::move(w.trials);
  w.trials.clear();
  w.link = link;
  link_nodes_[link.get()] = node;
  w.info.set_node_id(node);
  if (w.info.state() != v1::WORKER_QUARANTINED) {
    w.info.set_state(v1::WORKER_UP);
    w.info.clear_state_reason();
  }
  *w.info.mutable_resources() = reg.resources();
  w.info.set_epoch(next_worker_epoch_++);
  w.info.set_last_seen_unix(Now());
  w.lease_deadline = Clock::now() + opt_.heartbeat_timeout;
  // The node joins the cluster (or comes back with what it reports now).
  auto spec = NodeSpecOf(w.info, scheduler::NodeState::kDown);
  scheduler::Status st = sched_.cluster().IndexOf(node) ? sched_.UpdateNode(spec) : sched_.AddNode(spec);
  if (!st.ok()) LogWarning(kLog, "worker " + node + ": " + st.message() + " (keeping what the scheduler had)");

  v1::CoordinatorMessage reply;
  auto* r = reply.mutable_registered();
  r->set_node_id(node);
  r->set_worker_epoch(w.info.epoch());
  r->set_heartbeat_interval_ms(static_cast<int32_t>(opt_.heartbeat_interval.count()));
  for (const auto& run : reg.running()) {
    auto it = trials_.find(run.trial_id());
    Member* m = it == trials_.end() ? nullptr : MemberOn(it->second, node, run.assignment_epoch());
    bool ours = m && m->live && it->second.epoch == run.assignment_epoch() &&
                it->second.proto.state() == v1::TRIAL_RUNNING;
    if (!ours) {
      r->add_cancel_trials(run.trial_id());
      continue;
    }
    TrialRt& t = it->second;
    m->attached = true;
    t.last_progress = Clock::now();
    w.trials.insert(t.proto.id());
    previous.erase(t.proto.id());
    store_.AppendEvent("trial_reattached", t.proto.search_id(), t.proto.id(), node, Now());
    LogInfo(kLog, "worker " + node + " re-attached trial " + std::to_string(t.proto.id()));
    if (t.exploit || !t.early_stop.empty()) {  // decided before the restart (ReplayTrialScheduler)
      v1::CoordinatorMessage cancel;
      cancel.mutable_cancel()->set_trial_id(t.proto.id());
      cancel.mutable_cancel()->set_assignment_epoch(m->epoch);
      cancel.mutable_cancel()->set_reason(t.exploit ? t.exploit->reason : "stopped early by " + t.early_stop);
      outbox_.SendAfterCommit(link, std::move(cancel));
    }
  }
  store_.UpsertNode(w.info);
  store_.AppendEvent("worker_up", 0, 0, node, Now());
  link->Send(reply);
  LogInfo(kLog, "worker " + node + " registered: " + std::to_string(reg.resources().slots()) + " slots, epoch " +
                    std::to_string(w.info.epoch()));
  // Trials this node had before but no longer reports are lost.
  for (int64_t id : previous) {
    auto it = trials_.find(id);
    if (it == trials_.end()) continue;
    TrialRt& t = it->second;
    for (auto& m : t.members) {
      if (m.node_id == node && m.live) MemberGone(t, m);
    }
    if (t.proto.state() == v1::TRIAL_RUNNING) {
      RequeueOrFail(t, "worker " + node + " came back without it");
    } else {
      MaybeReleaseGroup(t);
    }
  }
  SyncNode(w);
  UpdateBusy(node);
  hub_.Worker(w.info);
  RequestSchedule();
}

void Coordinator::OnStarted(WorkerRt& w, const v1::TrialStarted& m) {
  auto it = trials_.find(m.trial_id());
  if (it == trials_.end() || it->second.epoch != m.assignment_epoch()) return;
  store_.AppendEvent("trial_started", it->second.proto.search_id(), m.trial_id(),
                     w.info.node_id() + " pid " + std::to_string(m.pid()), Now());
}

void Coordinator::OnMetrics(WorkerRt& w, const v1::MetricReport& m) {
  auto it = trials_.find(m.trial_id());
  Member* mem = it == trials_.end() ? nullptr : MemberOn(it->second, w.info.node_id(), m.assignment_epoch());
  if (!mem || !mem->live || it->second.epoch != m.assignment_epoch() || mem->first_rank != 0) {
    // Fencing: a run the coordinator no longer owns.
    v1::CoordinatorMessage cancel;
    cancel.mutable_cancel()->set_trial_id(m.trial_id());
    cancel.mutable_cancel()->set_assignment_epoch(m.assignment_epoch());
    cancel.mutable_cancel()->set_reason("stale assignment");
    w.link->Send(cancel);
    return;
  }
  TrialRt& t = it->second;
  SearchRt& s = searches_.at(t.proto.search_id());
  // metric_count is the number of this run's points stored so far, i.e. the next sequence number.
  int64_t seq = m.has_first_seq() ? m.first_seq() : t.proto.metric_count();
  const v1::MetricPoint* last = nullptr;
  for (const auto& point : m.points()) {
    if (seq++ < t.proto.metric_count()) continue;  // already stored: a resend after a reconnect
    if (point.time_unix() > 0) {
      store_.AppendMetrics(t.proto.id(), point);
    } else {  // a point without its time gets its arrival's (a restart tells runs apart by it)
      v1::MetricPoint stamped = point;
      stamped.set_time_unix(Now());
      store_.AppendMetrics(t.proto.id(), stamped);
    }
    t.proto.set_metric_count(t.proto.metric_count() + 1);
    last = &point;
    auto vit = point.values().find(s.proto.objective_metric());
    if (vit != point.values().end()) {
      t.last_objective = vit->second;
      bool better = !t.best_objective || (s.proto.direction() == v1::MAXIMIZE ? vit->second > *t.best_objective
                                                                             : vit->second < *t.best_objective);
      if (better) t.best_objective = vit->second;
    }
    // With node count as the fidelity, a stage is reported when its run ends (EndStage), not per point.
    if (s.trial_sched && !search::ScalesNodes(s.spec.scheduler)) ConsultTrialScheduler(s, t, point);
    if (!s.band.empty()) WatchBand(s, t, point);
    hub_.Metrics(t.proto, point);
  }
  if (last) {
    *t.proto.mutable_last_metrics() = *last;
    t.last_progress = Clock::now();
  }
  t.proto.set_ignored_lines(m.ignored_lines());
  if (!m.last_ignored_line().empty()) t.proto.set_last_ignored_line(m.last_ignored_line());
  progress_dirty_.insert(t.proto.id());
  outbox_.OweAck(w.link, t.proto.id(), t.epoch, t.proto.metric_count(), false);
}

void Coordinator::OnExited(WorkerRt& w, const v1::TrialExited& m) {
  auto it = trials_.find(m.trial_id());
  Member* mem = it == trials_.end() ? nullptr : MemberOn(it->second, w.info.node_id(), m.assignment_epoch());
  if (!mem || !mem->live) {
    // A stale run (its resources were already given back), or an exit already stored whose acknowledgement was
    // lost: the worker may forget it.
    outbox_.OweAck(w.link, m.trial_id(), m.assignment_epoch(), 0, true);
    return;
  }
  TrialRt& t = it->second;
  const bool current = mem->epoch == t.epoch;
  const bool metrics_member = mem->first_rank == 0;
  outbox_.OweAck(w.link, t.proto.id(), mem->epoch, current && metrics_member ? t.proto.metric_count() : 0, true);
  const bool multi_node = t.members.size() > 1;
  const std::string where = multi_node ? "node " + w.info.node_id() + ": " : "";
  mem->live = false;
  w.trials.erase(t.proto.id());
  const bool any_live = AnyLive(t);
  const bool failed = m.exit_code() != 0 || !m.error().empty();

  if (current && t.proto.state() == v1::TRIAL_RUNNING) {
    SearchRt& s = searches_.at(t.proto.search_id());
    if (!t.watchdog_error.empty()) {
      CloseAllocation(t, "failed");
      FinishTrial(t, v1::TRIAL_FAILED, m.exit_code(), t.watchdog_error);
    } else if (t.exploit && (m.cancelled() || !failed)) {
      if (!any_live) FinishExploit(s, t);
    } else if (!t.early_stop.empty() && (m.cancelled() || !failed)) {
      // Stopped by the trial scheduler: it completes with the value it reached.
      if (!any_live) CompleteFromExit(s, t);
    } else if (t.preempting && (m.cancelled() || failed)) {
      // Stopped for a higher-priority trial: it resumes once every member has stopped.
      if (!any_live) FinishPreemption(t);
    } else if (m.worker_stopping()) {
      // The node's worker is shutting down: no new trials there, and this one waits for another node (from its
      // checkpoint, as after a preemption; no attempt is used up).
      if (w.info.state() == v1::WORKER_UP) {
        w.info.set_state(v1::WORKER_DRAINING);
        w.info.set_state_reason("its worker is stopping");
        SyncNode(w);
        store_.UpsertNode(w.info);
        hub_.Worker(w.info);
      }
      t.preempting = true;
      t.proto.set_error("node " + w.info.node_id() + "'s worker stopped; the trial waits for another node");
      StopMembers(t, t.proto.error());
      if (!any_live) FinishPreemption(t);
    } else if (m.cancelled()) {
      // Stopped without a request of this coordinator: a preemption in flight across a restart (its intent is
      // not stored), or the worker shutting down. The trial is not what anyone cancelled: it runs again.
      RequeueOrFail(t, where + "stopped by its worker without a request from this coordinator" +
                           (m.error().empty() ? std::string() : " (" + m.error() + ")"));
    } else if (failed) {
      // A rank failed: the whole group stops (FinishTrial stops the other members).
      std::string err = m.error().empty() ? "exited with code " + std::to_string(m.exit_code()) : m.error();
      CloseAllocation(t, "failed");
      FinishTrial(t, v1::TRIAL_FAILED, m.exit_code(), where + err);
    } else if (!any_live) {
      EndStage(s, t);
    }
    // else: exit 0 on one node while others still run; the trial ends with the last of them.
  } else if (current && t.proto.state() == v1::TRIAL_CANCELLED && metrics_member) {
    t.proto.set_exit_code(m.exit_code());
    SaveTrial(t);
  }
  if (current && !any_live && t.proto.state() == v1::TRIAL_CANCELLED) CloseAllocation(t, "cancelled");
  MaybeReleaseGroup(t);  // updates the nodes' busy slots once the group is given back
}

// ------------------------------------------------------------------------------------------------------
// Trial and worker state changes
// ------------------------------------------------------------------------------------------------------

void Coordinator::SetTrialState(TrialRt& t, v1::TrialState state) {
  SearchRt& s = searches_.at(t.proto.search_id());
  auto bucket = [&](v1::TrialState st, int delta) {
    switch (st) {
      case v1::TRIAL_PENDING:
        if (delta > 0) s.pending.insert(t.proto.id()); else s.pending.erase(t.proto.id());
        break;
      case v1::TRIAL_RUNNING:
        if (delta > 0) s.running.insert(t.proto.id()); else s.running.erase(t.proto.id());
        break;
      case v1::TRIAL_COMPLETED: s.completed += delta; break;
      case v1::TRIAL_FAILED: s.failed += delta; break;
      case v1::TRIAL_CANCELLED: s.cancelled += delta; break;
      default: break;
    }
  };
  bucket(t.proto.state(), -1);
  t.proto.set_state(state);
  bucket(state, +1);
  UpdateSearchCounts(s);
}

void Coordinator::CloseAllocation(TrialRt& t, const std::string& outcome) {
  if (t.epoch != 0) store_.CloseAllocation(t.proto.id(), t.epoch, outcome, Now());
}

Coordinator::Member* Coordinator::MemberOn(TrialRt& t, const std::string& node, int64_t epoch) {
  for (auto& m : t.members) {
    if (m.node_id == node && m.epoch == epoch) return &m;
  }
  return nullptr;
}

void Coordinator::MemberGone(TrialRt& t, Member& m) {
  m.live = false;
  auto wit = workers_.find(m.node_id);
  if (wit != workers_.end()) wit->second.trials.erase(t.proto.id());
}

void Coordinator::StopMembers(TrialRt& t, const std::string& reason) {
  for (auto& m : t.members) {
    if (!m.live) continue;
    auto wit = workers_.find(m.node_id);
    if (wit == workers_.end() || !wit->second.link || !m.attached) {
      MemberGone(t, m);  // nothing runs there that anyone could stop or hear from
      continue;
    }
    v1::CoordinatorMessage cancel;
    cancel.mutable_cancel()->set_trial_id(t.proto.id());
    cancel.mutable_cancel()->set_assignment_epoch(m.epoch);
    cancel.mutable_cancel()->set_reason(reason);
    outbox_.SendAfterCommit(wit->second.link, std::move(cancel));
  }
}

void Coordinator::MaybeReleaseGroup(TrialRt& t) {
  for (const auto& m : t.members) {
    if (m.live) return;
  }
  std::vector<std::string> nodes;
  for (const auto& m : t.members) nodes.push_back(m.node_id);
  t.members.clear();
  const bool pending = t.proto.state() == v1::TRIAL_PENDING;
  auto sit = searches_.find(t.proto.search_id());
  // A trial promoted to another node count (node count as the fidelity) is a new request, not a requeue.
  const bool reshaped = sit != searches_.end() && TrialNodes(sit->second, t) != static_cast<int>(nodes.size());
  if (t.sched == Sched::kRunning) {
    auto st = pending && !reshaped ? sched_.Requeue(t.proto.id()) : sched_.Finish(t.proto.id());
    if (!st.ok()) LogError(kLog, "trial " + std::to_string(t.proto.id()) + ": scheduler: " + st.message());
    t.sched = pending && !reshaped && st.ok() ? Sched::kQueued : Sched::kNone;
  }
  if (pending && t.sched == Sched::kNone && sit != searches_.end()) Submit(sit->second, t);
  for (const auto& n : nodes) UpdateBusy(n);
  RequestSchedule();
}

scheduler::GroupRequest Coordinator::GroupRequestFor(const SearchRt& s, const TrialRt& t) const {
  scheduler::GroupRequest r;
  r.trial_id = t.proto.id();
  r.nodes = TrialNodes(s, t);
  r.ranks_per_node = s.spec.group.ranks_per_node;
  r.gpus_per_rank = s.spec.group.gpus_per_rank;
  r.priority = SchedPriority(s.proto.priority());
  // Node count as the fidelity: a trial past its first stage was promoted by the trial scheduler.
  if (search::ScalesNodes(s.spec.scheduler) && !t.workflow_step &&
      r.nodes > search::NodeLevels(s.spec.scheduler, t.proto.number()).front()) {
    r.priority = std::max(r.priority, scheduler::Priority::kPromoted);
  }
  return r;
}

int Coordinator::TrialNodes(const SearchRt& s, const TrialRt& t) {
  return t.proto.group().nodes() > 0 ? t.proto.group().nodes() : s.spec.group.nodes;
}

std::map<std::string, std::string> Coordinator::Builtins(const SearchRt& s, const TrialRt& t) const {
  return {{"trial_id", std::to_string(t.proto.id())},
          {"trial_number", std::to_string(t.proto.number())},
          {"search_id", std::to_string(t.proto.search_id())},
          {"checkpoint_dir", CheckpointDir(t)},
          {"nodes", std::to_string(TrialNodes(s, t))}};
}

void Coordinator::Submit(SearchRt& s, TrialRt& t) {
  auto req = GroupRequestFor(s, t);
  auto st = sched_.Submit(req, SchedNow());
  if (!st.ok()) {
    LogError(kLog, "trial " + std::to_string(t.proto.id()) + ": scheduler: " + st.message());
    return;
  }
  t.sched = Sched::kQueued;
  if (!s.infeasible_logged) {
    if (auto f = sched_.Feasible(req); !f.ok()) {
      s.infeasible_logged = true;
      LogWarning(kLog, "search " + std::to_string(s.proto.id()) + ": its trials wait: " + f.message());
    }
  }
}

std::vector<int64_t> Coordinator::SyncNode(WorkerRt& w) {
  std::vector<int64_t> affected;
  scheduler::NodeState state = !w.link                                          ? scheduler::NodeState::kDown
                               : w.info.state() == v1::WORKER_QUARANTINED ||
                                         w.info.state() == v1::WORKER_DRAINING ? scheduler::NodeState::kDraining
                                                                                : scheduler::NodeState::kUp;
  auto st = sched_.SetNodeState(w.info.node_id(), state, &affected);
  if (!st.ok()) LogError(kLog, "node " + w.info.node_id() + ": scheduler: " + st.message());
  return affected;
}

void Coordinator::UpdateBusy(const std::string& node) {
  auto wit = workers_.find(node);
  auto idx = sched_.cluster().IndexOf(node);
  if (wit == workers_.end() || !idx) return;
  const auto& spec = sched_.cluster().spec(*idx);
  int busy = spec.resources.slots - sched_.cluster().free_slots(*idx);
  if (busy == wit->second.info.busy_slots()) return;
  wit->second.info.set_busy_slots(busy);
  hub_.Worker(wit->second.info);
}

void Coordinator::MarkWorkerDown(WorkerRt& w, const std::string& reason) {
  if (w.info.state() != v1::WORKER_QUARANTINED) {
    w.info.set_state(v1::WORKER_DOWN);
    w.info.set_state_reason(reason);
  }
  w.link = nullptr;
  if (!w.trials.empty()) RecordNodeFailure(w, reason);
  std::vector<int64_t> affected = SyncNode(w);
  std::set<int64_t> ids(w.trials.begin(), w.trials.end());
  ids.insert(affected.begin(), affected.end());
  for (int64_t id : ids) {
    auto it = trials_.find(id);
    if (it == trials_.end()) continue;
    TrialRt& t = it->second;
    for (auto& m : t.members) {
      if (m.node_id == w.info.node_id()) MemberGone(t, m);
    }
    if (t.proto.state() == v1::TRIAL_RUNNING) {
      RequeueOrFail(t, reason);  // stops the group's members on the other nodes
    } else {
      MaybeReleaseGroup(t);
    }
  }
  w.trials.clear();
  UpdateBusy(w.info.node_id());
  store_.UpsertNode(w.info);
  store_.AppendEvent("worker_down", 0, 0, w.info.node_id() + ": " + reason, Now());
  hub_.Worker(w.info);
  RequestSchedule();
}

void Coordinator::RequeueOrFail(TrialRt& t, const std::string& reason) {
  CloseAllocation(t, "lost");
  if (t.proto.state() != v1::TRIAL_RUNNING) {
    SaveTrial(t);
    MaybeReleaseGroup(t);
    return;
  }
  SearchRt& s = searches_.at(t.proto.search_id());
  if (s.proto.state() == v1::SEARCH_RUNNING && t.proto.attempt() < s.spec.max_retries) {
    StopMembers(t, reason + "; the trial is requeued");
    t.proto.set_attempt(t.proto.attempt() + 1);
    t.proto.set_error(reason + "; requeued (attempt " + std::to_string(t.proto.attempt()) + ")");
    t.proto.clear_placement();
    t.proto.set_started_unix(0);
    t.epoch = 0;
    t.preempting = false;
    t.early_stop.clear();
    t.exploit.reset();
    t.last_objective.reset();
    t.best_objective.reset();
    t.watchdog_error.clear();
    SetTrialState(t, v1::TRIAL_PENDING);
    SaveTrial(t);
    store_.AppendEvent("trial_requeued", t.proto.search_id(), t.proto.id(), reason, Now());
    LogWarning(kLog, "trial " + std::to_string(t.proto.id()) + " requeued: " + reason);
    hub_.Trial(t.proto);
    hub_.Search(s.proto);
    MaybeReleaseGroup(t);
    RequestSchedule();
    return;
  }
  FinishTrial(t, v1::TRIAL_FAILED, -1, reason + " (no retries left)");
}

void Coordinator::FinishTrial(TrialRt& t, v1::TrialState state, int exit_code, const std::string& error) {
  SearchRt& s = searches_.at(t.proto.search_id());
  t.proto.set_exit_code(exit_code);
  t.proto.set_error(error);
  t.proto.set_finished_unix(Now());
  t.preempting = false;
  SetTrialState(t, state);
  SaveTrial(t);
  // Whatever still runs of the group stops now; its nodes go back to the scheduler once it has.
  StopMembers(t, "trial " + std::string(state == v1::TRIAL_COMPLETED ? "completed" : "ended") +
                     (error.empty() ? "" : ": " + error));
  store_.AppendEvent(std::string("trial_") + (state == v1::TRIAL_COMPLETED ? "completed"
                                                : state == v1::TRIAL_FAILED ? "failed"
                                                                            : "cancelled"),
                     t.proto.search_id(), t.proto.id(), error, Now());
  if (s.sampler && !t.workflow_step) {
    s.sampler->Tell(t.proto.number(), t.params,
                    t.proto.has_objective() ? std::optional<double>(t.proto.objective()) : std::nullopt);
  }
  if (s.trial_sched && !t.workflow_step) {
    if (state == v1::TRIAL_CANCELLED) {
      s.trial_sched->Forget(t.proto.number());
    } else {
      s.trial_sched->Complete(t.proto.number(), t.proto.has_objective() && state == v1::TRIAL_COMPLETED
                                                    ? std::optional<double>(t.proto.objective())
                                                    : std::nullopt);
    }
  }
  t.exploit.reset();
  if (state == v1::TRIAL_COMPLETED && !t.workflow_step) ConsiderBest(s, t);
  UpdateSearchCounts(s);
  hub_.Trial(t.proto);
  if (state == v1::TRIAL_FAILED) {
    LogWarning(kLog, "trial " + std::to_string(t.proto.id()) + " failed: " + error);
    if (s.proto.state() == v1::SEARCH_RUNNING && s.failed >= s.spec.max_failed_trials) {
      SetSearchState(s, v1::SEARCH_FAILED,
                     std::to_string(s.failed) + " trials failed (budget.max_failed_trials is " +
                         std::to_string(s.spec.max_failed_trials) + "); last error: trial " +
                         std::to_string(t.proto.number()) + ": " + error);
    }
  }
  MaybeReleaseGroup(t);
  MaybeFinishSearch(s);
  hub_.Search(s.proto);
  RequestSchedule();
}

void Coordinator::ConsiderBest(SearchRt& s, const TrialRt& t) {
  bool better = s.proto.best_trial_id() == 0 ||
                (s.proto.direction() == v1::MAXIMIZE ? t.proto.objective() > s.proto.best_objective()
                                                     : t.proto.objective() < s.proto.best_objective());
  if (better) {
    s.proto.set_best_trial_id(t.proto.id());
    s.proto.set_best_trial_number(t.proto.number());
    s.proto.set_best_objective(t.proto.objective());
  }
}

void Coordinator::SaveTrial(TrialRt& t) {
  store_.UpdateTrial(t.proto, t.epoch);
  progress_dirty_.erase(t.proto.id());
}

void Coordinator::RecordNodeFailure(WorkerRt& w, const std::string& reason) {
  auto now = Clock::now();
  std::erase_if(w.failures, [&](Clock::time_point t) { return now - t > opt_.quarantine_window; });
  w.failures.push_back(now);
  w.info.set_recent_failures(static_cast<int32_t>(w.failures.size()));
  if (w.info.state() == v1::WORKER_QUARANTINED || opt_.quarantine_after <= 0 ||
      static_cast<int>(w.failures.size()) < opt_.quarantine_after) {
    return;
  }
  w.info.set_state(v1::WORKER_QUARANTINED);
  w.info.set_state_reason(std::to_string(w.failures.size()) + " failures within " +
                          std::to_string(opt_.quarantine_window.count()) + " s; last: " + reason);
  store_.UpsertNode(w.info);
  store_.AppendEvent("worker_quarantined", 0, 0, w.info.node_id() + ": " + w.info.state_reason(), Now());
  LogWarning(kLog, "node " + w.info.node_id() + " quarantined: " + w.info.state_reason());
  hub_.Worker(w.info);
}

void Coordinator::CheckWatchdog(Clock::time_point now) {
  for (auto& [sid, s] : searches_) {
    if (s.proto.state() != v1::SEARCH_RUNNING || s.spec.progress_timeout_s <= 0) continue;
    const auto limit = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(s.spec.progress_timeout_s));
    std::vector<int64_t> running(s.running.begin(), s.running.end());
    for (int64_t id : running) {
      TrialRt& t = trials_.at(id);
      if (t.members.empty() || t.preempting || !t.watchdog_error.empty() || now - t.last_progress < limit) continue;
      char buf[160];
      std::snprintf(buf, sizeof buf, "no metrics line for %.1f s (trial.progress_timeout is %g s): stopped by "
                    "the watchdog", std::chrono::duration<double>(now - t.last_progress).count(),
                    s.spec.progress_timeout_s);
      t.watchdog_error = buf;
      LogWarning(kLog, "trial " + std::to_string(id) + ": " + t.watchdog_error);
      store_.AppendEvent("trial_watchdog", sid, id, t.watchdog_error, Now());
      StopMembers(t, t.watchdog_error);
      if (!AnyLive(t)) {
        CloseAllocation(t, "failed");
        FinishTrial(t, v1::TRIAL_FAILED, -1, t.watchdog_error);
      }
    }
  }
}

// ------------------------------------------------------------------------------------------------------
// Scheduling
// ------------------------------------------------------------------------------------------------------

void Coordinator::RequestSchedule() {
  if (schedule_posted_ || stopped_) return;
  schedule_posted_ = true;
  boost::asio::post(loop_, [this] { Schedule(); });
}

void Coordinator::Schedule() {
  schedule_posted_ = false;
  if (stopped_) return;
  try {
    // Every running search keeps `parallelism` trials submitted (queued or running).
    for (auto& [id, s] : searches_) {
      if (s.proto.state() != v1::SEARCH_RUNNING) continue;
      while (CreateOne(s)) {
      }
    }
    for (const auto& d : sched_.Schedule(SchedNow())) {
      auto it = trials_.find(d.trial_id);
      if (it == trials_.end()) continue;
      TrialRt& t = it->second;
      if (d.kind == scheduler::Decision::Kind::kPreempt) {
        Preempt(t, d.for_trial_id);
      } else {
        t.sched = Sched::kRunning;
        Launch(searches_.at(t.proto.search_id()), t, d.group);
      }
    }
    for (auto& [id, s] : searches_) MaybeFinishSearch(s);
  } catch (const store::SqliteError& e) {
    Fatal(e.what());
  } catch (const std::exception& e) {
    LogError(kLog, std::string("scheduling failed: ") + e.what());
  }
}

bool Coordinator::CreateOne(SearchRt& s) {
  if (static_cast<int>(s.running.size() + s.pending.size()) >= s.proto.parallelism()) return false;
  if (s.exhausted || s.next_number >= s.proto.max_trials()) return false;
  auto params = s.sampler->Ask(s.next_number);
  if (!params) {
    // A sampler that waits for results is asked again after the next trial ends (MaybeFinishSearch does not
    // end a search that is not exhausted); with nothing left to wait for it is done.
    s.exhausted = !s.sampler->Waiting() || (s.running.empty() && s.pending.empty());
    return false;
  }
  TrialRt& t = NewTrial(s, std::move(*params), /*workflow_step=*/false);
  if (s.trial_sched) s.trial_sched->AddTrial(t.proto.number(), t.params);
  Submit(s, t);
  hub_.Trial(t.proto);
  return true;
}

Coordinator::TrialRt& Coordinator::NewTrial(SearchRt& s, search::Params params, bool workflow_step) {
  TrialRt fresh;
  fresh.params = std::move(params);
  fresh.workflow_step = workflow_step;
  auto& p = fresh.proto;
  p.set_search_id(s.proto.id());
  p.set_number(s.next_number++);
  p.set_state(v1::TRIAL_PENDING);
  p.set_workflow_step(workflow_step);
  *p.mutable_group() = s.proto.group();
  if (search::ScalesNodes(s.spec.scheduler) && !workflow_step) {
    p.mutable_group()->set_nodes(search::NodeLevels(s.spec.scheduler, p.number()).front());
  }
  p.set_created_unix(Now());
  for (const auto& [k, v] : fresh.params) (*p.mutable_params())[k] = ToProto(v);
  store_.InsertTrial(&p);
  const int64_t id = p.id();
  s.trial_ids.push_back(id);
  s.pending.insert(id);
  UpdateSearchCounts(s);
  return trials_.emplace(id, std::move(fresh)).first->second;
}

bool Coordinator::AnyLive(const TrialRt& t) {
  return std::any_of(t.members.begin(), t.members.end(), [](const Member& m) { return m.live; });
}

const Coordinator::TrialRt* Coordinator::TrialByNumber(const SearchRt& s, int64_t number) const {
  for (int64_t id : s.trial_ids) {
    const TrialRt& t = trials_.at(id);
    if (t.proto.number() == number) return &t;
  }
  return nullptr;
}

void Coordinator::Launch(SearchRt& s, TrialRt& t, const scheduler::NodeGroup& group) {
  const auto& p = t.proto;
  t.proto.set_checkpoint_dir(CheckpointDir(t));
  t.epoch = next_assignment_epoch_++;
  t.members.clear();
  t.proto.clear_placement();
  const auto& cluster = sched_.cluster();
  for (const auto& slice : group.slices) {
    Member m;
    m.node_id = cluster.spec(slice.node).id;
    m.epoch = t.epoch;
    m.slots = slice.slots;
    m.gpus = slice.gpus;
    m.first_rank = slice.first_rank;
    auto* pl = t.proto.add_placement();
    pl->set_node_id(m.node_id);
    auto wit = workers_.find(m.node_id);
    if (wit != workers_.end()) pl->set_hostname(wit->second.info.resources().hostname());
    for (int sl : m.slots) pl->add_slots(sl);
    for (int g : m.gpus) pl->add_gpus(g);
    pl->set_first_rank(m.first_rank);
    t.members.push_back(std::move(m));
  }
  std::map<std::string, std::string> builtins = Builtins(s, t);
  search::Substituted sub;
  if (t.workflow_step) {
    search::SearchSpec step = s.spec;
    step.command = s.spec.ensemble.retrain;
    builtins["ensemble_file"] = p.checkpoint_dir() + "/ensemble.json";
    sub = search::SubstituteCommand(step, t.params, builtins);
    sub.env["LADDER_ENSEMBLE_FILE"] = builtins["ensemble_file"];
  } else {
    sub = search::SubstituteCommand(s.spec, t.params, builtins);
  }
  if (!sub.error.empty()) {
    SetTrialState(t, v1::TRIAL_RUNNING);
    FinishTrial(t, v1::TRIAL_FAILED, -1, std::string(t.workflow_step ? "ensemble.retrain: " : "command: ") + sub.error);
    return;
  }
  t.last_progress = Clock::now();
  t.watchdog_error.clear();
  t.preempting = false;
  t.early_stop.clear();
  t.exploit.reset();
  t.proto.clear_command();
  for (const auto& a : sub.argv) t.proto.add_command(a);
  t.proto.set_started_unix(Now());
  t.proto.clear_last_metrics();
  t.proto.set_metric_count(0);
  t.proto.set_ignored_lines(0);
  t.proto.clear_last_ignored_line();
  SetTrialState(t, v1::TRIAL_RUNNING);
  std::string nodes, where;
  for (const auto& m : t.members) {
    nodes += (nodes.empty() ? "" : ",") + m.node_id;
    where += (where.empty() ? "" : " ") + m.node_id + ":s[" + FormatIdSet(m.slots) + "]";
  }
  store_.OpenAllocation(p.id(), p.attempt(), nodes, group.ToString(), t.epoch, Now());
  SaveTrial(t);
  store_.AppendEvent("trial_assigned", p.search_id(), p.id(), where + " epoch " + std::to_string(t.epoch), Now());

  // What every started process gets.
  const int world = TrialNodes(s, t) * s.spec.group.ranks_per_node;
  const bool mpirun = s.spec.group.launcher == search::Launcher::kMpirun;
  std::map<std::string, std::string> env(sub.env.begin(), sub.env.end());
  env["LADDER_TRIAL_ID"] = std::to_string(p.id());
  env["LADDER_TRIAL_NUMBER"] = std::to_string(p.number());
  env["LADDER_SEARCH_ID"] = std::to_string(p.search_id());
  env["LADDER_ATTEMPT"] = std::to_string(p.attempt());
  env["LADDER_PARAMS"] = ParamsJson(t.params);
  env["LADDER_CHECKPOINT_DIR"] = p.checkpoint_dir();
  env["LADDER_NODES"] = std::to_string(t.members.size());
  std::string master = opt_.master_addr;
  if (t.members.size() > 1) {
    auto wit = workers_.find(t.members.front().node_id);
    if (wit != workers_.end()) master = Address(wit->second.info.resources());
  }
  std::vector<std::string> argv = sub.argv;
  if (mpirun) {
    // The first node's worker starts mpirun over the group's hosts; mpirun starts every rank.
    std::vector<std::string> words = opt_.mpirun;
    std::string hosts;
    for (const auto& m : t.members) {
      auto wit = workers_.find(m.node_id);
      std::string host = wit == workers_.end() ? m.node_id : Address(wit->second.info.resources());
      hosts += (hosts.empty() ? "" : ",") + host + ":" + std::to_string(m.slots.size());
    }
    words.insert(words.end(), {"-np", std::to_string(world), "--host", hosts});
    for (const auto& [k, v] : env) words.insert(words.end(), {"-x", k});
    words.insert(words.end(), argv.begin(), argv.end());
    argv = std::move(words);
  } else {
    env["WORLD_SIZE"] = std::to_string(world);
    env["LOCAL_WORLD_SIZE"] = std::to_string(s.spec.group.ranks_per_node);
    env["MASTER_ADDR"] = master;
    env["MASTER_PORT"] =
        std::to_string(opt_.rendezvous_port_base + p.id() % std::max(1, opt_.rendezvous_port_span));
  }
  for (auto& m : t.members) {
    if (mpirun && m.first_rank != 0) continue;  // mpirun's ranks run there; the worker only holds the slots
    auto wit = workers_.find(m.node_id);
    if (wit == workers_.end() || !wit->second.link) {
      // The scheduler only places on UP nodes, which have a stream: this is a bug, not a user error.
      LogError(kLog, "trial " + std::to_string(p.id()) + ": node " + m.node_id + " has no worker stream");
      continue;
    }
    WorkerRt& w = wit->second;
    v1::CoordinatorMessage msg;
    auto* st = msg.mutable_start();
    st->set_trial_id(p.id());
    st->set_search_id(p.search_id());
    st->set_assignment_epoch(t.epoch);
    for (const auto& a : argv) st->add_argv(a);
    auto& menv = *st->mutable_env();
    for (const auto& [k, v] : env) menv[k] = v;
    if (!mpirun) {
      menv["RANK"] = std::to_string(m.first_rank);
      menv["LOCAL_RANK"] = "0";
    }
    if (!m.gpus.empty()) menv["CUDA_VISIBLE_DEVICES"] = FormatIdSet(m.gpus);
    st->set_checkpoint_dir(p.checkpoint_dir());
    // The node's worker starts its local ranks (RANK = first_rank + k, LOCAL_RANK = k) and stops them all when
    // one fails.
    st->set_local_ranks(mpirun ? 1 : s.spec.group.ranks_per_node);
    st->set_first_rank(m.first_rank);
    for (int sl : m.slots) st->add_slots(sl);
    m.live = true;
    w.trials.insert(p.id());
    outbox_.SendAfterCommit(w.link, std::move(msg));
  }
  for (auto& m : t.members) UpdateBusy(m.node_id);  // mpirun's other nodes are held too
  if (!AnyLive(t)) {
    RequeueOrFail(t, "no worker stream to start it on");
    return;
  }
  hub_.Trial(t.proto);
  hub_.Search(s.proto);
}

void Coordinator::Preempt(TrialRt& t, int64_t for_trial) {
  std::string reason = "preempted by trial " + std::to_string(for_trial);
  auto fit = trials_.find(for_trial);
  if (fit != trials_.end()) {
    const SearchRt& fs = searches_.at(fit->second.proto.search_id());
    reason += " (" + std::string(scheduler::PriorityName(GroupRequestFor(fs, fit->second).priority)) + " priority)";
  }
  t.preempting = true;
  store_.AppendEvent("trial_preempted", t.proto.search_id(), t.proto.id(), reason, Now());
  LogInfo(kLog, "trial " + std::to_string(t.proto.id()) + " " + reason + "; it resumes from its checkpoint later");
  t.proto.set_error(reason);
  StopMembers(t, reason + "; it resumes from its checkpoint later");
  if (!AnyLive(t)) FinishPreemption(t);
}

void Coordinator::FinishPreemption(TrialRt& t) {
  if (t.proto.state() != v1::TRIAL_RUNNING) return;
  t.proto.set_preemptions(t.proto.preemptions() + 1);
  BackToQueue(t, "preempted");
}

void Coordinator::BackToQueue(TrialRt& t, const std::string& outcome) {
  CloseAllocation(t, outcome);
  t.preempting = false;
  t.early_stop.clear();
  t.exploit.reset();
  t.proto.clear_placement();
  t.proto.set_started_unix(0);
  t.epoch = 0;
  t.last_objective.reset();
  t.best_objective.reset();
  t.watchdog_error.clear();
  SetTrialState(t, v1::TRIAL_PENDING);
  SaveTrial(t);
  hub_.Trial(t.proto);
  hub_.Search(searches_.at(t.proto.search_id()).proto);
  MaybeReleaseGroup(t);
}

// ------------------------------------------------------------------------------------------------------
// Trial schedulers (early stopping, pbt)
// ------------------------------------------------------------------------------------------------------

void Coordinator::CompleteFromExit(SearchRt& s, TrialRt& t) {
  CloseAllocation(t, t.early_stop.empty() ? "exited" : "stopped early");
  auto objective = s.spec.objective.scope == search::Objective::Scope::kBest ? t.best_objective : t.last_objective;
  if (!objective) {
    FinishTrial(t, v1::TRIAL_FAILED, 0,
                "exited 0 without reporting the objective metric '" + s.proto.objective_metric() + "' (" +
                    std::to_string(t.proto.metric_count()) + " metrics lines, " +
                    std::to_string(t.proto.ignored_lines()) + " ignored lines)");
    return;
  }
  t.proto.set_has_objective(true);
  t.proto.set_objective(*objective);
  // A trial stopped early keeps the scheduler's reason as its note (it is not an error: it COMPLETED).
  FinishTrial(t, v1::TRIAL_COMPLETED, 0, t.early_stop.empty() ? "" : "stopped early: " + t.early_stop);
}

void Coordinator::EndStage(SearchRt& s, TrialRt& t) {
  if (!s.trial_sched || !search::ScalesNodes(s.spec.scheduler) || t.workflow_step) return CompleteFromExit(s, t);
  const std::vector<int> levels = search::NodeLevels(s.spec.scheduler, t.proto.number());
  const int nodes = TrialNodes(s, t);
  auto next = std::upper_bound(levels.begin(), levels.end(), nodes);
  auto objective = s.spec.objective.scope == search::Objective::Scope::kBest ? t.best_objective : t.last_objective;
  if (next == levels.end() || !objective) return CompleteFromExit(s, t);  // the last stage, or nothing to judge
  // The stage's report, stored as one of the trial's metrics points: a restarted coordinator replays it.
  v1::MetricPoint point;
  point.set_step(t.proto.last_metrics().step());
  point.set_time_unix(Now());
  (*point.mutable_values())[search::kNodesResource] = nodes;
  (*point.mutable_values())[s.proto.objective_metric()] = *objective;
  store_.AppendMetrics(t.proto.id(), point);
  ConsultTrialScheduler(s, t, point);  // a stop completes the trial with its value
  if (t.proto.state() != v1::TRIAL_RUNNING || !t.early_stop.empty()) return;
  const std::string why = std::string(search::TrialSchedulerTypeName(s.spec.scheduler.type)) + ": promoted from " +
                          std::to_string(nodes) + " to " + std::to_string(*next) + " nodes (" +
                          s.proto.objective_metric() + " " + FormatValue(*objective) + ")";
  store_.AppendEvent("trial_promoted", s.proto.id(), t.proto.id(), why, Now());
  LogInfo(kLog, "trial " + std::to_string(t.proto.id()) + ": " + why);
  t.proto.mutable_group()->set_nodes(*next);
  t.proto.set_error(why);
  BackToQueue(t, "promoted");
}

void Coordinator::ConsultTrialScheduler(SearchRt& s, TrialRt& t, const v1::MetricPoint& point) {
  if (t.proto.state() != v1::TRIAL_RUNNING || t.preempting || t.exploit || !t.early_stop.empty()) return;
  auto r = point.values().find(s.spec.scheduler.resource);
  auto v = point.values().find(s.proto.objective_metric());
  if (r == point.values().end() || v == point.values().end()) return;
  search::TrialDecision d = s.trial_sched->Report(t.proto.number(), r->second, v->second);
  if (d.kind == search::TrialDecision::Kind::kContinue) return;
  if (d.exploit()) {
    if (!TrialByNumber(s, d.source_trial)) {
      LogError(kLog, "trial " + std::to_string(t.proto.id()) + ": pbt chose trial number " +
                         std::to_string(d.source_trial) + ", which this search does not have; ignored");
      return;
    }
    store_.AppendEvent("trial_exploit", s.proto.id(), t.proto.id(), d.reason, Now());
    LogInfo(kLog, "trial " + std::to_string(t.proto.id()) + ": " + d.reason);
    t.exploit = std::move(d);
    StopMembers(t, t.exploit->reason);
  } else {
    store_.AppendEvent("trial_stopped_early", s.proto.id(), t.proto.id(), d.reason, Now());
    LogInfo(kLog, "trial " + std::to_string(t.proto.id()) + " stopped early: " + d.reason);
    t.early_stop = d.reason;  // names the scheduler: "asha: rung 1 (epoch 3): ..."
    StopMembers(t, "stopped early by " + t.early_stop);
  }
  if (!AnyLive(t)) {
    if (t.exploit) FinishExploit(s, t); else CompleteFromExit(s, t);
  }
}

void Coordinator::FinishExploit(SearchRt& s, TrialRt& t) {
  search::TrialDecision d = std::move(*t.exploit);
  t.exploit.reset();
  const TrialRt* source = TrialByNumber(s, d.source_trial);
  // The stopped trial becomes a copy of the source: its checkpoint directory gets the source's files.
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path from = source ? fs::path(CheckpointDir(*source)) : fs::path();
  fs::path to = CheckpointDir(t);
  if (source) {
    // Copied beside it, then swapped in by one atomic exchange of the two directories (renameat2
    // RENAME_EXCHANGE): a crash at any point leaves either the trial's own checkpoint or the source's, whole —
    // never a truncated model file that --resume would load, nor no directory at all.
    fs::path tmp = to;
    tmp += ".exploit-tmp";
    fs::remove_all(tmp, ec);
    ec.clear();
    fs::create_directories(tmp, ec);
    if (!ec && fs::exists(from)) fs::copy(from, tmp, fs::copy_options::recursive, ec);
    if (!ec) {
      const bool swap = fs::exists(to);
      if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, to.c_str(), swap ? RENAME_EXCHANGE : RENAME_NOREPLACE) != 0) {
        ec = std::error_code(errno, std::generic_category());
      }
    }
    std::error_code ignored;
    fs::remove_all(tmp, ignored);  // after the exchange it holds the trial's old files
  }
  if (!source || ec) {
    CloseAllocation(t, "failed");
    FinishTrial(t, v1::TRIAL_FAILED, -1,
                "pbt: cannot take trial number " + std::to_string(d.source_trial) + "'s checkpoint " + from.string() +
                    " into " + to.string() + (ec ? ": " + ec.message() : ""));
    return;
  }
  t.params = d.params;
  t.proto.clear_params();
  for (const auto& [k, v] : t.params) (*t.proto.mutable_params())[k] = ToProto(v);
  store_.ReplaceParams(t.proto);
  t.proto.set_error("pbt: continues from trial " + std::to_string(source->proto.id()) + " (" + d.reason + ")");
  BackToQueue(t, "exploit");
  // It is the source's model now: until it reports (a source that had finished leaves it nothing to train),
  // its value is the source's.
  auto inherited = source->last_objective ? source->last_objective
                   : source->proto.has_objective() ? std::optional<double>(source->proto.objective())
                                                   : std::nullopt;
  t.last_objective = inherited;
  t.best_objective = source->best_objective ? source->best_objective : inherited;
}

void Coordinator::ReplayTrialScheduler(SearchRt& s) {
  // AddTrial for every trial, every stored report in stored order, then how each finished trial ended. Exact
  // for asha, hyperband and median; for pbt approximate: its population drops finished trials at the end
  // instead of at their place among the reports, and points a run sent after its exploit decision (ignored
  // live) are replayed (search/trial_scheduler.h).
  std::map<int64_t, const TrialRt*> by_id;
  for (int64_t id : s.trial_ids) {
    const TrialRt& t = trials_.at(id);
    if (t.workflow_step) continue;
    by_id[id] = &t;
    s.trial_sched->AddTrial(t.proto.number(), t.params);
  }
  const std::string& resource = s.spec.scheduler.resource;
  const std::string& objective = s.proto.objective_metric();
  size_t replayed = 0;
  for (const auto& sp : store_.LoadSearchMetrics(s.proto.id(), {resource, objective})) {
    auto r = sp.point.values().find(resource);
    auto v = sp.point.values().find(objective);
    auto t = by_id.find(sp.trial_id);
    if (r == sp.point.values().end() || v == sp.point.values().end() || t == by_id.end()) continue;
    search::TrialDecision d = s.trial_sched->Report(t->second->proto.number(), r->second, v->second);
    ++replayed;
    // A stop or exploit decided for a trial that still runs: the previous coordinator may have sent the cancel
    // (the run's exit is on its way) or crashed before. Either way the decision holds again, and the cancel goes
    // (again) to each member as its worker re-attaches it, so its exit ends the trial as decided, not as a
    // cancellation nobody asked for.
    TrialRt& live = trials_.at(sp.trial_id);
    // Only a decision on a point of the run now going: the stored points of a trial span all its runs, and an
    // exploit (or a stop before a requeue) on an earlier run was carried out then.
    if (d.kind == search::TrialDecision::Kind::kContinue || live.proto.state() != v1::TRIAL_RUNNING ||
        live.exploit || !live.early_stop.empty() || sp.point.time_unix() <= live.proto.started_unix()) {
      continue;
    }
    if (d.exploit()) {
      if (TrialByNumber(s, d.source_trial)) live.exploit = std::move(d);
    } else {
      live.early_stop = d.reason;
    }
  }
  for (const auto& [id, t] : by_id) {
    switch (t->proto.state()) {
      case v1::TRIAL_CANCELLED: s.trial_sched->Forget(t->proto.number()); break;
      case v1::TRIAL_COMPLETED:
        s.trial_sched->Complete(t->proto.number(), t->proto.has_objective() ? std::optional<double>(t->proto.objective())
                                                                            : std::nullopt);
        break;
      case v1::TRIAL_FAILED: s.trial_sched->Complete(t->proto.number(), std::nullopt); break;
      default: break;
    }
  }
  // pbt keeps each trial's parameters; the store has the current ones (after any exploit).
  for (const auto& [id, t] : by_id) s.trial_sched->AddTrial(t->proto.number(), t->params);
  LogInfo(kLog, "search " + std::to_string(s.proto.id()) + ": " +
                    search::TrialSchedulerTypeName(s.spec.scheduler.type) + " rebuilt from " +
                    std::to_string(replayed) + " stored reports");
}

std::string Coordinator::LoadPlan(SearchRt& s) {
  s.band.clear();
  if (s.proto.plan_json().empty()) return "";
  auto j = nlohmann::json::parse(s.proto.plan_json(), nullptr, false);
  if (!j.is_object()) return "not a JSON object";
  s.stop_outside_band = j.value("stop_outside_band", false);
  if (!j.contains("loss_band")) {  // ladder promote always writes it ([] when it predicted no band)
    return "no \"loss_band\" (the predicted validation-loss band, [[step, lo, hi], ...], [] for none)";
  }
  if (!j["loss_band"].is_array()) return "loss_band: expected [[step, lo, hi], ...]";
  for (const auto& p : j["loss_band"]) {
    if (!p.is_array() || p.size() != 3 || !p[0].is_number() || !p[1].is_number() || !p[2].is_number()) {
      s.band.clear();
      return "loss_band: expected [[step, lo, hi], ...], got " + p.dump();
    }
    s.band.push_back({p[0].get<double>(), p[1].get<double>(), p[2].get<double>()});
  }
  std::sort(s.band.begin(), s.band.end());
  return "";
}

void Coordinator::WatchBand(SearchRt& s, TrialRt& t, const v1::MetricPoint& point) {
  auto it = point.values().find("val_loss");
  const double step = static_cast<double>(point.step());
  if (it == point.values().end() || step < s.band.front()[0] || t.proto.state() != v1::TRIAL_RUNNING) return;
  // Linear in the step between band points; the last point's band beyond it.
  double lo = s.band.back()[1], hi = s.band.back()[2];
  for (size_t i = 1; i < s.band.size(); ++i) {
    if (step <= s.band[i][0]) {
      const auto& a = s.band[i - 1];
      const auto& b = s.band[i];
      const double f = b[0] > a[0] ? (step - a[0]) / (b[0] - a[0]) : 1.0;
      lo = a[1] + f * (b[1] - a[1]);
      hi = a[2] + f * (b[2] - a[2]);
      break;
    }
  }
  const double loss = it->second;
  const bool outside = !(loss >= lo && loss <= hi);
  char buf[200];
  std::snprintf(buf, sizeof buf, "val_loss %.4g at step %lld is %s the predicted band [%.4g, %.4g]", loss,
                static_cast<long long>(point.step()), outside ? (loss > hi ? "above" : "below") : "back inside", lo, hi);
  if (outside == t.outside_band) return;
  t.outside_band = outside;
  store_.AppendEvent(outside ? "hero_outside_band" : "hero_inside_band", s.proto.id(), t.proto.id(), buf, Now());
  if (!outside) {
    LogInfo(kLog, "trial " + std::to_string(t.proto.id()) + ": " + buf);
    return;
  }
  LogWarning(kLog, "trial " + std::to_string(t.proto.id()) + ": " + buf);
  if (s.stop_outside_band && loss > hi && t.watchdog_error.empty()) {
    t.watchdog_error = std::string(buf) + ": stopped (ladder promote --stop-outside-band)";
    StopMembers(t, t.watchdog_error);
  }
}

void Coordinator::MaybeFinishSearch(SearchRt& s) {
  if (s.proto.state() != v1::SEARCH_RUNNING) return;
  if (!s.running.empty() || !s.pending.empty()) return;
  if (!s.exhausted && s.next_number < s.proto.max_trials()) return;
  if (s.spec.ensemble.enabled && !s.proto.has_ensemble()) {
    BuildEnsemble(s);
    if (!s.spec.ensemble.retrain.empty() && s.proto.ensemble().error().empty()) {
      CreateRetrainStep(s);  // the search completes once the step has ended
      return;
    }
  }
  if (s.completed == 0 && s.failed > 0) {
    // Under budget.max_failed_trials, yet nothing succeeded: that is no completed search (a 1-trial search whose
    // command is wrong must not end "completed" with exit 0).
    std::string last;
    for (auto it = s.trial_ids.rbegin(); it != s.trial_ids.rend() && last.empty(); ++it) {
      const TrialRt& t = trials_.at(*it);
      if (t.proto.state() == v1::TRIAL_FAILED) {
        last = "trial " + std::to_string(t.proto.number()) + ": " + t.proto.error();
      }
    }
    SetSearchState(s, v1::SEARCH_FAILED,
                   "no trial completed (" + std::to_string(s.failed) + " failed); last error: " + last);
    return;
  }
  SetSearchState(s, v1::SEARCH_COMPLETED, "");
}

void Coordinator::BuildEnsemble(SearchRt& s) {
  const auto& opt = s.spec.ensemble;
  v1::EnsembleResult out;
  out.set_metric(search::EnsembleMetricName(opt.metric));
  // Candidates: completed trials with an objective, best first, at most top_k.
  std::vector<const TrialRt*> done;
  for (int64_t id : s.trial_ids) {
    const TrialRt& t = trials_.at(id);
    if (t.proto.state() == v1::TRIAL_COMPLETED && t.proto.has_objective()) done.push_back(&t);
  }
  const bool maximize = s.spec.objective.maximize;
  std::stable_sort(done.begin(), done.end(), [&](const TrialRt* a, const TrialRt* b) {
    return maximize ? a->proto.objective() > b->proto.objective() : a->proto.objective() < b->proto.objective();
  });
  if (static_cast<int>(done.size()) > opt.top_k) done.resize(static_cast<size_t>(opt.top_k));
  std::vector<search::TrialPredictions> preds;
  std::map<int64_t, int64_t> id_of_number;
  std::string error;
  for (const TrialRt* t : done) {
    // The file's path: the template with the trial's placeholders, as in its command.
    search::SearchSpec one = s.spec;
    one.command = {opt.predictions_file};
    one.env.clear();
    auto sub = search::SubstituteCommand(one, t->params, Builtins(s, *t));
    if (!sub.error.empty() || sub.argv.empty()) {
      error = "ensemble.predictions_file: " + sub.error;
      break;
    }
    auto read = search::ReadPredictionsFile(sub.argv.front());
    if (!read.error.empty()) {
      error = "trial " + std::to_string(t->proto.number()) + ": " + read.error;
      break;
    }
    preds.push_back({t->proto.number(), std::move(*read.value)});
    id_of_number[t->proto.number()] = t->proto.id();
  }
  out.set_candidates(static_cast<int32_t>(preds.size()));
  if (error.empty() && preds.empty()) error = "no completed trial to build an ensemble from";
  if (error.empty()) {
    auto r = search::SelectEnsemble(preds, opt.metric, opt.size);
    if (!r.ok()) {
      error = r.error;
    } else {
      out.set_value(r.ensemble_metric);
      out.set_best_single_trial_id(id_of_number[r.best_single_trial]);
      out.set_best_single_trial_number(r.best_single_trial);
      out.set_best_single_value(r.best_single_metric);
      for (const auto& m : r.members) {
        auto* pm = out.add_members();
        pm->set_trial_id(id_of_number[m.trial_number]);
        pm->set_trial_number(static_cast<int32_t>(m.trial_number));
        pm->set_weight(m.weight);
      }
    }
  }
  out.set_error(error);
  std::string detail = error.empty() ? out.metric() + " " + std::to_string(out.value()) + " (best single trial " +
                                           std::to_string(out.best_single_value()) + "), " +
                                           std::to_string(out.members_size()) + " members"
                                     : error;
  store_.AppendEvent("search_ensemble", s.proto.id(), 0, detail, Now());
  LogInfo(kLog, "search " + std::to_string(s.proto.id()) + " ensemble: " + detail);
  *s.proto.mutable_ensemble() = std::move(out);
}

void Coordinator::CreateRetrainStep(SearchRt& s) {
  TrialRt& t = NewTrial(s, {}, /*workflow_step=*/true);
  const int64_t id = t.proto.id();
  t.proto.set_checkpoint_dir(CheckpointDir(t));
  // The members, for the step's command: written before the step can start (atomically).
  nlohmann::json members = nlohmann::json::array();
  for (const auto& m : s.proto.ensemble().members()) {
    const TrialRt& mt = trials_.at(m.trial_id());
    members.push_back({{"trial_id", m.trial_id()},
                       {"trial_number", m.trial_number()},
                       {"weight", m.weight()},
                       {"objective", mt.proto.objective()},
                       {"params", nlohmann::json::parse(ParamsJson(mt.params))},
                       {"checkpoint_dir", CheckpointDir(mt)},
                       {"command", std::vector<std::string>(mt.proto.command().begin(), mt.proto.command().end())}});
  }
  nlohmann::json doc = {{"search_id", s.proto.id()},
                        {"metric", s.proto.ensemble().metric()},
                        {"value", s.proto.ensemble().value()},
                        {"members", members}};
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(t.proto.checkpoint_dir(), ec);
  const std::string path = t.proto.checkpoint_dir() + "/ensemble.json";
  std::string write_error;
  try {
    WriteFileAtomically(path, doc.dump(2) + "\n", 0644);  // temp file, fsync, rename: never a half-written file
  } catch (const std::exception& e) {
    write_error = e.what();
  }
  s.proto.mutable_ensemble()->set_retrain_trial_id(id);
  store_.UpdateSearch(s.proto);
  store_.AppendEvent("ensemble_retrain", s.proto.id(), id, path, Now());
  if (!write_error.empty()) {
    SetTrialState(t, v1::TRIAL_RUNNING);
    FinishTrial(t, v1::TRIAL_FAILED, -1, "ensemble.retrain: cannot write " + path + ": " + write_error);
    return;
  }
  Submit(s, t);
  hub_.Trial(t.proto);
  hub_.Search(s.proto);
  RequestSchedule();
}

void Coordinator::SetSearchState(SearchRt& s, v1::SearchState state, const std::string& error) {
  s.proto.set_state(state);
  s.proto.set_error(error);
  if (state != v1::SEARCH_RUNNING) s.proto.set_finished_unix(Now());
  if (state == v1::SEARCH_CANCELLED || state == v1::SEARCH_FAILED) {
    std::vector<int64_t> pending(s.pending.begin(), s.pending.end());
    for (int64_t id : pending) {
      TrialRt& t = trials_.at(id);
      t.proto.set_finished_unix(Now());
      t.proto.set_error("search " + std::string(state == v1::SEARCH_CANCELLED ? "cancelled" : "failed"));
      SetTrialState(t, v1::TRIAL_CANCELLED);
      SaveTrial(t);
      if (t.sched == Sched::kQueued) {
        sched_.Cancel(id);
        t.sched = Sched::kNone;
      }
      MaybeReleaseGroup(t);  // a requeued trial whose old processes still stop keeps its group until then
      hub_.Trial(t.proto);
    }
    std::vector<int64_t> running(s.running.begin(), s.running.end());
    for (int64_t id : running) {
      TrialRt& t = trials_.at(id);
      t.proto.set_finished_unix(Now());
      t.proto.set_error("search " + std::string(state == v1::SEARCH_CANCELLED ? "cancelled" : "failed"));
      t.preempting = false;
      SetTrialState(t, v1::TRIAL_CANCELLED);
      SaveTrial(t);
      StopMembers(t, t.proto.error());
      if (!AnyLive(t)) {
        CloseAllocation(t, "cancelled");
      }
      MaybeReleaseGroup(t);
      hub_.Trial(t.proto);
    }
  }
  store_.UpdateSearch(s.proto);
  store_.AppendEvent("search_" + std::string(state == v1::SEARCH_COMPLETED   ? "completed"
                                             : state == v1::SEARCH_CANCELLED ? "cancelled"
                                             : state == v1::SEARCH_FAILED    ? "failed"
                                                                             : "running"),
                     s.proto.id(), 0, error, Now());
  LogInfo(kLog, "search " + std::to_string(s.proto.id()) + " " + v1::SearchState_Name(state) +
                    (error.empty() ? "" : ": " + error));
  UpdateSearchCounts(s);
  // A search's end is durable before anyone hears of it.
  outbox_.Commit();
  hub_.Search(s.proto);
}

void Coordinator::UpdateSearchCounts(SearchRt& s) {
  s.proto.set_pending(static_cast<int32_t>(s.pending.size()));
  s.proto.set_running(static_cast<int32_t>(s.running.size()));
  s.proto.set_completed(s.completed);
  s.proto.set_failed(s.failed);
  s.proto.set_cancelled(s.cancelled);
}

}  // namespace ladder::server
