#include "cli/watch_model.h"

#include <cstdio>
#include <ctime>

#include "cli/format.h"
#include "common/id_set.h"

namespace ladder::cli {

namespace {

// "a:s[0-1],b:s[0-1]" for a trial's placement.
std::string Where(const v1::Trial& t) {
  std::string out;
  for (const auto& p : t.placement()) {
    std::vector<int> slots(p.slots().begin(), p.slots().end());
    out += (out.empty() ? "" : ",") + p.node_id() + ":s[" + FormatIdSet(slots) + "]";
  }
  return out;
}

std::string Values(const v1::MetricPoint& p) {
  std::string out;
  for (const auto& [k, v] : p.values()) out += (out.empty() ? "" : " ") + k + "=" + FormatNumber(v);
  return out;
}

}  // namespace

std::string ClockTime(double unix_time) {
  std::time_t t = static_cast<std::time_t>(unix_time);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%H:%M:%S", &tm);
  return buf;
}

std::string WatchModel::ObjectiveOf(int64_t trial_id) const {
  auto t = trials.find(trial_id);
  if (t == trials.end()) return "";
  auto s = searches.find(t->second.search_id());
  return s == searches.end() ? "" : s->second.objective_metric();
}

std::vector<int64_t> WatchModel::TrialsOn(const std::string& node) const {
  std::vector<int64_t> out;
  for (const auto& [id, t] : trials) {
    if (t.state() != v1::TRIAL_RUNNING) continue;
    for (const auto& p : t.placement()) {
      if (p.node_id() == node) {
        out.push_back(id);
        break;
      }
    }
  }
  return out;
}

void WatchModel::SetCurve(const v1::Trial& with_metrics) {
  const std::string metric = ObjectiveOf(with_metrics.id());
  auto& curve = curves[with_metrics.id()];
  curve.clear();
  for (const auto& p : with_metrics.metrics()) {
    // Only the current run: its points are the ones after it started.
    if (p.time_unix() > 0 && p.time_unix() < with_metrics.started_unix()) continue;
    auto it = p.values().find(metric);
    if (it != p.values().end()) curve.emplace_back(p.step(), it->second);
  }
}

bool WatchModel::Apply(const v1::Event& ev) {
  switch (ev.kind()) {
    case v1::Event::SEARCH_UPDATED: searches[ev.search().id()] = ev.search(); return true;
    case v1::Event::TRIAL_UPDATED: {
      auto& t = trials[ev.trial().id()];
      if (t.started_unix() != ev.trial().started_unix()) curves.erase(ev.trial().id());  // a new run
      t = ev.trial();
      sent_unix[t.id()] = ev.time_unix() > 0 ? ev.time_unix() : t.started_unix();
      return true;
    }
    case v1::Event::WORKER_UPDATED: workers[ev.worker().node_id()] = ev.worker(); return true;
    case v1::Event::JOURNAL:
      if (ev.journal().seq() <= last_journal_seq) return false;  // seen before a reconnect
      last_journal_seq = ev.journal().seq();
      journal.push_back(ev.journal());
      while (journal.size() > kMaxJournal) journal.pop_front();
      return true;
    case v1::Event::TRIAL_METRICS: {
      if (auto t = trials.find(ev.trial().id()); t != trials.end()) {
        *t->second.mutable_last_metrics() = ev.metrics();
        t->second.set_metric_count(t->second.metric_count() + 1);
      }
      const std::string metric = ObjectiveOf(ev.trial().id());
      auto it = ev.metrics().values().find(metric);
      if (it == ev.metrics().values().end()) return false;
      auto& curve = curves[ev.trial().id()];
      curve.emplace_back(ev.metrics().step(), it->second);
      if (curve.size() > kMaxCurvePoints) {  // keep every other point of the older half
        std::vector<std::pair<int64_t, double>> thinned;
        for (size_t i = 0; i < curve.size(); ++i) {
          if (i >= curve.size() / 2 || i % 2 == 0) thinned.push_back(curve[i]);
        }
        curve = std::move(thinned);
      }
      return true;
    }
    default: return false;
  }
}

std::string PlainLine(const WatchModel& before, const v1::Event& ev) {
  const std::string when = ClockTime(ev.time_unix() > 0 ? ev.time_unix() : ev.journal().time_unix());
  switch (ev.kind()) {
    case v1::Event::SEARCH_UPDATED: {
      const auto& s = ev.search();
      auto old = before.searches.find(s.id());
      if (old != before.searches.end() && old->second.state() == s.state() &&
          old->second.completed() == s.completed() && old->second.failed() == s.failed() &&
          old->second.running() == s.running() && old->second.pending() == s.pending()) {
        return "";
      }
      std::string line = when + " search " + std::to_string(s.id()) + " '" + s.name() + "' " +
                         StateName(s.state()) + ": " + std::to_string(s.completed()) + " completed, " +
                         std::to_string(s.failed()) + " failed, " + std::to_string(s.running()) + " running, " +
                         std::to_string(s.pending()) + " queued";
      if (s.best_trial_id() != 0) {
        line += "; best " + s.objective_metric() + " " + FormatNumber(s.best_objective()) + " (trial " +
                std::to_string(s.best_trial_number()) + ")";
      }
      if (!s.error().empty()) line += "; " + s.error();
      return line;
    }
    case v1::Event::TRIAL_UPDATED: {
      const auto& t = ev.trial();
      auto old = before.trials.find(t.id());
      if (old != before.trials.end() && old->second.state() == t.state() && old->second.attempt() == t.attempt()) {
        return "";
      }
      std::string line = when + " trial " + std::to_string(t.id()) + " (#" + std::to_string(t.number()) + ") " +
                         StateName(t.state());
      if (t.state() == v1::TRIAL_RUNNING) line += " on " + Where(t);
      if (t.state() == v1::TRIAL_PENDING || t.state() == v1::TRIAL_RUNNING) line += "  " + FormatParams(t);
      if (t.has_objective()) line += "  objective " + FormatNumber(t.objective());
      if (!t.error().empty()) line += "  (" + t.error() + ")";
      return line;
    }
    case v1::Event::TRIAL_METRICS:
      return when + " trial " + std::to_string(ev.trial().id()) + " step " + std::to_string(ev.metrics().step()) +
             "  " + Values(ev.metrics());
    case v1::Event::WORKER_UPDATED: {
      const auto& w = ev.worker();
      std::string line = when + " node " + w.node_id() + " " + StateName(w.state()) + " " +
                         std::to_string(w.busy_slots()) + "/" + std::to_string(w.resources().slots()) + " slots busy";
      if (!w.state_reason().empty()) line += " (" + w.state_reason() + ")";
      return line;
    }
    case v1::Event::JOURNAL: {
      const auto& j = ev.journal();
      if (j.seq() <= before.last_journal_seq) return "";
      std::string line = ClockTime(j.time_unix()) + " " + j.kind();
      if (j.search_id()) line += " search " + std::to_string(j.search_id());
      if (j.trial_id()) line += " trial " + std::to_string(j.trial_id());
      if (!j.detail().empty()) line += ": " + j.detail();
      return line;
    }
    default: return "";
  }
}

}  // namespace ladder::cli
