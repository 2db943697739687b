#include "server/event_hub.h"

#include "common/wall_clock.h"

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
  int64_t sid = ev.has_search()    ? ev.search().id()
                : ev.has_trial()   ? ev.trial().search_id()
                : ev.has_journal() ? ev.journal().search_id()
                                   : 0;
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
  Coalesce("s" + std::to_string(search.id()), search.state(), std::move(ev));
}

void EventHub::Worker(const v1::WorkerInfo& worker) {
  if (watchers_.empty()) return;
  v1::Event ev;
  ev.set_kind(v1::Event::WORKER_UPDATED);
  *ev.mutable_worker() = worker;
  Coalesce("w" + worker.node_id(), worker.state(), std::move(ev));
}

void EventHub::Coalesce(const std::string& key, int state, v1::Event ev) {
  auto [sent, first] = sent_state_.try_emplace(key, state);
  if (first || sent->second != state) {
    sent->second = state;
    waiting_.erase(key);
    Emit(std::move(ev));
    return;
  }
  waiting_[key] = std::move(ev);  // the state is as sent: Committed sends the newest
}

void EventHub::Metrics(const v1::Trial& trial, const v1::MetricPoint& point) {
  if (watchers_.empty()) return;
  v1::Event& ev = points_[trial.id()];
  if (ev.kind() != v1::Event::TRIAL_METRICS) {
    ev.set_kind(v1::Event::TRIAL_METRICS);
    ev.mutable_trial()->set_id(trial.id());
    ev.mutable_trial()->set_search_id(trial.search_id());
    ev.mutable_trial()->set_number(trial.number());
  }
  *ev.mutable_metrics() = point;
}

void EventHub::Record(const std::string& kind, int64_t search_id, int64_t trial_id, const std::string& detail) {
  const double now = WallNow();
  const int64_t seq = store_.AppendEvent(kind, search_id, trial_id, detail, now);
  if (watchers_.empty()) return;
  v1::Event ev;
  ev.set_kind(v1::Event::JOURNAL);
  auto* j = ev.mutable_journal();
  j->set_seq(seq);
  j->set_time_unix(now);
  j->set_kind(kind);
  j->set_search_id(search_id);
  j->set_trial_id(trial_id);
  j->set_detail(detail);
  uncommitted_.push_back(std::move(ev));
}

void EventHub::Committed() {
  auto committed = std::move(uncommitted_);
  uncommitted_.clear();
  for (auto& ev : committed) Emit(std::move(ev));
  const auto now = std::chrono::steady_clock::now();
  for (auto it = points_.begin(); it != points_.end();) {
    auto& sent = point_sent_[it->first];
    if (now - sent < kMetricsInterval) {
      ++it;
      continue;
    }
    sent = now;
    Emit(std::move(it->second));
    it = points_.erase(it);
  }
  if (!waiting_.empty() && now - waiting_sent_ >= kMetricsInterval) {
    waiting_sent_ = now;
    auto waiting = std::move(waiting_);
    waiting_.clear();
    for (auto& [key, ev] : waiting) Emit(std::move(ev));
  }
  // A trial that sent nothing for a while needs no interval any more: the map holds the trials reporting now.
  if (point_sent_.size() > points_.size() + 1024) {
    std::erase_if(point_sent_, [&](const auto& e) { return now - e.second > 10 * kMetricsInterval; });
  }
}

}  // namespace ladder::server
