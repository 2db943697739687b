#include "server/event_hub.h"

#include "server/wall_clock.h"

namespace ladder::server {

int64_t EventHub::Subscribe(int64_t search_id, const EventSink& sink, std::vector<v1::Event> snapshot) {
  for (auto& ev : snapshot) {
    ev.set_seq(seq_);
    sink(ev);
  }
  const int64_t id = next_id_++;
  watchers_.emplace(id, std::make_pair(search_id, sink));
  return id;
}

void EventHub::Emit(v1::Event ev) {
  if (watchers_.empty()) return;
  ev.set_seq(++seq_);
  ev.set_time_unix(WallNow());
  int64_t sid = ev.has_search() ? ev.search().id() : ev.has_trial() ? ev.trial().search_id() : 0;
  for (auto& [id, w] : watchers_) {
    if (w.first == 0 || sid == 0 || w.first == sid) {
      if (w.first == 0 && ev.kind() == v1::Event::TRIAL_METRICS) continue;
      w.second(ev);
    }
  }
}

void EventHub::Trial(const v1::Trial& trial) {
  if (watchers_.empty()) return;
  v1::Event ev;
  ev.set_kind(v1::Event::TRIAL_UPDATED);
  *ev.mutable_trial() = trial;
  Emit(std::move(ev));
}

void EventHub::Search(const v1::Search& search) {
  if (watchers_.empty()) return;
  v1::Event ev;
  ev.set_kind(v1::Event::SEARCH_UPDATED);
  *ev.mutable_search() = search;
  ev.mutable_search()->clear_spec_yaml();
  Emit(std::move(ev));
}

void EventHub::Worker(const v1::WorkerInfo& worker) {
  if (watchers_.empty()) return;
  v1::Event ev;
  ev.set_kind(v1::Event::WORKER_UPDATED);
  *ev.mutable_worker() = worker;
  Emit(std::move(ev));
}

void EventHub::Metrics(const v1::Trial& trial, const v1::MetricPoint& point) {
  if (watchers_.empty()) return;
  v1::Event ev;
  ev.set_kind(v1::Event::TRIAL_METRICS);
  ev.mutable_trial()->set_id(trial.id());
  ev.mutable_trial()->set_search_id(trial.search_id());
  ev.mutable_trial()->set_number(trial.number());
  *ev.mutable_metrics() = point;
  Emit(std::move(ev));
}

}  // namespace ladder::server
