#include "server/rendezvous_port.h"

#include <algorithm>
#include <fstream>

namespace ladder::server {

namespace {

// SplitMix64's finalizer: a well-spread value for each (trial, collision) pair.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

int RendezvousPort(int base, int span, int64_t trial_id, int collisions) {
  const uint64_t n = static_cast<uint64_t>(std::max(1, span));
  const uint64_t first = static_cast<uint64_t>(trial_id) % n;
  if (collisions <= 0 || n == 1) return base + static_cast<int>(first);
  // Any port of the range but the first one.
  const uint64_t jump = 1 + Mix(static_cast<uint64_t>(trial_id) * 0x100000001b3ULL + static_cast<uint64_t>(collisions)) %
                                (n - 1);
  return base + static_cast<int>((first + jump) % n);
}

std::string EphemeralOverlapWarning(int base, int span, const std::string& ip_local_port_range) {
  std::ifstream in(ip_local_port_range);
  int low = 0, high = 0;
  if (!(in >> low >> high) || low <= 0 || high < low) return "";
  const int last = base + std::max(1, span) - 1;
  if (last < low || base > high) return "";
  return "the rendezvous ports " + std::to_string(base) + "-" + std::to_string(last) +
         " overlap this machine's ephemeral ports " + std::to_string(low) + "-" + std::to_string(high) + " (" +
         ip_local_port_range + "), which outgoing connections take: a trial's rank 0 may find its port in use (the "
         "trial then runs again on another port, costing a restart); choose a range below " + std::to_string(low) +
         " with --rendezvous-port-base and --rendezvous-port-span";
}

}  // namespace ladder::server
