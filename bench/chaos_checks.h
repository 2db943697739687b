#pragma once
// bench/chaos: what is checked once the searches have ended — the database (read directly with SQLite) against the
// trials' own records and the acknowledgements the workers logged. See chaos_bench.cc for the definitions.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace ladder::bench::chaos {

struct Findings {
  int64_t acked_points = 0;         // points the coordinator acknowledged to a worker (see chaos_bench.cc)
  int64_t acked_points_lost = 0;    // of those, not in the metrics table
  int64_t acked_not_printed = 0;    // acknowledged points the trial's record does not hold (a broken record)
  int64_t stored_points = 0;        // rows of the metric "tag" in the database
  int64_t duplicate_points = 0;     // rows beyond the first of the same run's same point
  int64_t phantom_points = 0;       // stored points that no trial printed
  int64_t runs = 0;                 // (trial, epoch, rank) started, from the records
  int64_t duplicate_runs = 0;       // starts beyond the first of the same (trial, epoch, rank)
  int64_t overlapping_epochs = 0;   // a trial's rank 0 alive under two epochs at once (fenced: told to stop)
  int64_t trials = 0;
  int64_t trials_not_ended = 0;     // not COMPLETED/FAILED/CANCELLED, or no finished time
  int64_t trials_ended_not_once = 0;  // journal entries trial_completed|failed|cancelled != 1
  int64_t failed_without_reason = 0;
  int64_t open_runs = 0;            // allocations never released, or released without an outcome
  std::map<std::string, int64_t> trial_states;  // COMPLETED -> n, ...
  bool searches_completed = false;
  std::string search_states;        // "COMPLETED COMPLETED"
  bool integrity_ok = false;
  std::string integrity;            // PRAGMA integrity_check's first row
  std::vector<std::string> examples;  // the first few problems, in words
};

// (trial id, assignment epoch) -> the highest durable_seq acknowledged, from the workers' LADDER_LOG=debug lines
// "ack trial T epoch E durable_seq S exit_durable B" in `worker_logs`.
std::map<std::pair<int64_t, int64_t>, int64_t> ReadAcks(const std::vector<std::string>& worker_logs);

// Reads `db` (read-only) and the records in `record_dir`; `acks` from ReadAcks. Throws on an unreadable database.
Findings Check(const std::string& db, const std::string& record_dir,
               const std::map<std::pair<int64_t, int64_t>, int64_t>& acks);

}  // namespace ladder::bench::chaos
