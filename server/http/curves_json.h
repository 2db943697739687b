#pragma once
// Every trial's points of one metric in a search, as the dashboard draws them:
// {"metric": NAME, "trials": {"ID": [[step, value], ...], ...}} — per trial at most `per_trial` points (0: all),
// evenly spaced with the first and the last kept; a NaN or infinite value is null.
#include <cstdint>
#include <string>

#include "server/store/sqlite_db.h"

namespace ladder::server {

// Reads through `db` (the HTTP side's own read-only connection). Throws SqliteError.
std::string CurvesJson(store::Db& db, int64_t search_id, const std::string& metric, int64_t per_trial);

}  // namespace ladder::server
