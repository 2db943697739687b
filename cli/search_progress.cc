#include "cli/search_progress.h"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <algorithm>
#include <map>

#include "cli/format.h"
#include "cli/hero_status.h"
#include "common/wall_clock.h"

namespace ladder::cli {

void Interrupt::Fire() {
  fired = true;
  std::lock_guard<std::mutex> g(mu);
  if (ctx) ctx->TryCancel();
}

namespace {
bool Terminal(v1::SearchState s) { return s != v1::SEARCH_RUNNING && s != v1::SEARCH_STATE_UNSPECIFIED; }

// A trial's end as `search start --wait` shows it: its objective or error, the search's count, the best so far
// and the time left at the pace since the watch began.
void PrintTrialEnd(const v1::Search& s, const v1::Trial& t, int finished_at_start, double elapsed,
                   std::optional<double>* best) {
  if (t.state() == v1::TRIAL_COMPLETED && t.has_objective()) {
    bool better = !*best || (s.direction() == v1::MAXIMIZE ? t.objective() > **best : t.objective() < **best);
    if (better) *best = t.objective();
  }
  int done = std::min(s.max_trials(), s.completed() + s.failed() + s.cancelled() + 1);
  // The search counts arrive just after this event; count this trial if not yet included.
  int done_here = std::max(1, done - std::max(0, finished_at_start));
  double eta = elapsed / done_here * std::max(0, s.max_trials() - done);
  std::string what = t.state() == v1::TRIAL_COMPLETED
                         ? s.objective_metric() + "=" + std::to_string(t.objective()).substr(0, 6)
                         : "FAILED: " + t.error().substr(0, 100);
  std::printf("  trial %-3d %-9s %s   [%d/%d done, best %s, ETA %s]\n", t.number(), StateName(t.state()).c_str(),
              what.c_str(), done, s.max_trials(), *best ? std::to_string(**best).substr(0, 6).c_str() : "-",
              FormatDuration(eta).c_str());
}

}  // namespace

std::optional<v1::Search> FollowSearch(Client& client, int64_t search_id, bool quiet, Interrupt* interrupt,
                                       int* exit_code) {
  auto ctx = client.Context(std::chrono::milliseconds(0));
  if (interrupt) {
    std::lock_guard<std::mutex> g(interrupt->mu);
    interrupt->ctx = ctx.get();
    if (interrupt->fired) ctx->TryCancel();  // Ctrl-C came before the watch began (during CreateSearch)
  }
  v1::WatchRequest req;
  req.set_search_id(search_id);
  auto reader = client.stub().Watch(ctx.get(), req);
  v1::Event ev;
  std::optional<v1::Search> search;
  std::map<int64_t, v1::TrialState> seen;  // trial id → last printed state
  const double t0 = WallNow();
  std::optional<double> best;  // best objective seen in trial events (search counts lag one event behind)
  int finished_at_start = -1;
  while (reader->Read(&ev)) {
    if (ev.kind() == v1::Event::SEARCH_UPDATED && ev.search().id() == search_id) {
      search = ev.search();
      if (finished_at_start < 0) finished_at_start = search->completed() + search->failed() + search->cancelled();
      if (Terminal(search->state())) break;
    } else if (ev.kind() == v1::Event::JOURNAL && !quiet && IsBandEntry(ev.journal())) {
      // A hero run leaving its predicted band (or coming back): the user following it is told, not only the log.
      const auto& j = ev.journal();
      std::printf("  %s the hero run's %s\n", j.kind() == "hero_outside_band" ? "WARNING:" : "note:",
                  j.detail().c_str());
      std::fflush(stdout);
    } else if (ev.kind() == v1::Event::TRIAL_UPDATED && search) {
      const auto& t = ev.trial();
      auto prev = seen.find(t.id());
      bool changed = prev == seen.end() || prev->second != t.state();
      seen[t.id()] = t.state();
      if (quiet || !changed) continue;
      if (t.state() == v1::TRIAL_RUNNING) {
        std::printf("  trial %-3d started   %s\n", t.number(), FormatParams(t).c_str());
      } else if (t.state() == v1::TRIAL_COMPLETED || t.state() == v1::TRIAL_FAILED) {
        PrintTrialEnd(*search, t, finished_at_start, WallNow() - t0, &best);
      }
      std::fflush(stdout);
    }
  }
  if (search && Terminal(search->state())) {
    ctx->TryCancel();
    reader->Finish();
  } else {
    grpc::Status st = reader->Finish();
    if (interrupt && interrupt->fired) {
      if (interrupt->note.empty()) {
        std::cerr << "ladder: interrupted; the search keeps running on the coordinator (ladder search cancel "
                  << search_id << " stops it)\n";
      } else {
        std::cerr << "ladder: interrupted; " << interrupt->note << "\n";
      }
      *exit_code = 130;
      search.reset();
    } else if (!st.ok()) {
      *exit_code = ReportRpcError(client.Explained(st), "watch search " + std::to_string(search_id), client.server());
      search.reset();
    }
  }
  if (interrupt) {
    std::lock_guard<std::mutex> g(interrupt->mu);
    interrupt->ctx = nullptr;
  }
  return search;
}

}  // namespace ladder::cli
