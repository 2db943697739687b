// ladder promote's probes as trials of the search (promote_probes.h).
#include "cli/promote_probes.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <map>
#include <set>

#include "cli/format.h"

namespace ladder::cli {

ProbeTrials SplitProbes(const std::vector<v1::Trial>& trials, const std::vector<search::ScaleTrial>& scale) {
  ProbeTrials out;
  std::map<std::string, const v1::Trial*> by_id;  // "trial N", as ScaleTrialsFrom names them
  for (const auto& t : trials) by_id["trial " + std::to_string(t.number())] = &t;
  std::map<std::string, const search::ScaleTrial*> fitted;
  for (const auto& sc : scale) {
    auto it = by_id.find(sc.id);
    const bool probe = it != by_id.end() && it->second->probe();
    (probe ? out.probes : out.sweep).push_back(sc);
    fitted[sc.id] = &sc;
  }
  std::map<int64_t, size_t> run_of;  // batch -> index in runs
  std::map<int64_t, double> best_loss;
  // The probes as asked for (one AddProbe each): a run of probe trials at one batch, all created before any of them
  // finished (the next one is asked for once they have ended). Two LRs or more: a proposal; one: an extension.
  struct Asked {
    int64_t batch = 0;
    size_t lrs_at_batch = 0;  // the LRs run at its batch up to and with it
    int micro_batches = 1, size = 0;
    double first_finished = 0;
  };
  std::vector<Asked> asked;
  for (const auto& t : trials) {  // in number order (ListTrials answers in id order)
    if (!t.probe()) continue;
    auto b = t.params().find("global_batch");
    auto l = t.params().find("lr");
    if (b == t.params().end() || l == t.params().end()) continue;
    const int64_t batch = b->second.int_value();
    const double lr = l->second.float_value();
    auto [slot, fresh] = run_of.emplace(batch, out.runs.size());
    if (fresh) out.runs.push_back(ProbeRun{batch, std::max(1, t.micro_batches()), {}, {}, search::kNaN});
    ProbeRun& run = out.runs[slot->second];
    run.lrs.push_back(lr);
    run.trials.push_back(t.number());
    if (asked.empty() || asked.back().batch != batch ||
        (asked.back().first_finished > 0 && t.created_unix() >= asked.back().first_finished)) {
      asked.push_back({batch, 0, run.micro_batches, 0, 0});
    }
    Asked& a = asked.back();
    a.lrs_at_batch = run.lrs.size(), ++a.size;
    if (t.finished_unix() > 0 && (a.first_finished == 0 || t.finished_unix() < a.first_finished)) {
      a.first_finished = t.finished_unix();
    }
    auto f = fitted.find("trial " + std::to_string(t.number()));
    if (f != fitted.end() && std::isfinite(f->second->final_loss) && !f->second->diverged &&
        (!best_loss.count(batch) || f->second->final_loss < best_loss[batch])) {
      best_loss[batch] = f->second->final_loss;
      run.best_lr = lr;
    }
  }
  // The last proposal (its extensions follow it at its batch); its LRs are every LR run at its batch up to it, so
  // that the extensions NextProbe counts there are its own.
  for (auto a = asked.rbegin(); a != asked.rend(); ++a) {
    if (a->size < 2 && std::next(a) != asked.rend()) continue;
    const ProbeRun& run = out.runs[run_of.at(a->batch)];
    search::Probe p;
    p.global_batch = a->batch;
    p.micro_batches = a->micro_batches;
    p.lrs.assign(run.lrs.begin(), run.lrs.begin() + static_cast<std::ptrdiff_t>(a->lrs_at_batch));
    out.last = p;
    break;
  }
  return out;
}

namespace {

bool TrialEnded(v1::TrialState s) {
  return s == v1::TRIAL_COMPLETED || s == v1::TRIAL_FAILED || s == v1::TRIAL_CANCELLED;
}

}  // namespace

std::optional<v1::Search> WaitForTrials(Client& client, int64_t search_id, const std::set<int64_t>& trial_ids,
                                        Interrupt* interrupt, int* exit_code) {
  auto ctx = client.Context(std::chrono::milliseconds(0));
  if (interrupt) {
    std::lock_guard<std::mutex> g(interrupt->mu);
    interrupt->ctx = ctx.get();
    if (interrupt->fired) ctx->TryCancel();
  }
  v1::WatchRequest req;
  req.set_search_id(search_id);
  auto reader = client.stub().Watch(ctx.get(), req);
  v1::Event ev;
  std::set<int64_t> open = trial_ids;  // not yet seen ended (the snapshot sends every trial first)
  while (!open.empty() && reader->Read(&ev)) {
    if (ev.kind() == v1::Event::TRIAL_UPDATED && TrialEnded(ev.trial().state())) open.erase(ev.trial().id());
  }
  if (open.empty()) {
    ctx->TryCancel();
    reader->Finish();
    // The search's state once its trials' ends are in: fresh, not the last event (its counts are coalesced).
    v1::GetSearchRequest sreq;
    sreq.set_search_id(search_id);
    v1::GetSearchResponse sresp;
    if (!client.Call(&v1::Ladder::Stub::GetSearch, sreq, &sresp, "promote: probe", exit_code)) return std::nullopt;
    return sresp.search();
  }
  grpc::Status st = reader->Finish();
  if (interrupt && interrupt->fired) {
    std::cerr << "ladder: interrupted; the probe's trials keep running on the coordinator (ladder search cancel "
              << search_id << " stops them with the search)\n";
    *exit_code = 130;
  } else {
    *exit_code = ReportRpcError(client.Explained(st), "watch search " + std::to_string(search_id), client.server());
  }
  return std::nullopt;
}

bool RunProbe(Client& client, int64_t search_id, const search::Probe& probe, bool quiet, Interrupt* interrupt,
              int* exit_code) {
  v1::AddProbeRequest req;
  req.set_search_id(search_id);
  req.set_global_batch(probe.global_batch);
  req.set_micro_batches(probe.micro_batches);
  for (double lr : probe.lrs) req.add_lrs(lr);
  req.set_target_batch(probe.target_batch);
  req.set_extension(probe.extension);
  v1::AddProbeResponse resp;
  if (!client.Call(&v1::Ladder::Stub::AddProbe, req, &resp, "promote: probe", exit_code)) return false;
  if (!quiet) {
    std::string lrs, numbers;
    for (double lr : probe.lrs) lrs += (lrs.empty() ? "" : ", ") + FormatNumber(lr, 3);
    for (const auto& t : resp.trials()) numbers += (numbers.empty() ? "" : ", ") + std::to_string(t.number());
    std::cout << (probe.extension ? "probe extended" : "probe") << " at batch " << probe.global_batch << " ("
              << probe.micro_batches << " micro-batches on " << probe.nodes << " node(s)), learning rates {" << lrs
              << "}: trials " << numbers << " of search " << search_id << "; waiting for them\n"
              << std::flush;
  }
  // Only the probe's own trials are waited for: on a search still running, its other trials end when they end
  // (the plan is fitted on what has ended by then).
  std::set<int64_t> ids;
  for (const auto& t : resp.trials()) ids.insert(t.id());
  auto ended = WaitForTrials(client, search_id, ids, interrupt, exit_code);
  if (!ended) return false;
  if (!quiet) std::cout << "probe trials ended; search " << search_id << " " << StateName(ended->state()) << "\n";
  if (ended->state() == v1::SEARCH_CANCELLED) {
    std::cerr << "ladder promote: search " << search_id << " was cancelled while its probe ran\n";
    *exit_code = kFailed;
    return false;
  }
  return true;
}

}  // namespace ladder::cli
