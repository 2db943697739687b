#pragma once
// The rule a worker and a restarted coordinator both keep so that one run never runs twice when the coordinator is
// the one that went away (docs/ARCHITECTURE.md, crash-safety rules):
// * a worker that has not been heard by the coordinator for DisconnectedStopAfter(lease) — counted from its last
//   write to the coordinator, the lease the last one it was granted — and has not registered again stops every
//   run it holds (SIGTERM: ladder-train checkpoints), each killed DisconnectedStopGrace(lease) later at the latest;
// * a restarted coordinator gives a running trial's run away (requeues it) only ReattachWindow(lease) after its
//   start: longer than the worker's stop and grace together, so by then the old run's ranks are gone.
// A worker that registers again within DisconnectedStopAfter re-attaches its runs as before.
#include <chrono>

namespace ladder {

inline std::chrono::milliseconds DisconnectedStopAfter(std::chrono::milliseconds lease) { return lease; }
inline std::chrono::milliseconds DisconnectedStopGrace(std::chrono::milliseconds lease) { return lease; }
// Stop after, grace, and one lease more for the worker's own scheduling and the coordinator's start.
inline std::chrono::milliseconds ReattachWindow(std::chrono::milliseconds lease) {
  return DisconnectedStopAfter(lease) + DisconnectedStopGrace(lease) + lease;
}

}  // namespace ladder
