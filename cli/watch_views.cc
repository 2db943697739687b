// ladder watch's Pareto and timeline views, as text (watch_views.h).
#include "cli/watch_views.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "cli/format.h"

namespace ladder::cli {
namespace {

std::string Num4(double v) { return FormatNumber(v, 4); }

std::string Clip(std::string s, int w) {
  if (static_cast<int>(s.size()) > w) s.resize(static_cast<size_t>(std::max(0, w)));
  return s;
}

std::string Direction(v1::Direction d) { return d == v1::MAXIMIZE ? "max" : "min"; }

// A trial's bar glyph: its state's.
char StateGlyph(v1::TrialState s) {
  switch (s) {
    case v1::TRIAL_COMPLETED: return '=';
    case v1::TRIAL_RUNNING: return '>';
    case v1::TRIAL_FAILED: return 'F';
    case v1::TRIAL_CANCELLED: return 'x';
    default: return '-';
  }
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int64_t ViewedSearch(const WatchModel& m, int64_t search_id, int64_t selected_trial) {
  if (search_id != 0) return search_id;
  if (auto t = m.trials.find(selected_trial); t != m.trials.end()) return t->second.search_id();
  return m.searches.empty() ? 0 : m.searches.rbegin()->first;
}

std::vector<std::string> ParetoView(const WatchModel& m, int64_t search_id, int64_t selected_trial, int h, int w) {
  std::vector<std::string> out;
  const int64_t sid = ViewedSearch(m, search_id, selected_trial);
  auto s = m.searches.find(sid);
  if (s == m.searches.end() || s->second.objectives_size() < 2) {
    out.push_back(Clip(" PARETO", w));
    out.push_back(Clip("   (one objective: no Pareto front; v: the next view)", w));
    return out;
  }
  const auto& ox = s->second.objectives(0);
  const auto& oy = s->second.objectives(1);
  // The coordinator's front as the search has it now (a trial's own mark is as of when its message was made).
  const std::set<int64_t> front(s->second.pareto_front().begin(), s->second.pareto_front().end());
  auto on = [&](const v1::Trial& t) { return front.count(t.id()) != 0; };
  std::vector<const v1::Trial*> pts;
  int on_front = 0;
  for (const auto& [id, t] : m.trials) {
    if (t.search_id() != sid || t.state() != v1::TRIAL_COMPLETED || t.objectives_size() < 2) continue;
    if (!std::isfinite(t.objectives(0)) || !std::isfinite(t.objectives(1))) continue;
    pts.push_back(&t);
    on_front += on(t) ? 1 : 0;
  }
  out.push_back(Clip(" PARETO search " + std::to_string(sid) + ": " + oy.metric() + " (" + Direction(oy.direction()) +
                         ") against " + ox.metric() + " (" + Direction(ox.direction()) + "), " +
                         std::to_string(on_front) + " of " + std::to_string(pts.size()) + " on the front",
                     w));
  if (pts.empty()) {
    out.push_back(Clip("   (no completed trial yet)", w));
    return out;
  }
  const int ph = h - 3, pw = w - 12;
  if (ph < 2 || pw < 4) return out;
  double x0 = pts.front()->objectives(0), x1 = x0, y0 = pts.front()->objectives(1), y1 = y0;
  for (const v1::Trial* t : pts) {
    x0 = std::min(x0, t->objectives(0)), x1 = std::max(x1, t->objectives(0));
    y0 = std::min(y0, t->objectives(1)), y1 = std::max(y1, t->objectives(1));
  }
  if (x1 - x0 < 1e-12) x1 = x0 + 1e-12;
  if (y1 - y0 < 1e-12) y1 = y0 + 1e-12;
  std::vector<std::string> grid(static_cast<size_t>(ph), std::string(static_cast<size_t>(pw), ' '));
  auto cell = [&](const v1::Trial& t) -> char& {
    const int cx = static_cast<int>(std::lround((t.objectives(0) - x0) / (x1 - x0) * (pw - 1)));
    const int cy = static_cast<int>(std::lround((y1 - t.objectives(1)) / (y1 - y0) * (ph - 1)));
    return grid[static_cast<size_t>(std::clamp(cy, 0, ph - 1))][static_cast<size_t>(std::clamp(cx, 0, pw - 1))];
  };
  // Dominated first, infeasible over them (constraints: never on the front), then the front, then the selected trial.
  for (const v1::Trial* t : pts) {
    if (!on(*t) && !t->infeasible() && cell(*t) == ' ') cell(*t) = '.';
  }
  for (const v1::Trial* t : pts) {
    if (!on(*t) && t->infeasible()) cell(*t) = 'x';
  }
  for (const v1::Trial* t : pts) {
    if (on(*t)) cell(*t) = 'o';
  }
  for (const v1::Trial* t : pts) {
    if (t->id() == selected_trial) cell(*t) = '@';
  }
  for (int r = 0; r < ph; ++r) {
    const std::string label = r == 0 ? Num4(y1) : r == ph - 1 ? Num4(y0) : "";
    char lb[32];
    std::snprintf(lb, sizeof lb, "%10s |", label.c_str());
    out.push_back(Clip(lb + grid[static_cast<size_t>(r)], w));
  }
  std::string axis = "           " + Num4(x0);
  const std::string right = Num4(x1) + " " + ox.metric();
  axis += std::string(static_cast<size_t>(std::max(1, 12 + pw - static_cast<int>(axis.size() + right.size()))), ' ');
  out.push_back(Clip(axis + right, w));
  out.push_back(Clip(s->second.constraints_size() > 0
                         ? "           o on the front   . dominated   x infeasible   @ the selected trial"
                         : "           o on the front   . dominated   @ the selected trial",
                     w));
  return out;
}

std::vector<std::string> TimelineView(const WatchModel& m, int64_t search_id, double now, int h, int w) {
  std::vector<std::string> out;
  const int64_t sid = ViewedSearch(m, search_id, 0);
  struct Bar {
    const v1::Trial* trial;
    double start, end;
  };
  std::map<std::string, std::vector<Bar>> by_node;
  double t0 = 0, t1 = 0;
  std::vector<double> completed;
  for (const auto& [id, t] : m.trials) {
    if ((sid != 0 && t.search_id() != sid) || t.started_unix() <= 0 || t.placement_size() == 0) continue;
    const double end = t.finished_unix() > 0 ? t.finished_unix() : now;
    for (const auto& p : t.placement()) by_node[p.node_id()].push_back({&t, t.started_unix(), std::max(end, t.started_unix())});
    t0 = t0 == 0 ? t.started_unix() : std::min(t0, t.started_unix());
    t1 = std::max(t1, end);
    if (t.state() == v1::TRIAL_COMPLETED) completed.push_back(end - t.started_unix());
  }
  out.push_back(Clip(" TIMELINE search " + std::to_string(sid) + ": every trial on its nodes over wall time", w));
  if (by_node.empty()) {
    out.push_back(Clip("   (no trial has started yet)", w));
    return out;
  }
  const double median = Median(completed);
  const double straggler = std::max(2 * median, median + 1);  // the web view's rule: over both
  const int pw = w - 15, rows = h - 3;  // a row: 15 columns of label, then the bars
  if (pw < 4 || rows < 1) return out;
  const double span = std::max(t1 - t0, 1e-9);
  auto col = [&](double t) { return std::clamp(static_cast<int>((t - t0) / span * pw), 0, pw - 1); };
  for (auto& [node, bars] : by_node) {
    std::sort(bars.begin(), bars.end(), [](const Bar& a, const Bar& b) { return a.start < b.start; });
    std::vector<std::pair<double, std::string>> lanes;  // each lane's last end, and its row
    for (const Bar& b : bars) {
      size_t lane = 0;
      while (lane < lanes.size() && lanes[lane].first > b.start) ++lane;
      if (lane == lanes.size()) lanes.push_back({0, std::string(static_cast<size_t>(pw), ' ')});
      lanes[lane].first = b.end;
      std::string& row = lanes[lane].second;
      const v1::Trial& t = *b.trial;
      const bool requeued = t.attempt() > 0 || t.preemptions() > 0;
      const int c0 = col(b.start), c1 = std::max(c0, col(b.end) - (b.end < t1 ? 1 : 0));
      for (int c = c0; c <= c1; ++c) row[static_cast<size_t>(c)] = requeued && c < c1 ? '~' : StateGlyph(t.state());
      if (c1 > c0) row[static_cast<size_t>(c0)] = '[';  // where it starts: bars that touch stay apart
      if (t.state() == v1::TRIAL_COMPLETED && median > 0 && b.end - b.start > straggler) {
        row[static_cast<size_t>(c1)] = '!';
      }
    }
    for (size_t lane = 0; lane < lanes.size() && static_cast<int>(out.size()) < rows + 1; ++lane) {
      char label[32];
      std::snprintf(label, sizeof label, " %-10.10s%-2s |", lane ? "" : node.c_str(),
                    lane ? ("/" + std::to_string(lane + 1)).c_str() : "");
      out.push_back(Clip(label + lanes[lane].second, w));
    }
  }
  const std::string right = "+" + FormatDuration(t1 - t0);
  out.push_back(Clip("               " + ClockTime(t0) +
                         std::string(static_cast<size_t>(std::max(1, pw - 8 - static_cast<int>(right.size())))
                                     , ' ') + right,
                     w));
  out.push_back(Clip(" [ start  = completed  > running  F failed  x cancelled  ~ requeued  ! straggler", w));
  return out;
}

}  // namespace ladder::cli
