// SearchManager: warm starts (the spec's warm_start:). When a search is created, the earlier search's completed
// trials — from this database, or read-only from another — are read against the new space (those outside it are
// skipped and counted), stored with the new search (schema 14) and told to its sampler before its first
// suggestion; after a restart they are told again from the store. They are no trials of the search: not run, not
// listed, not counted against max_trials, never its best trial.
#include <algorithm>

#include "common/log.h"
#include "search/core/point.h"
#include "search/spec/spec_reader.h"
#include "server/params_codec.h"
#include "server/search_manager.h"
#include "server/log_component.h"

namespace ladder::server {

namespace {

// Whether an earlier trial is warm-start data: one of its search's configurations that completed with a value.
bool Usable(const v1::Trial& t) {
  return t.state() == v1::TRIAL_COMPLETED && t.has_objective() && !t.workflow_step() && !t.probe();
}

}  // namespace

std::string SearchManager::GatherWarmStart(const search::SearchSpec& spec, WarmStart* out) {
  const search::WarmStartOptions& w = spec.warm_start;
  const std::string name = "search " + std::to_string(w.search_id);
  out->source = w.db.empty() ? name : name + " of " + w.db;
  v1::Search earlier;
  std::vector<v1::Trial> trials;
  if (w.db.empty()) {
    auto it = searches_.find(w.search_id);
    if (it == searches_.end()) return "warm_start: no " + name + " in this database";
    earlier = it->second.proto;
    for (int64_t tid : trials_.Of(w.search_id).ids) trials.push_back(trials_.Get(tid).proto);
  } else {
    try {
      store::Store other(w.db, store::OpenMode::kReadOnly);
      for (auto& s : other.LoadSearches()) {
        if (s.id() == w.search_id) earlier = std::move(s);
      }
      if (earlier.id() == 0) return "warm_start: no " + name + " in " + w.db;
      std::vector<int64_t> epochs;
      for (auto& t : other.LoadTrials(&epochs)) {
        if (t.search_id() == w.search_id) trials.push_back(std::move(t));
      }
    } catch (const std::exception& e) {
      return "warm_start.db: cannot read " + w.db + ": " + e.what();
    }
  }
  auto parsed = search::ParseSpec(earlier.spec_yaml(), name);
  if (!parsed.ok()) return "warm_start: " + name + "'s spec no longer parses: " + parsed.errors.front().ToString();
  if (parsed.spec->scales.enabled) return "warm_start: " + name + " is a scales: sweep, not a search of a space";
  if (std::string why = search::SpaceMismatch(parsed.spec->space, spec.space); !why.empty()) {
    return "warm_start: " + name + "'s space is not this one: " + why;
  }
  const search::Objective& o = parsed.spec->objective;
  if (o.metric != spec.objective.metric || o.maximize != spec.objective.maximize) {
    return "warm_start: " + name + " " + (o.maximize ? "maximizes " : "minimizes ") + o.metric + ", this search " +
           (spec.objective.maximize ? "maximizes " : "minimizes ") + spec.objective.metric;
  }
  std::sort(trials.begin(), trials.end(), [](const v1::Trial& a, const v1::Trial& b) { return a.number() < b.number(); });
  for (const v1::Trial& t : trials) {
    if (!Usable(t)) continue;
    search::Params params;
    for (const auto& [k, v] : t.params()) params[k] = FromProto(v);
    auto inside = search::Reread(spec.space, params);
    if (!inside) {
      ++out->skipped;
      continue;
    }
    v1::StoredPoint p;
    for (const auto& [k, v] : *inside) (*p.mutable_params())[k] = ToProto(v);
    p.set_has_objective(true);
    p.set_objective(t.objective());
    out->points.push_back(std::move(p));
  }
  return "";
}

void SearchManager::TellWarmStart(SearchRecord& s, const WarmStart& w) {
  s.proto.set_warm_start_trials(static_cast<int32_t>(w.points.size()));
  s.proto.set_warm_start_skipped(w.skipped);
  s.proto.set_warm_start_source(w.source);
  if (!s.sampler) return;
  // Numbered below every trial of the search (-n .. -1, in the earlier search's order): never asked, never a
  // trial number.
  const auto n = static_cast<int64_t>(w.points.size());
  for (int64_t i = 0; i < n; ++i) {
    const v1::StoredPoint& p = w.points[static_cast<size_t>(i)];
    search::Params params;
    for (const auto& [k, v] : p.params()) params[k] = FromProto(v);
    s.sampler->Tell(i - n, params, p.has_objective() ? std::optional<double>(p.objective()) : std::nullopt);
  }
}

void SearchManager::LoadWarmStarts() {
  for (auto& [id, w] : store_.LoadWarmStarts()) {
    auto it = searches_.find(id);
    if (it == searches_.end()) continue;
    TellWarmStart(it->second, w);
  }
}

void SearchManager::AnnounceWarmStart(const SearchRecord& s) {
  const v1::Search& p = s.proto;
  const std::string what = std::to_string(p.warm_start_trials()) + " completed trials of " + p.warm_start_source() +
                           " told to the sampler first" +
                           (p.warm_start_skipped() > 0
                                ? " (" + std::to_string(p.warm_start_skipped()) + " skipped: outside this space)"
                                : std::string());
  hub_.Record("warm_start", p.id(), 0, what);
  LogInfo(kLog, "search " + std::to_string(p.id()) + ": warm start: " + what);
}

}  // namespace ladder::server
