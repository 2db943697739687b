#pragma once
// EventHub: what watchers receive — the one place a subscriber (the Watch RPC, and through it every dashboard)
// hooks into the coordinator.
//
// Owns: the subscribers, each with its search filter, and the event sequence number (seq).
// Takes: finished protos (a trial, a search, a worker, a metric point) from the other parts; it reads no state of
// theirs and changes none.
// Thread: the coordinator's loop. Sinks are called there and must not block (the Watch reactor queues).
//
// Delivery rules: an event gets the next seq only when someone listens (seq numbers what was delivered, not what
// happened); a watcher of one search gets that search's events and every worker's; a watcher of the whole cluster
// (search 0) gets search and worker updates but not each trial's metric points.
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "ladder/v1/ladder.pb.h"
#include "server/worker_link.h"

namespace ladder::server {

class EventHub {
 public:
  // Sends `snapshot` (the state the watcher starts from; each event gets the current seq) to `sink` at once, then
  // every later event that passes the filter. Returns an id for Unsubscribe.
  int64_t Subscribe(int64_t search_id, const EventSink& sink, std::vector<v1::Event> snapshot);
  void Unsubscribe(int64_t id) { watchers_.erase(id); }
  void Clear() { watchers_.clear(); }
  bool empty() const { return watchers_.empty(); }

  void Emit(v1::Event ev);
  void Trial(const v1::Trial& trial);
  void Search(const v1::Search& search);  // without its spec_yaml
  void Worker(const v1::WorkerInfo& worker);
  // One metric point of a trial (only its id, search and number go with it).
  void Metrics(const v1::Trial& trial, const v1::MetricPoint& point);

 private:
  std::map<int64_t, std::pair<int64_t, EventSink>> watchers_;  // id → (search filter, sink)
  int64_t next_id_ = 1;
  int64_t seq_ = 0;
};

}  // namespace ladder::server
