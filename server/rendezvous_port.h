#pragma once
// The rendezvous port of a multi-node trial's run (MASTER_PORT, where rank 0 serves the rendezvous store), and
// the check that the configured range keeps clear of the ports the kernel hands to outgoing connections.
//
// Rule: a trial's first port is base + trial id % span (consecutive trials, which often share rank 0's node,
// get different ports). When rank 0 of a run could not listen on its port because another process held it
// (ladder-train exits kExitRendezvousPortInUse, common/trial_exit_codes.h), the trial runs again without using up
// an attempt, on a port drawn from the range by (trial id, collisions so far): never the first port again, and
// not the next one either — a taken port is often one of a block (another coordinator with the same range, a
// service's ports), so a retry jumps rather than walks.
#include <cstdint>
#include <string>

namespace ladder::server {

// After this many port collisions of one trial, a further one counts as a failure (an attempt): a range in which
// every port seems taken is a configuration to fix, not something to retry forever.
inline constexpr int kMaxRendezvousPortCollisions = 20;

// The port for a run of `trial_id` after `collisions` earlier runs found theirs taken. In [base, base + span).
int RendezvousPort(int base, int span, int64_t trial_id, int collisions);

// "" when [base, base + span) and the local port range in `ip_local_port_range` (Linux's
// /proc/sys/net/ipv4/ip_local_port_range: "LOW HIGH", the ports outgoing connections take) do not overlap, or
// when the file cannot be read; otherwise a warning naming both ranges and what to pass instead.
std::string EphemeralOverlapWarning(int base, int span,
                                    const std::string& ip_local_port_range = "/proc/sys/net/ipv4/ip_local_port_range");

}  // namespace ladder::server
