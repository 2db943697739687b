#pragma once
// Every trial's points of one metric in a search, as the dashboard draws them:
// {"metric": NAME, "trials": {"ID": [[step, value], ...], ...}} — per trial at most `per_trial` points (0: all),
// evenly spaced with the first and the last kept; a NaN or infinite value is null. With rung marks (a trial
// scheduler's rungs in units of `rung_metric`, a metric or "step"), also "rung_steps": {"ID": [step, ...]}: the
// step at which the trial first reported at or past each rung it reached (the points it was judged at).
#include <cstdint>
#include <string>
#include <vector>

#include "server/store/sqlite_db.h"

namespace ladder::server {

struct RungMarks {
  std::string metric;          // the rungs' unit: a metric name, or "step"
  std::vector<double> rungs;   // ascending
};

// Reads through `db` (the HTTP side's own read-only connection). Throws SqliteError.
std::string CurvesJson(store::Db& db, int64_t search_id, const std::string& metric, int64_t per_trial,
                       const RungMarks& marks = {});

}  // namespace ladder::server
