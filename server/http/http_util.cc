#include "server/http/http_util.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <random>

namespace ladder::server {

namespace http = boost::beast::http;

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\', out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

http::status HttpStatusOf(const grpc::Status& st) {
  switch (st.error_code()) {
    case grpc::StatusCode::OK: return http::status::ok;
    case grpc::StatusCode::NOT_FOUND: return http::status::not_found;
    case grpc::StatusCode::INVALID_ARGUMENT: return http::status::bad_request;
    case grpc::StatusCode::FAILED_PRECONDITION: return http::status::conflict;
    case grpc::StatusCode::UNAUTHENTICATED: return http::status::unauthorized;
    case grpc::StatusCode::UNAVAILABLE: return http::status::service_unavailable;
    default: return http::status::internal_server_error;
  }
}

std::string RandomHex(size_t bytes) {
  std::random_device rd;
  std::string out;
  static const char* hex = "0123456789abcdef";
  for (size_t i = 0; i < bytes; ++i) {
    unsigned v = rd() & 0xff;
    out += hex[v >> 4], out += hex[v & 15];
  }
  return out;
}

bool ConstantTimeEqual(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned>(a[i] ^ b[i]);
  return diff == 0;
}

// The value of `name` in a query string or form body ("a=1&b=2"); percent-decoding of + and %XX.
std::optional<std::string> Param(std::string_view query, std::string_view name) {
  size_t pos = 0;
  while (pos <= query.size()) {
    size_t amp = query.find('&', pos);
    std::string_view kv = query.substr(pos, amp == std::string_view::npos ? std::string_view::npos : amp - pos);
    size_t eq = kv.find('=');
    if (kv.substr(0, eq) == name) {
      std::string out;
      std::string_view v = eq == std::string_view::npos ? std::string_view() : kv.substr(eq + 1);
      for (size_t i = 0; i < v.size(); ++i) {
        if (v[i] == '+') {
          out += ' ';
        } else if (v[i] == '%' && i + 2 < v.size() && std::isxdigit(static_cast<unsigned char>(v[i + 1])) &&
                   std::isxdigit(static_cast<unsigned char>(v[i + 2]))) {
          out += static_cast<char>(std::stoi(std::string(v.substr(i + 1, 2)), nullptr, 16));
          i += 2;
        } else {
          out += v[i];
        }
      }
      return out;
    }
    if (amp == std::string_view::npos) break;
    pos = amp + 1;
  }
  return std::nullopt;
}

std::optional<int64_t> Id(std::string_view s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

bool ParseRungs(std::string_view s, std::vector<double>* out) {
  out->clear();
  if (s.empty()) return true;
  size_t from = 0;
  while (from <= s.size()) {
    size_t comma = s.find(',', from);
    if (comma == std::string_view::npos) comma = s.size();
    const std::string item(s.substr(from, comma - from));
    char* end = nullptr;
    const double v = item.empty() ? NAN : std::strtod(item.c_str(), &end);
    if (!std::isfinite(v) || end != item.c_str() + item.size() || out->size() >= 64) return false;
    if (!out->empty() && v <= out->back()) return false;
    out->push_back(v);
    from = comma + 1;
  }
  return true;
}

std::optional<std::string> CookieValue(std::string_view header, std::string_view name) {
  size_t pos = 0;
  while (pos < header.size()) {
    const size_t semi = header.find(';', pos);
    std::string_view c = header.substr(pos, semi == std::string_view::npos ? std::string_view::npos : semi - pos);
    while (!c.empty() && c.front() == ' ') c.remove_prefix(1);
    if (c.size() > name.size() && c.substr(0, name.size()) == name && c[name.size()] == '=') {
      return std::string(c.substr(name.size() + 1));
    }
    if (semi == std::string_view::npos) break;
    pos = semi + 1;
  }
  return std::nullopt;
}

}  // namespace ladder::server
