// Coordinator: the Ladder service's calls (CLI, dashboards) — protos in, calls on the parts, protos out.
#include "server/coordinator.h"

#include <algorithm>

#include "server/store/sqlite_db.h"
#include "common/wall_clock.h"

namespace ladder::server {

grpc::Status ReadOnlyRefusal(const std::string& call, const std::string& db_path) {
  return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                      call + " refused: this coordinator serves " + db_path + " read-only (ladder-server "
                      "--read-only, or the CLI reading a database no coordinator serves); it changes nothing, runs no "
                      "trial and accepts no worker. Start the coordinator of that database (ladder up, ladder-server "
                      "--db) to change it");
}

grpc::Status Coordinator::CreateSearch(const v1::CreateSearchRequest& req, v1::CreateSearchResponse* resp) {
  if (read_only()) return ReadOnlyRefusal("CreateSearch", store_.path());
  return searches_.Create(req, resp->mutable_search());
}

grpc::Status Coordinator::ListSearches(const v1::ListSearchesRequest&, v1::ListSearchesResponse* resp) {
  for (int64_t id : searches_.Ids()) {
    auto* out = resp->add_searches();
    *out = *searches_.Get(id);
    out->clear_spec_yaml();
    out->set_node_seconds(trials_.NodeSeconds(id, WallNow()));
  }
  return grpc::Status::OK;
}

grpc::Status Coordinator::GetSearch(const v1::GetSearchRequest& req, v1::GetSearchResponse* resp) {
  const v1::Search* s = searches_.Get(req.search_id());
  if (!s) return grpc::Status(grpc::StatusCode::NOT_FOUND, "no search with id " + std::to_string(req.search_id()));
  *resp->mutable_search() = *s;
  resp->mutable_search()->set_node_seconds(trials_.NodeSeconds(s->id(), WallNow()));
  return grpc::Status::OK;
}

grpc::Status Coordinator::CancelSearch(const v1::CancelSearchRequest& req, v1::CancelSearchResponse* resp) {
  if (read_only()) return ReadOnlyRefusal("CancelSearch", store_.path());
  return searches_.Cancel(req.search_id(), resp->mutable_search());
}

grpc::Status Coordinator::AddProbe(const v1::AddProbeRequest& req, v1::AddProbeResponse* resp) {
  if (read_only()) return ReadOnlyRefusal("AddProbe", store_.path());
  return searches_.AddProbe(req, resp);
}

grpc::Status Coordinator::EnqueueTrial(const v1::EnqueueTrialRequest& req, v1::EnqueueTrialResponse* resp) {
  if (read_only()) return ReadOnlyRefusal("EnqueueTrial", store_.path());
  return searches_.Enqueue(req, resp);
}

grpc::Status Coordinator::ListTrials(const v1::ListTrialsRequest& req, v1::ListTrialsResponse* resp) {
  if (!searches_.Has(req.search_id())) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "no search with id " + std::to_string(req.search_id()));
  }
  if (req.page_size() < 0 || static_cast<size_t>(req.page_size()) > kMaxTrialsPage) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "page_size " + std::to_string(req.page_size()) +
                                                                ": at most " + std::to_string(kMaxTrialsPage));
  }
  const size_t page = req.page_size() == 0 ? kDefaultTrialsPage : static_cast<size_t>(req.page_size());
  const double now = WallNow();
  const auto& ids = trials_.Of(req.search_id()).ids;  // ascending: trials are created in id order
  auto it = std::upper_bound(ids.begin(), ids.end(), req.page_token());
  for (; it != ids.end() && static_cast<size_t>(resp->trials_size()) < page; ++it) {
    v1::Trial* t = resp->add_trials();
    *t = trials_.View(trials_.Get(*it), now);
    t->set_pareto(searches_.OnFront(req.search_id(), *it));
  }
  if (it != ids.end()) resp->set_next_page_token(resp->trials(resp->trials_size() - 1).id());
  return grpc::Status::OK;
}

grpc::Status Coordinator::GetTrial(const v1::GetTrialRequest& req, v1::GetTrialResponse* resp) {
  const TrialRecord* t = trials_.Find(req.trial_id());
  if (!t) return grpc::Status(grpc::StatusCode::NOT_FOUND, "no trial with id " + std::to_string(req.trial_id()));
  if (req.max_metric_points() < 0 || req.max_metric_points() > kMaxMetricPoints) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "max_metric_points " + std::to_string(req.max_metric_points()) + " is out of range (0 for " +
                            std::to_string(kDefaultMetricPoints) + ", at most " + std::to_string(kMaxMetricPoints) +
                            ")");
  }
  *resp->mutable_trial() = trials_.View(*t, WallNow());
  resp->mutable_trial()->set_pareto(searches_.OnFront(t->proto.search_id(), t->proto.id()));
  trials_.AddHistory(*t, resp->mutable_trial());
  if (req.include_metrics()) {
    auto view = store_.LoadMetricsView(req.trial_id(),
                                       req.max_metric_points() ? req.max_metric_points() : kDefaultMetricPoints,
                                       kMaxMetricRows);
    for (auto& p : view.points) *resp->mutable_trial()->add_metrics() = std::move(p);
    resp->set_metrics_step_stride(view.step_stride);
  }
  return grpc::Status::OK;
}

grpc::Status Coordinator::ServerInfo(const v1::ServerInfoRequest&, v1::ServerInfoResponse* resp) {
  resp->set_version(opt_.version);
  resp->set_db_path(store_.path());
  resp->set_started_unix(started_unix_);
  for (auto& info : nodes_.Infos()) *resp->add_workers() = std::move(info);
  return grpc::Status::OK;
}

grpc::Status Coordinator::ReleaseNode(const v1::ReleaseNodeRequest& req, v1::ReleaseNodeResponse* resp) {
  if (read_only()) return ReadOnlyRefusal("ReleaseNode", store_.path());
  grpc::Status st = nodes_.Release(req.node_id(), resp->mutable_worker());
  if (!st.ok()) return st;
  outbox_.Commit();
  hub_.Worker(resp->worker());
  RequestSchedule();
  return grpc::Status::OK;
}

int64_t Coordinator::AddWatcher(const v1::WatchRequest& req, EventSink sink) {
  const int64_t search_id = req.search_id();
  // What the batch holds is committed first: the snapshot's journal then holds only committed entries, and the
  // entries waiting for this commit reach the other watchers, not this one twice.
  if (!outbox_.failed() && !read_only()) {
    try {
      outbox_.Commit();
    } catch (const store::SqliteError& e) {
      Fatal(e.what());
    }
  }
  // The snapshot: every worker, the watched search (or all), and the watched search's trials.
  std::vector<v1::Event> snapshot;
  const double now = WallNow();  // the time of the snapshot's node-seconds
  for (auto& info : nodes_.Infos()) {
    v1::Event& ev = snapshot.emplace_back();
    ev.set_kind(v1::Event::WORKER_UPDATED);
    *ev.mutable_worker() = std::move(info);
  }
  for (int64_t sid : searches_.Ids()) {
    if (search_id != 0 && sid != search_id) continue;
    v1::Event& ev = snapshot.emplace_back();
    ev.set_time_unix(now);
    ev.set_kind(v1::Event::SEARCH_UPDATED);
    *ev.mutable_search() = *searches_.Get(sid);
    ev.mutable_search()->clear_spec_yaml();
    ev.mutable_search()->set_node_seconds(trials_.NodeSeconds(sid, now));
    if (search_id == 0) continue;
    for (int64_t tid : trials_.Of(sid).ids) {
      v1::Event& tev = snapshot.emplace_back();
      tev.set_kind(v1::Event::TRIAL_UPDATED);
      tev.set_time_unix(now);
      *tev.mutable_trial() = trials_.View(trials_.Get(tid), now);
    }
  }
  // Then the journal: after the entry a watcher saw last (a reconnect), or the latest few (an event log).
  constexpr int kMaxResumed = 10000, kMaxTail = 1000;
  const bool resume = req.after_journal_seq() > 0;
  const int limit = resume ? kMaxResumed : std::clamp(req.journal_tail(), 0, kMaxTail);
  for (auto& entry : store_.LoadJournal(search_id, resume ? req.after_journal_seq() : 0, limit)) {
    v1::Event& ev = snapshot.emplace_back();
    ev.set_kind(v1::Event::JOURNAL);
    ev.set_time_unix(entry.time_unix());
    *ev.mutable_journal() = std::move(entry);
  }
  snapshot.emplace_back().set_kind(v1::Event::SNAPSHOT_DONE);
  return hub_.Subscribe(search_id, sink, std::move(snapshot));
}

void Coordinator::RemoveWatcher(int64_t id) { hub_.Unsubscribe(id); }

}  // namespace ladder::server
