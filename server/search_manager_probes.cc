// SearchManager: the climb's probes (v1::AddProbeRequest) — trials of a `scales:` search at a larger global batch,
// marked as probes, outside the sampler, the stopping rule, max_trials and the failure budget.
#include <cmath>
#include <cstdio>
#include <iterator>

#include "common/log.h"
#include "search/core/scales.h"
#include "server/search_manager.h"
#include "server/log_component.h"

namespace ladder::server {

namespace {

constexpr int kMaxProbeLrs = 16;
constexpr int kMaxMicroBatches = 1 << 16;

std::string Lr(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// Why the request itself is refused ("" when it is well formed).
std::string ProbeRequestError(const v1::AddProbeRequest& req) {
  if (req.global_batch() <= 0) return "global_batch must be positive";
  if (req.micro_batches() < 0 || req.micro_batches() > kMaxMicroBatches) {
    return "micro_batches " + std::to_string(req.micro_batches()) + " is out of range (0 or 1 for none, at most " +
           std::to_string(kMaxMicroBatches) + ")";
  }
  if (req.lrs().empty()) return "a probe needs at least one learning rate (lrs)";
  if (req.lrs_size() > kMaxProbeLrs) {
    return std::to_string(req.lrs_size()) + " learning rates: a probe has at most " + std::to_string(kMaxProbeLrs);
  }
  for (double lr : req.lrs()) {
    if (!(lr > 0) || !std::isfinite(lr)) return "learning rate " + Lr(lr) + " is not a positive number";
  }
  return "";
}

}  // namespace

int SearchManager::SamplerNumber(const SearchRecord& s, int number) {
  return number - static_cast<int>(std::distance(s.probe_numbers.begin(), s.probe_numbers.lower_bound(number)));
}

int SearchManager::BudgetFailures(const SearchRecord& s) const {
  int failed = trials_.Of(s.proto.id()).failed;
  for (int number : s.probe_numbers) {
    const TrialRecord* t = trials_.ByNumber(s.proto.id(), number);
    if (t && t->proto.state() == v1::TRIAL_FAILED) --failed;
  }
  return failed;
}

grpc::Status SearchManager::AddProbe(const v1::AddProbeRequest& req, v1::AddProbeResponse* out) {
  auto it = searches_.find(req.search_id());
  if (it == searches_.end()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "no search with id " + std::to_string(req.search_id()));
  }
  SearchRecord& s = it->second;
  const std::string name = "search " + std::to_string(s.proto.id());
  if (!s.spec.scales.enabled) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        name + ": probes need a scales: search (its trials are the sweep the probe extends)");
  }
  if (s.proto.state() == v1::SEARCH_CANCELLED) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        name + " was cancelled: a cancelled search takes no probes (start the sweep again)");
  }
  if (std::string err = ProbeRequestError(req); !err.empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "probe for " + name + ": " + err);
  }
  if (s.proto.state() != v1::SEARCH_RUNNING) {
    s.reopened = SearchRecord::Ended{s.proto.state(), s.proto.error()};
    store_.SetSearchReopened(s.proto.id(), {s.proto.state(), s.proto.error()});  // committed with the state
    s.proto.set_finished_unix(0);
    SetState(s, v1::SEARCH_RUNNING, "");
  }
  const int micro = std::max(1, req.micro_batches());
  std::string lrs;
  for (double lr : req.lrs()) {
    search::Params params = {{search::kScalesBatchParam, static_cast<int64_t>(req.global_batch())},
                             {search::kScalesLrParam, lr}};
    s.probe_numbers.insert(s.next_number);
    const TrialRecord& t = trials_.Create(s.proto.id(), s.next_number++, std::move(params), false, micro);
    trials_.Submit(t.proto.id());
    hub_.Trial(t.proto);
    *out->add_trials() = t.proto;
    lrs += (lrs.empty() ? "" : ", ") + Lr(lr);
  }
  const std::string what = std::string(req.extension() ? "probe extended" : "probe") + " at global batch " +
                           std::to_string(req.global_batch()) + " (" + std::to_string(micro) +
                           " micro-batches), learning rates {" + lrs + "}" +
                           (req.target_batch() > 0 ? ", for batch " + std::to_string(req.target_batch()) : "");
  hub_.Record("probe_added", s.proto.id(), 0, what);
  LogInfo(kLog, name + ": " + what);
  outbox_.Commit();  // the probe's trials are durable before the caller hears of them
  Publish(s);
  *out->mutable_search() = s.proto;
  request_schedule_();
  return grpc::Status::OK;
}

}  // namespace ladder::server
