#include "server/http/curves_json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

#include "server/http/http_util.h"

namespace ladder::server {

namespace {

// One trial's points as JSON, thinned to `per_trial`.
void AppendCurve(std::string& body, const std::vector<std::pair<int64_t, double>>& pts, int64_t per_trial) {
  const size_t n = pts.size(), keep_n = per_trial > 0 ? std::min<size_t>(n, static_cast<size_t>(per_trial)) : n;
  char num[64];
  for (size_t k = 0; k < keep_n; ++k) {
    const size_t i = keep_n < 2 ? n - 1 : k * (n - 1) / (keep_n - 1);
    const double v = pts[i].second;  // a diverged run's NaN or inf is no JSON number: null
    if (std::isfinite(v)) {
      std::snprintf(num, sizeof num, "%s[%lld,%.6g]", k ? "," : "", static_cast<long long>(pts[i].first), v);
    } else {
      std::snprintf(num, sizeof num, "%s[%lld,null]", k ? "," : "", static_cast<long long>(pts[i].first));
    }
    body += num;
  }
}

// The steps at which a trial's resource first reached each rung: `resource` holds (step, resource value).
std::vector<int64_t> RungSteps(const std::vector<std::pair<int64_t, double>>& resource, const std::vector<double>& rungs) {
  std::vector<int64_t> out;
  size_t next = 0;
  for (const auto& [step, value] : resource) {
    while (next < rungs.size() && value >= rungs[next] - 1e-9 * std::max(1.0, std::abs(rungs[next]))) {
      out.push_back(step);
      ++next;
    }
  }
  return out;
}

}  // namespace

std::string CurvesJson(store::Db& db, int64_t search_id, const std::string& metric, int64_t per_trial,
                       const RungMarks& marks) {
  const bool by_step = marks.metric == "step";
  const bool marking = !marks.rungs.empty() && !marks.metric.empty();
  // The rung metric's values come in the same pass: one scan of the search's points.
  const std::string& second = marking && !by_step ? marks.metric : metric;
  auto& st = db.Prepare(
      "SELECT m.trial_id, m.step, m.value, m.name = ? FROM metrics m JOIN trials t ON t.id = m.trial_id "
      "WHERE t.search_id = ? AND m.name IN (?, ?) ORDER BY m.trial_id, m.step");
  st.Bind(1, metric).Bind(2, search_id).Bind(3, metric).Bind(4, second);
  std::string body = "{\"metric\": " + JsonString(metric) + ", \"trials\": {", rung_body;
  int64_t trial = -1;
  std::vector<std::pair<int64_t, double>> pts, resource;  // the current trial's
  auto flush = [&] {
    if (trial < 0) return;
    if (!pts.empty()) {
      body += (body.back() == '{' ? "\"" : ", \"") + std::to_string(trial) + "\": [";
      AppendCurve(body, pts, per_trial);
      body += "]";
    }
    if (marking) {
      if (by_step) {
        for (const auto& p : pts) resource.emplace_back(p.first, static_cast<double>(p.first));
      }
      std::vector<int64_t> steps = RungSteps(resource, marks.rungs);
      if (!steps.empty()) {
        rung_body += (rung_body.empty() ? "\"" : ", \"") + std::to_string(trial) + "\": [";
        for (size_t i = 0; i < steps.size(); ++i) rung_body += (i ? "," : "") + std::to_string(steps[i]);
        rung_body += "]";
      }
    }
    pts.clear();
    resource.clear();
  };
  while (st.Step()) {
    if (st.Int(0) != trial) {
      flush();
      trial = st.Int(0);
    }
    const std::pair<int64_t, double> p(st.Int(1), st.Real(2));
    if (st.Int(3)) pts.push_back(p);
    if (marking && !by_step && (!st.Int(3) || second == metric)) resource.push_back(p);
  }
  st.Reset();
  flush();
  body += "}";
  if (marking) body += ", \"rung_steps\": {" + rung_body + "}";
  return body + "}\n";
}

}  // namespace ladder::server
