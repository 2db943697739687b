#pragma once
// WatchModel: what `ladder watch` knows of the coordinator, rebuilt from the Watch stream's events — searches,
// trials, nodes, each trial's objective curve, the journal's latest entries — and the one-line rendering of an
// event (--plain). Pure: no I/O, so the TUI, --plain and the tests share it.
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ladder/v1/ladder.pb.h"

namespace ladder::cli {

namespace v1 = ::ladder::v1;

struct WatchModel {
  static constexpr size_t kMaxJournal = 500;       // entries kept for the event log
  static constexpr size_t kMaxCurvePoints = 4000;  // per trial; older points are thinned out

  std::map<int64_t, v1::Search> searches;
  std::map<int64_t, v1::Trial> trials;
  std::map<int64_t, double> sent_unix;  // when the coordinator made each trial's latest copy (its node_seconds' time)
  std::map<std::string, v1::WorkerInfo> workers;
  // Per trial: (step, objective) of its current run, from TRIAL_METRICS (or a GetTrial fetch).
  std::map<int64_t, std::vector<std::pair<int64_t, double>>> curves;
  std::deque<v1::JournalEntry> journal;
  int64_t last_journal_seq = 0;  // where a reconnect resumes

  // Applies one event; returns false for one that changes nothing the views show.
  bool Apply(const v1::Event& ev);
  // The curve of a trial from its stored points (GetTrial with include_metrics).
  void SetCurve(const v1::Trial& with_metrics);
  // The objective metric of the trial's search ("" when the search is unknown).
  std::string ObjectiveOf(int64_t trial_id) const;
  // The trials running on a node now.
  std::vector<int64_t> TrialsOn(const std::string& node) const;
};

// One line for an event, as --plain prints it ("" for an event that is not worth a line: a snapshot's unchanged
// search). `before` is the model before the event was applied.
std::string PlainLine(const WatchModel& before, const v1::Event& ev);

// "12:04:31" for a Unix time (local time).
std::string ClockTime(double unix_time);

}  // namespace ladder::cli
