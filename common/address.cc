#include "common/address.h"

#include <unistd.h>

#include <cctype>

namespace ladder {

std::string HostPortError(const std::string& address) {
  const std::string what = "'" + address + "' is not host:port";
  const auto colon = address.rfind(':');
  if (colon == std::string::npos) return what + " (no ':port')";
  const std::string host = address.substr(0, colon), port = address.substr(colon + 1);
  if (host.empty() || host == "[]") return what + " (no host)";
  if (host.find(':') != std::string::npos && !(host.front() == '[' && host.back() == ']')) {
    return what + " (an IPv6 host goes in brackets: [::1]:50051)";
  }
  if (port.empty() || port.size() > 5) return what + " (the port must be a number from 0 to 65535)";
  for (char c : port) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return what + " (the port must be a number from 0 to 65535)";
  }
  if (std::stoi(port) > 65535) return what + " (the port must be a number from 0 to 65535)";
  return "";
}

std::string ThisHostname() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) return "";
  return host;
}

}  // namespace ladder
