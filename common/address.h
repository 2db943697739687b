#pragma once
// host:port checks for the --listen and --server options, and the exit codes of a command line that did not parse.
#include <string>

namespace ladder {

// "" when `address` is host:port with a non-empty host (a name, an IPv4 address or a bracketed IPv6 one) and a
// decimal port in 0..65535; else what is wrong with it, naming the value.
std::string HostPortError(const std::string& address);

// This machine's host name (gethostname), "" when it cannot be read.
std::string ThisHostname();

}  // namespace ladder
