// libFuzzer: the dashboard's HTTP request handling without a socket: Beast's request parser with the limits
// HttpServer sets (16 KiB of headers, a 64 KiB body), then what Handle does with a request before it reaches
// the coordinator: the target split into path and query, the /api/NAME/ID route, the query and form parameters
// (Param), ids (Id), rung lists (ParseRungs), the JSON string of an error message.
//
// Handle itself is a member of the connection class (its socket, the coordinator's loop and the sessions), so
// the target repeats its request-side steps rather than calling it; see docs/FUZZING.md.
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/http/http_util.h"

namespace http = boost::beast::http;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  http::request_parser<http::string_body> parser;
  parser.header_limit(16 * 1024);
  parser.body_limit(64 * 1024);
  parser.eager(true);
  boost::beast::error_code ec;
  size_t used = 0;
  while (used < size && !parser.is_done()) {
    size_t n = parser.put(boost::asio::buffer(data + used, size - used), ec);
    if (ec == http::error::need_more) break;
    if (ec) return 0;
    if (n == 0) break;
    used += n;
  }
  if (!parser.is_done()) return 0;
  auto req = parser.release();
  std::string_view target(req.target().data(), req.target().size());
  const size_t q = target.find('?');
  const std::string path(target.substr(0, q));
  const std::string_view query = q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
  std::vector<std::string> parts;
  if (path.rfind("/api/", 0) == 0) {
    for (size_t pos = 5; pos <= path.size();) {
      size_t slash = path.find('/', pos);
      parts.push_back(path.substr(pos, slash == std::string::npos ? std::string::npos : slash - pos));
      if (slash == std::string::npos) break;
      pos = slash + 1;
    }
  }
  if (parts.size() >= 2) (void)ladder::server::Id(parts[1]);
  for (const char* name : {"token", "next", "view", "metric", "per_trial", "rungs", "rung_metric", "search"}) {
    auto v = ladder::server::Param(query, name);
    auto b = ladder::server::Param(req.body(), name);
    if (v) (void)ladder::server::JsonString(*v);
    if (b) (void)ladder::server::Id(*b);
  }
  std::vector<double> rungs;
  (void)ladder::server::ParseRungs(ladder::server::Param(query, "rungs").value_or(""), &rungs);
  (void)ladder::server::JsonString("no such page: " + path);
  return 0;
}
