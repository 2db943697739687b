#pragma once
// What the coordinator's multi-node tests share: a two-node spec and the CancelTrial messages a fake worker got.
#include <vector>

#include "tests/server/coordinator_fixture.h"

namespace ladder::server {

inline constexpr const char* kTwoNodeSpec = R"(
name: groups
objective: {metric: score, mode: max}
budget: {max_trials: 2, parallelism: 1, max_retries: 1, max_failed_trials: 5}
resources: {nodes: 2, ranks_per_node: 2}
command: [train, "--x={x}"]
space:
  x: {type: float, low: 0.0, high: 1.0}
)";

inline std::vector<v1::CancelTrial> Cancels(const FakeLink& link) {
  std::vector<v1::CancelTrial> out;
  for (const auto& m : link.sent) {
    if (m.has_cancel()) out.push_back(m.cancel());
  }
  return out;
}

using CoordinatorGroupTest = CoordinatorTest;

}  // namespace ladder::server
