#pragma once
// Two views of `ladder watch`'s middle panel besides the selected trial's curve (the key v cycles them), the
// terminal's counterparts of the web dashboard's Pareto and timeline cards:
//   Pareto    a search with several objectives: every completed trial at its first two objectives' values,
//             'o' on the coordinator's Pareto front (Search.pareto_front, as the search has it now), '.' dominated,
//             'x' infeasible (it broke a constraint: never on the front), '@' the selected trial
//   timeline  every trial of the search as a bar on each node it ran on over wall time, one row per node and lane
//             (trials that overlap on a node take lanes of their own), '[' where each bar starts, then a glyph
//             per state; a requeued trial's bar
//             is drawn with '~' (it lost a node or was preempted) and a straggler ends in '!' (a completed trial
//             that took over twice the median completed trial's time, and 1 s more: the web view's rule)
// Pure text (no ncurses): the TUI puts the lines, the tests read them. `h` and `w` are the panel's size; the
// lines are at most `w` wide and at most `h` of them.
#include <cstdint>
#include <string>
#include <vector>

#include "cli/watch_model.h"

namespace ladder::cli {

// The search the views draw: `search_id`, or the selected trial's search, or the newest search (0: none).
int64_t ViewedSearch(const WatchModel& m, int64_t search_id, int64_t selected_trial);

std::vector<std::string> ParetoView(const WatchModel& m, int64_t search_id, int64_t selected_trial, int h, int w);
std::vector<std::string> TimelineView(const WatchModel& m, int64_t search_id, double now, int h, int w);

}  // namespace ladder::cli
