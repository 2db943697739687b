#pragma once
// The full-screen view of `ladder watch` (ncurses): searches, the trial table, the selected trial's learning
// curve, the node map by rack, the journal. Keys: arrows select, s sort, f filter, v the middle panel (the curve,
// the Pareto front, the timeline: cli/watch_views.h), enter detail, c cancel (asks), ? help, q quit.
//
// Threads: the Watch stream is read on a thread of its own (WatchStream) into the model; this thread only draws
// (at most 10 times a second, and only when something changed) and reads keys, so a slow terminal never holds
// the stream back, and the stream never waits for the terminal.
#include <cstdint>

#include "cli/client.h"

namespace ladder::cli {

// Runs until q (exit 0), or until the stream fails for good (its exit code).
int RunWatchTui(const GlobalOptions& g, int64_t search_id);

}  // namespace ladder::cli
