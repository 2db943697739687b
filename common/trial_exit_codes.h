#pragma once
// Exit codes of ladder-train that mean something to the coordinator, shared by the trainer (which exits with
// them) and the coordinator (which reads them from a run's TrialExited). Header only: the trainer links nothing
// of ladder's.
namespace ladder {

// Rank 0 of a multi-node run could not listen on MASTER_PORT because another process holds that port (EADDRINUSE).
// The coordinator stops the group and runs the trial again on another port without using up an attempt
// (server/rendezvous_port.h). 75 is EX_TEMPFAIL of <sysexits.h>: a temporary failure, worth a retry.
inline constexpr int kExitRendezvousPortInUse = 75;

}  // namespace ladder
