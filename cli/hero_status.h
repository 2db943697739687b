#pragma once
// What `ladder search show` adds for a hero run (a search with a stored plan, from `ladder promote`): the plan,
// where the run's live val_loss stands against its predicted band, and the band warnings the coordinator
// journalled (hero_outside_band, hero_inside_band). Pure: protos and the plan's JSON in, text and JSON out;
// cmd_search.cc does the RPCs.
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "ladder/v1/ladder.pb.h"

namespace ladder::cli {

namespace v1 = ::ladder::v1;

// Whether a journal entry is one of the hero band's (what a user following a hero run is warned of).
bool IsBandEntry(const v1::JournalEntry& e);

struct HeroStatus {
  nlohmann::json plan;                // as stored (PlanJson in cli/promote_plan.h)
  std::string band_error;             // the plan's band could not be read (it is then not judged)
  // The run's latest val_loss, and the band at its step (none before the band's first step, or without a band).
  std::optional<int64_t> step;
  double val_loss = 0;
  std::optional<std::pair<double, double>> band_now;
  std::vector<v1::JournalEntry> warnings;  // the band's journal entries, oldest first
};

// `trial`: the hero run's trial with its metrics (GetTrial include_metrics); nullopt when it has none yet.
HeroStatus ReadHeroStatus(const std::string& plan_json, const std::optional<v1::Trial>& trial,
                          const std::vector<v1::JournalEntry>& journal);
void PrintHeroStatus(const HeroStatus& h, std::ostream& out);
// {"plan", "live": {"step", "val_loss", "band": [lo, hi] | null, "position"} | null, "band_warnings": [...]}
nlohmann::json HeroStatusJson(const HeroStatus& h);

}  // namespace ladder::cli
