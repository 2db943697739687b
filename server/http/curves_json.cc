#include "server/http/curves_json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

#include "server/http/http_util.h"

namespace ladder::server {

std::string CurvesJson(store::Db& db, int64_t search_id, const std::string& metric, int64_t per_trial) {
  std::string body = "{\"metric\": " + JsonString(metric) + ", \"trials\": {";
  auto& st = db.Prepare(
      "SELECT m.trial_id, m.step, m.value FROM metrics m JOIN trials t ON t.id = m.trial_id "
      "WHERE t.search_id = ? AND m.name = ? ORDER BY m.trial_id, m.step");
  st.Bind(1, search_id).Bind(2, metric);
  int64_t trial = -1;
  std::vector<std::pair<int64_t, double>> pts;  // the current trial's
  auto flush = [&] {
    if (trial < 0) return;
    body += (body.back() == '{' ? "\"" : ", \"") + std::to_string(trial) + "\": [";
    const size_t n = pts.size(), keep_n = per_trial > 0 ? std::min<size_t>(n, per_trial) : n;
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
    body += "]";
    pts.clear();
  };
  while (st.Step()) {
    if (st.Int(0) != trial) {
      flush();
      trial = st.Int(0);
    }
    pts.emplace_back(st.Int(1), st.Real(2));
  }
  st.Reset();
  flush();
  return body + "}}\n";
}

}  // namespace ladder::server
