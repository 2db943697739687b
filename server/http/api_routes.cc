#include "server/http/api_routes.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <vector>

#include "server/coordinator.h"
#include "server/http/http_util.h"

namespace ladder::server {

namespace {

template <class Resp>
ApiRoute Call(std::function<grpc::Status(Coordinator&, Resp*)> fn) {
  ApiRoute r;
  r.kind = ApiRoute::kCall;
  r.make = [] { return std::make_unique<Resp>(); };
  r.run = [fn = std::move(fn)](Coordinator& c, google::protobuf::Message* m) { return fn(c, static_cast<Resp*>(m)); };
  return r;
}

ApiRoute NotFound(const std::string& path) {
  ApiRoute r;
  r.error = "no such API path: " + path;
  return r;
}

ApiRoute ListTrials(int64_t search_id, std::string_view query) {
  v1::ListTrialsRequest req;
  req.set_search_id(search_id);
  // ?page_size=N&page_token=T as ListTrials (the answer's next_page_token: the next page's page_token).
  req.set_page_size(static_cast<int32_t>(std::min<int64_t>(Id(Param(query, "page_size").value_or("")).value_or(0),
                                                           std::numeric_limits<int32_t>::max())));
  req.set_page_token(Id(Param(query, "page_token").value_or("")).value_or(0));
  // ?view=table: what a table of thousands of trials shows (no command, checkpoint, last point, group); each
  // placement keeps its node and slots (the timeline's rows), not its hostname or GPUs.
  const bool table = Param(query, "view").value_or("") == "table";
  return Call<v1::ListTrialsResponse>([req, table](Coordinator& c, v1::ListTrialsResponse* r) {
    grpc::Status st = c.ListTrials(req, r);
    if (table) {
      for (auto& t : *r->mutable_trials()) {
        t.clear_command(), t.clear_checkpoint_dir(), t.clear_last_metrics(), t.clear_last_ignored_line();
        t.clear_group(), t.clear_created_unix();
        for (auto& p : *t.mutable_placement()) p.clear_hostname(), p.clear_gpus();
      }
    }
    return st;
  });
}

ApiRoute Curves(int64_t search_id, std::string_view query) {
  ApiRoute r;
  r.marks.metric = Param(query, "rung_metric").value_or("");
  if (!ParseRungs(Param(query, "rungs").value_or(""), &r.marks.rungs)) {
    r.kind = ApiRoute::kBadRequest;
    r.error = "curves: ?rungs= must be at most 64 ascending numbers with commas";
    return r;
  }
  r.metric = Param(query, "metric").value_or("");
  if (r.metric.empty()) {
    r.kind = ApiRoute::kBadRequest;
    r.error = "curves: ?metric=NAME is required";
    return r;
  }
  r.kind = ApiRoute::kCurves;
  r.search_id = search_id;
  r.per_trial = Id(Param(query, "per_trial").value_or("")).value_or(0);
  return r;
}

}  // namespace

ApiRoute GetRoute(const std::string& path, std::string_view query) {
  // /api/NAME[/ID[/SUB]]
  std::vector<std::string> parts;
  for (size_t pos = 5; pos <= path.size();) {
    size_t slash = path.find('/', pos);
    parts.push_back(path.substr(pos, slash == std::string::npos ? std::string::npos : slash - pos));
    if (slash == std::string::npos) break;
    pos = slash + 1;
  }
  const auto id = parts.size() >= 2 ? Id(parts[1]) : std::nullopt;
  if (parts.size() == 1 && parts[0] == "server") {
    return Call<v1::ServerInfoResponse>(
        [](Coordinator& c, v1::ServerInfoResponse* r) { return c.ServerInfo(v1::ServerInfoRequest(), r); });
  }
  if (parts.size() == 1 && parts[0] == "searches") {
    return Call<v1::ListSearchesResponse>(
        [](Coordinator& c, v1::ListSearchesResponse* r) { return c.ListSearches(v1::ListSearchesRequest(), r); });
  }
  if (parts.size() == 2 && parts[0] == "searches" && id) {
    v1::GetSearchRequest req;
    req.set_search_id(*id);
    return Call<v1::GetSearchResponse>([req](Coordinator& c, v1::GetSearchResponse* r) {
      grpc::Status st = c.GetSearch(req, r);
      r->mutable_search()->clear_spec_yaml();  // a spec's env may carry credentials
      return st;
    });
  }
  if (parts.size() == 3 && parts[0] == "searches" && id && parts[2] == "trials") return ListTrials(*id, query);
  if (parts.size() == 3 && parts[0] == "searches" && id && parts[2] == "curves") return Curves(*id, query);
  if (parts.size() == 2 && parts[0] == "trials" && id) {
    v1::GetTrialRequest req;
    req.set_trial_id(*id);
    req.set_include_metrics(Param(query, "metrics").value_or("0") == "1");
    req.set_max_metric_points(Id(Param(query, "max_points").value_or("")).value_or(0));  // GetTrial checks it
    return Call<v1::GetTrialResponse>([req](Coordinator& c, v1::GetTrialResponse* r) { return c.GetTrial(req, r); });
  }
  return NotFound(path);
}

ApiRoute PostRoute(const std::string& path) {
  const std::string prefix = "/api/searches/", suffix = "/cancel";
  if (path.size() > prefix.size() + suffix.size() && path.rfind(prefix, 0) == 0 &&
      path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0) {
    if (auto id = Id(path.substr(prefix.size(), path.size() - prefix.size() - suffix.size()))) {
      v1::CancelSearchRequest req;
      req.set_search_id(*id);
      return Call<v1::CancelSearchResponse>([req](Coordinator& c, v1::CancelSearchResponse* r) {
        grpc::Status st = c.CancelSearch(req, r);
        r->mutable_search()->clear_spec_yaml();
        return st;
      });
    }
  }
  return NotFound(path);
}

}  // namespace ladder::server
