#pragma once
// What the coordinator's multi-node tests share: a two-node spec, the CancelTrial messages a fake worker got, and a
// group running when the coordinator crashes.
#include <chrono>
#include <memory>
#include <string>
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

// One member's exit as a worker reports it: `how` "stopping" (its worker is shutting down: it stopped the ranks),
// "outside" (exit 143 the worker did not ask for: ladder-train's rank that stopped because a peer asked).
inline void MemberExit(Coordinator& coord, const std::shared_ptr<FakeLink>& link, const v1::StartTrial& s,
                const std::string& how) {
  v1::WorkerMessage e;
  e.mutable_exited()->set_trial_id(s.trial_id());
  e.mutable_exited()->set_assignment_epoch(s.assignment_epoch());
  e.mutable_exited()->set_exit_code(143);
  e.mutable_exited()->set_error("exited with code 143");
  e.mutable_exited()->set_cancelled(how == "stopping");
  e.mutable_exited()->set_worker_stopping(how == "stopping");
  e.mutable_exited()->set_step_cancelled(how == "outside");
  coord.OnWorkerMessage(link, e);
}

// A two-node trial running when the coordinator crashed: its rank-0 member, its other member and an idle node.
struct RunningGroup {
  v1::StartTrial rank0, other;
  std::string rank0_node, other_node, idle_node;
};

inline RunningGroup StartOneGroup(const std::shared_ptr<FakeLink>& a, const std::shared_ptr<FakeLink>& b,
                           const std::shared_ptr<FakeLink>& c) {
  RunningGroup g;
  for (auto& [name, l] : std::vector<std::pair<std::string, std::shared_ptr<FakeLink>>>{{"a", a}, {"b", b}, {"c", c}}) {
    if (l->Starts().empty()) {
      g.idle_node = name;
    } else if (l->Starts()[0].first_rank() == 0) {
      g.rank0 = l->Starts()[0], g.rank0_node = name;
    } else {
      g.other = l->Starts()[0], g.other_node = name;
    }
  }
  return g;
}

class CoordinatorGroupTest : public CoordinatorTest {
 protected:
  // A two-node trial running on two of the nodes a, b and c when the coordinator crashes (dropped without Stop: what
  // was flushed survives, the workers keep running their ranks), and a coordinator started again on the database
  // with the lease `lease` (also its re-attach window): the group as it ran.
  RunningGroup CrashWhileOneGroupRuns(std::chrono::milliseconds lease) {
    auto a = Connect("a", 2), b = Connect("b", 2), c = Connect("c", 2);
    CreateSearch(kTwoNodeSpec);
    const RunningGroup g = StartOneGroup(a, b, c);
    store_->Flush();
    coord_.reset();
    store_.reset();
    lease_ = lease;
    Open();
    return g;
  }
};

}  // namespace ladder::server
