#pragma once
// ladder promote's probes: the climb's probes (search/scaling/climb.h) run as trials of the search itself.
//   SplitProbes  a search's scale records split into its sweep and its probes (v1::Trial.probe), the last probe as
//                the climb's step needs it (NextProbe's last_probe), and the probes run, by batch, for the plan
//                JSON ("extrapolation.probes")
//   RunProbe     AddProbe for one probe (one trial per LR, {micro_batches} in their command), then waits for the
//                probe's own trials to end (WaitForTrials; a search still running goes on running its others)
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli/client.h"
#include "cli/extrapolation_json.h"
#include "cli/search_progress.h"
#include "search/scaling/climb.h"

namespace ladder::cli {

struct ProbeTrials {
  std::vector<search::ScaleTrial> sweep, probes;
  // The last probe the climb proposed (its trials asked for in one AddProbe: created before any of them finished;
  // two LRs or more, where an extension has one), with every LR run at its batch up to it; the LRs after it there
  // are its extensions. nullopt: no probe yet.
  std::optional<search::Probe> last;
  std::vector<ProbeRun> runs;  // one per probe batch, in the order first run
};

// `scale` comes from ScaleTrialsFrom(trials) (ids "trial N"); a probe trial without a scale record (it failed
// other than by diverging, or still runs) is listed in `runs` but not fitted. `trials` in number order.
ProbeTrials SplitProbes(const std::vector<v1::Trial>& trials, const std::vector<search::ScaleTrial>& scale);

// Watches the search until every trial of `trial_ids` has ended (completed, failed or cancelled), then returns the
// search as it is then; nullopt (the reason said, *exit_code set) when the watch broke or was interrupted.
std::optional<v1::Search> WaitForTrials(Client& client, int64_t search_id, const std::set<int64_t>& trial_ids,
                                        Interrupt* interrupt, int* exit_code);

// Runs `probe` as trials of the search and waits until those trials have ended, saying so on stdout (nothing
// with `quiet`). False (the reason said, *exit_code set) when the probe was refused,
// the wait broke or was interrupted.
bool RunProbe(Client& client, int64_t search_id, const search::Probe& probe, bool quiet, Interrupt* interrupt,
              int* exit_code);

}  // namespace ladder::cli
