// A trial's stored metric points for a reader (GetTrial), bounded: a run that reported every step of a million
// steps has millions of rows, which the coordinator's loop must not read (nor gRPC carry: 4 MB per message).
#include <algorithm>

#include "server/store/store.h"

namespace ladder::store {

namespace {

// The smallest 1, 2 or 5 x 10^k at least `min`: the steps users log at (every 10, 100, 1,000 steps) are multiples of
// such a stride more often than of an arbitrary one, so thinned curves keep their evaluation points.
int64_t RoundStride(int64_t min) {
  for (int64_t decade = 1;; decade *= 10) {
    for (int64_t m : {1, 2, 5}) {
      if (m * decade >= min) return m * decade;
    }
  }
}

// Appends the row (step, name, value, time) to `out`, starting a new point when step or time changes.
void AddRow(std::vector<v1::MetricPoint>* out, int64_t step, double time, const std::string& name, double value) {
  if (out->empty() || out->back().step() != step || out->back().time_unix() != time) {
    out->emplace_back();
    out->back().set_step(step);
    out->back().set_time_unix(time);
  }
  (*out->back().mutable_values())[name] = value;
}

}  // namespace

Store::MetricsView Store::LoadMetricsView(int64_t trial_id, int64_t max_points, int64_t max_rows) {
  MetricsView view;
  // MIN and MAX in separate statements: each is one seek in metrics_by_trial (together SQLite scans the range).
  auto& lo = db_.Prepare("SELECT MIN(step) FROM metrics WHERE trial_id=?");
  lo.Bind(1, trial_id);
  const bool any = lo.Step() && !lo.IsNull(0);
  const int64_t first = any ? lo.Int(0) : 0;
  lo.Reset();
  if (!any) return view;
  auto& hi = db_.Prepare("SELECT MAX(step) FROM metrics WHERE trial_id=?");
  hi.Bind(1, trial_id);
  hi.Step();
  const int64_t last = hi.Int(0);
  hi.Reset();
  auto& at = db_.Prepare("SELECT step,name,value,time FROM metrics WHERE trial_id=? AND step=? ORDER BY rowid");
  auto read_step = [&](int64_t step, std::vector<v1::MetricPoint>* out) {
    int64_t rows = 0;
    at.Bind(1, trial_id).Bind(2, step);
    while (at.Step()) {
      AddRow(out, at.Int(0), at.Real(3), at.Text(1), at.Real(2));
      ++rows;
    }
    at.Reset();
    return rows;
  };
  // Values per step, from the last one (every value a run reports is usually on each of its lines): the point
  // budget shrinks so that the answer stays within max_rows rows.
  std::vector<v1::MetricPoint> tail;
  const int64_t per_step = std::max<int64_t>(1, read_step(last, &tail));
  const int64_t budget = std::max<int64_t>(2, std::min(max_points, max_rows / per_step));
  const int64_t span = last - first + 1;
  if (span > 0 && span <= budget) {  // every point, in the order they were stored (a resumed run repeats steps)
    auto& all = db_.Prepare("SELECT step,name,value,time FROM metrics WHERE trial_id=? ORDER BY rowid");
    all.Bind(1, trial_id);
    while (all.Step()) AddRow(&view.points, all.Int(0), all.Real(3), all.Text(1), all.Real(2));
    all.Reset();
    return view;
  }
  // Too many: the steps that are multiples of a round stride, one seek each, and the last step.
  view.step_stride = RoundStride((span + budget - 2) / (budget - 1));
  for (int64_t s = (first >= 0 ? (first + view.step_stride - 1) / view.step_stride : first / view.step_stride) *
                   view.step_stride;
       s < last; s += view.step_stride) {
    read_step(s, &view.points);
  }
  for (auto& p : tail) view.points.push_back(std::move(p));
  return view;
}

}  // namespace ladder::store
