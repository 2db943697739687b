// SearchManager: known points first. The spec's `enqueue:` points are a search's first trials (by number: trial i
// is point i), and `ladder search enqueue` adds points to a running search (v1::EnqueueTrialRequest), stored until
// the batch that creates their trial; either kind runs before the next sampled trial, counts against max_trials,
// and is told to the sampler like any trial without being asked of it.
#include <algorithm>

#include "common/log.h"
#include "common/wall_clock.h"
#include "search/core/point.h"
#include "server/params_codec.h"
#include "server/search_manager.h"
#include "server/log_component.h"

namespace ladder::server {

namespace {

constexpr int kMaxParamsPerPoint = 10000;

}  // namespace

int SearchManager::KnownPointsLeft(const SearchRecord& s, int sampled) {
  const int spec_left = std::max(0, static_cast<int>(s.spec.enqueue.size()) - sampled);
  return spec_left + static_cast<int>(s.queue.size());
}

std::optional<search::Params> SearchManager::NextKnownPoint(SearchRecord& s, int sampled) {
  if (sampled < static_cast<int>(s.spec.enqueue.size())) return s.spec.enqueue[static_cast<size_t>(sampled)];
  if (s.queue.empty()) return std::nullopt;
  SearchRecord::Queued q = std::move(s.queue.front());
  s.queue.pop_front();
  store_.DeleteEnqueued(q.id);  // in the batch that creates its trial
  return std::move(q.params);
}

void SearchManager::LoadQueues() {
  for (auto& row : store_.LoadEnqueued()) {
    auto it = searches_.find(row.search_id);
    if (it == searches_.end() || it->second.proto.state() != v1::SEARCH_RUNNING) continue;
    search::Params params;
    for (const auto& [name, value] : row.point.params()) params[name] = FromProto(value);
    if (params.empty()) {
      LogWarning(kLog, "search " + std::to_string(row.search_id) + ": enqueued point " + std::to_string(row.id) +
                           " does not decode; skipped");
      continue;
    }
    it->second.queue.push_back({row.id, std::move(params)});
  }
}

grpc::Status SearchManager::Enqueue(const v1::EnqueueTrialRequest& req, v1::EnqueueTrialResponse* out) {
  auto it = searches_.find(req.search_id());
  if (it == searches_.end()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "no search with id " + std::to_string(req.search_id()));
  }
  SearchRecord& s = it->second;
  const std::string name = "search " + std::to_string(s.proto.id());
  if (s.proto.state() != v1::SEARCH_RUNNING) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        name + " has ended (" + v1::SearchState_Name(s.proto.state()) + "): it runs no more trials");
  }
  if (s.spec.scales.enabled || s.spec.sampler == "grid") {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        name + ": its " + (s.spec.scales.enabled ? "scales: sweep" : "grid sampler") +
                            " visits its own points; enqueue needs another sampler");
  }
  if (req.params_size() > kMaxParamsPerPoint) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, name + ": too many parameters");
  }
  std::vector<std::pair<std::string, std::string>> values(req.params().begin(), req.params().end());
  std::sort(values.begin(), values.end());  // a proto map has no order: name order, so errors read the same
  search::PointResult point = search::ParsePoint(s.spec.space, values);
  if (!point.ok()) {
    std::string msg;
    for (const auto& e : point.errors) msg += (msg.empty() ? "" : "\n") + name + ": " + e.param + ": " + e.message;
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, msg);
  }
  const int sampled = s.next_number - static_cast<int>(s.probe_numbers.size());
  const int left = s.proto.max_trials() - sampled - KnownPointsLeft(s, sampled);
  if (left <= 0) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        name + ": no trial of its budget is left to run the point (max_trials " +
                            std::to_string(s.proto.max_trials()) + ": " + std::to_string(sampled) + " created, " +
                            std::to_string(KnownPointsLeft(s, sampled)) + " enqueued before it)");
  }
  v1::StoredPoint stored;
  for (const auto& [k, v] : point.params) (*stored.mutable_params())[k] = ToProto(v);
  const int64_t point_id = store_.InsertEnqueued(s.proto.id(), stored, WallNow());
  s.queue.push_back({point_id, point.params});
  const int position = KnownPointsLeft(s, sampled);
  const std::string what = "point enqueued (" + std::to_string(position) +
                           (position == 1 ? " runs next" : " in the queue") +
                           "): " + search::FormatPoint(s.spec.space, point.params);
  hub_.Record("point_enqueued", s.proto.id(), 0, what);
  LogInfo(kLog, name + ": " + what);
  s.exhausted = false;   // a sampler with no more points still runs the point
  outbox_.Commit();      // durable before the caller hears of it
  Publish(s);
  *out->mutable_search() = s.proto;
  out->set_position(position);
  request_schedule_();
  return grpc::Status::OK;
}

}  // namespace ladder::server
