#pragma once
// Small pieces of the dashboard's HTTP side: JSON strings (messages: proto/proto_json.h), query parameters, ids, tokens.
#include <boost/beast/http/status.hpp>
#include <google/protobuf/message.h>
#include <grpcpp/support/status.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ladder::server {

// A JSON string literal.
std::string JsonString(const std::string& s);
// The HTTP status for a gRPC status the coordinator answered.
boost::beast::http::status HttpStatusOf(const grpc::Status& st);
// `bytes` random bytes as hex (session ids, CSRF tokens).
std::string RandomHex(size_t bytes);
// Equal, in time that does not depend on where they differ (tokens).
bool ConstantTimeEqual(std::string_view a, std::string_view b);
// The value of `name` in a query string or form body ("a=1&b=2"), + and %XX decoded.
std::optional<std::string> Param(std::string_view query, std::string_view name);
// The value of the cookie `name` in a Cookie header ("a=1; b=2"); nullopt when it has none.
std::optional<std::string> CookieValue(std::string_view header, std::string_view name);
// A decimal id (digits only, at most 18).
std::optional<int64_t> Id(std::string_view s);
// "1,3,9" into ascending finite numbers (at most 64); "" is none. False for anything else.
bool ParseRungs(std::string_view s, std::vector<double>* out);

}  // namespace ladder::server
