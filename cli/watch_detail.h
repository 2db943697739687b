#pragma once
// The trial detail of `ladder watch` (enter on a trial) as plain lines: what it is, where it runs, what it cost,
// its runs with their outcomes, its journal and the end of rank 0's stderr. Pure, so tests read it directly.
#include <string>
#include <vector>

#include "ladder/v1/ladder.pb.h"

namespace ladder::cli {

namespace v1 = ::ladder::v1;

// `t` as GetTrial answers it (runs, journal and log tail filled; without them those sections say so); `search`
// may be null. `now`: for a running trial's elapsed time and node-hours.
std::vector<std::string> TrialDetailLines(const v1::Trial& t, const v1::Search* search, double now);

// Node-hours for a person: "0.00", "12.34", "1234" (two decimals below 100).
std::string FormatNodeHours(double node_seconds);

// "rung 2" (asha, hyperband), "gen 3" (pbt), "-" (none yet, or no stopping rule).
std::string RungLabel(const v1::Trial& t, const v1::Search* search);

// The trial's node-seconds at `now`: what the coordinator counted when it sent `t` at `sent_unix`, and for a
// running trial its nodes since then.
double NodeSecondsAt(const v1::Trial& t, double sent_unix, double now);

}  // namespace ladder::cli
