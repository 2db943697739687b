#pragma once
// The dashboard's JSON API: which coordinator call each path makes (the routes are listed atop http_server.h).
// A call runs on the coordinator's loop and fills a protobuf message, which the HTTP thread then writes as JSON;
// /curves is read on the HTTP thread itself, through its own read-only connection (curves_json.h).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <google/protobuf/message.h>
#include <grpcpp/support/status.h>

#include "server/http/curves_json.h"

namespace ladder::server {

class Coordinator;

struct ApiRoute {
  enum Kind { kNotFound, kBadRequest, kCall, kCurves } kind = kNotFound;
  std::string error;  // kNotFound, kBadRequest: what to answer
  // kCall: makes the answer's message, and fills it (on the coordinator's loop).
  std::function<std::unique_ptr<google::protobuf::Message>()> make;
  std::function<grpc::Status(Coordinator&, google::protobuf::Message*)> run;
  // kCurves: what CurvesJson reads.
  int64_t search_id = 0;
  std::string metric;
  int64_t per_trial = 0;
  RungMarks marks;
};

// GET /api/... (path without the query; `query` after '?'), and POST /api/....
ApiRoute GetRoute(const std::string& path, std::string_view query);
ApiRoute PostRoute(const std::string& path);

}  // namespace ladder::server
