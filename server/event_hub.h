#pragma once
// EventHub: what watchers receive — the one place a subscriber (the Watch RPC, and through it every dashboard)
// hooks into the coordinator.
//
// Owns: the subscribers, each with its search filter, and the event sequence number (seq); the journal — what
// happened and why, in words (a requeue, an early stop, a node lost, ...), stored in the open batch with the
// change it describes and sent as a JOURNAL event once that batch is committed (Committed): a watcher that resumes
// after the last seq it saw, across a coordinator crash too, never holds an entry the database lost.
// Takes: finished protos (a trial, a search, a worker, a metric point) from the other parts; it reads no state of
// theirs and changes none.
// Thread: the coordinator's loop. Sinks are called there and must not block (the Watch reactor queues).
//
// Delivery rules: an event gets the next seq only when someone listens (seq numbers what was delivered, not what
// happened); a watcher of one search gets that search's events and every worker's; a watcher of the whole cluster
// (search 0) gets search and worker updates but not each trial's metric points. Metric points are coalesced: per
// trial only the newest one waiting goes out, once the batch that stores it is committed (with the journal), and
// at most one per trial every kMetricsInterval — live enough for a curve on a screen, while watchers cost the
// ingest path a map write per report instead of a copy per point and watcher. The stored curve (/curves,
// GetTrial) has every point. A search's update that changes only its counts (a trial started or ended), and a
// worker's that changes only its busy slots, are coalesced the same way (the newest per search or node, at most
// every kMetricsInterval); one that changes the state goes out at once and replaces what waited.
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ladder/v1/ladder.pb.h"
#include "server/store/store.h"
#include "server/worker_link.h"

namespace ladder::server {

class EventHub {
 public:
  static constexpr std::chrono::milliseconds kMetricsInterval{250};

  explicit EventHub(store::Store& store) : store_(store) {}

  // Sends `snapshot` (the state the watcher starts from; each event gets the current seq) to `sink` at once, then
  // every later event that passes the filter. Returns an id for Unsubscribe.
  int64_t Subscribe(int64_t search_id, const EventSink& sink, std::vector<v1::Event> snapshot);
  // Once the last watcher has gone, the searches' and workers' held-back updates go too: a later watcher starts
  // from its snapshot, and an update held back before it (a search since reopened by a probe while nobody
  // watched) must not reach it after that snapshot as if it were newer.
  void Unsubscribe(int64_t id) {
    watchers_.erase(id);
    if (watchers_.empty()) waiting_.clear(), sent_state_.clear();
  }
  void Clear() {
    watchers_.clear();
    uncommitted_.clear();
    points_.clear();
    point_sent_.clear();
    waiting_.clear();
    sent_state_.clear();
  }
  bool empty() const { return watchers_.empty(); }

  void Emit(v1::Event ev);
  void Trial(const v1::Trial& trial);
  void Search(const v1::Search& search);  // without its spec_yaml
  void Worker(const v1::WorkerInfo& worker);
  // A trial's newest metric point (only its id, search and number go with it); sent by Committed, the newest per
  // trial.
  void Metrics(const v1::Trial& trial, const v1::MetricPoint& point);
  // Appends to the journal (search_id 0: about no search); watchers hear of it once it is committed.
  void Record(const std::string& kind, int64_t search_id, int64_t trial_id, const std::string& detail);
  // The store's batch was committed: the journal entries it held go to watchers, and each trial's newest point
  // when its last one went out kMetricsInterval ago or more.
  void Committed();
  // Points wait for their interval: the commit timer keeps committing (empty batches are free) until they are out.
  bool HasPending() const { return !points_.empty() || !waiting_.empty(); }

 private:
  store::Store& store_;
  std::vector<v1::Event> uncommitted_;  // JOURNAL events waiting for their commit
  std::map<int64_t, v1::Event> points_;  // trial id → its newest TRIAL_METRICS event waiting for the commit
  std::map<int64_t, std::chrono::steady_clock::time_point> point_sent_;  // trial id → when its last point went
  // Searches' and workers' updates by key ("s1", "wnode-a"): the state each last sent, and the newest update that
  // changes no state, waiting.
  void Coalesce(const std::string& key, int state, v1::Event ev);
  std::map<std::string, int> sent_state_;
  std::map<std::string, v1::Event> waiting_;
  std::chrono::steady_clock::time_point waiting_sent_{};
  std::map<int64_t, std::pair<int64_t, EventSink>> watchers_;  // id → (search filter, sink)
  int64_t next_id_ = 1;
  int64_t seq_ = 0;
};

}  // namespace ladder::server
