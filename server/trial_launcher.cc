// TrialLauncher: the start window and the hand-over of a run's starts to its members' workers.
#include "server/trial_launcher.h"

#include <iterator>
#include <limits>

#include "common/log.h"
#include "common/token.h"
#include "server/launch_commands.h"
#include "server/rendezvous_port.h"
#include "server/log_component.h"

namespace ladder::server {

TrialLauncher::TrialLauncher(NodeManager& nodes, CommitOutbox& outbox, const CoordinatorOptions& options,
                             std::function<void()> request_schedule, RunIsCurrent run_is_current)
    : nodes_(nodes),
      outbox_(outbox),
      opt_(options),
      request_schedule_(std::move(request_schedule)),
      run_is_current_(std::move(run_is_current)) {}

size_t TrialLauncher::OpenStarts() {
  if (opt_.starts_in_flight <= 0) return std::numeric_limits<size_t>::max();
  ForgetStaleStarts(Clock::now());
  const size_t window = static_cast<size_t>(opt_.starts_in_flight);
  return starts_unheard_.size() >= window ? 0 : window - starts_unheard_.size();
}

void TrialLauncher::AfterLaunch(const TrialRecord& t, size_t started) {
  if (opt_.starts_in_flight > 0 && t.AnyLive() && t.sched == TrialRecord::Sched::kRunning) {
    starts_unheard_[t.proto.id()] = {t.epoch, Clock::now()};
  }
  if (opt_.starts_per_commit > 0 && started % static_cast<size_t>(opt_.starts_per_commit) == 0) {
    outbox_.CommitIfSending();
  }
}

void TrialLauncher::PassEnded(size_t started, size_t budget, bool queued) {
  window_full_ = started >= budget && queued;
}

void TrialLauncher::StartHeard(int64_t trial_id, int64_t epoch) {
  auto it = starts_unheard_.find(trial_id);
  if (it == starts_unheard_.end() || it->second.first != epoch) return;
  starts_unheard_.erase(it);
  if (window_full_ && starts_unheard_.size() <= static_cast<size_t>(opt_.starts_in_flight) / 2) {
    window_full_ = false;
    request_schedule_();
  }
}

void TrialLauncher::ForgetStaleStarts(Clock::time_point now) {
  for (auto it = starts_unheard_.begin(); it != starts_unheard_.end();) {
    const bool stale = !run_is_current_(it->first, it->second.first) || now - it->second.second > kStartHeardWithin;
    it = stale ? starts_unheard_.erase(it) : std::next(it);
  }
}

void TrialLauncher::Start(TrialRecord& t, const search::SearchSpec& spec, int nodes,
                          const search::Substituted& sub) {
  const auto& p = t.proto;
  LaunchRun run;
  run.trial_id = p.id();
  run.search_id = p.search_id();
  run.epoch = t.epoch;
  run.checkpoint_dir = p.checkpoint_dir();
  run.nodes = nodes;
  run.command = sub.argv;
  run.env = RunEnv(spec, p, t.epoch, t.params, t.members.size(), {sub.env.begin(), sub.env.end()});
  std::vector<LaunchMember> members;
  for (const auto& m : t.members) {
    members.push_back({m.node_id, nodes_.Address(m.node_id), m.slots, m.gpus, m.first_rank});
  }
  LaunchSettings settings;
  settings.mpirun = opt_.mpirun;
  settings.srun = opt_.srun;
  settings.master_addr = opt_.master_addr;
  if (spec.group.launcher != search::Launcher::kMpirun) {
    settings.master_port =
        RendezvousPort(opt_.rendezvous_port_base, opt_.rendezvous_port_span, p.id(), t.port_collisions);
    settings.rendezvous_secret = GenerateToken();
  }
  for (auto& s : StartMessages(spec, run, members, settings)) {
    TrialRecord::Member& m = t.members[s.member];
    auto link = nodes_.Link(m.node_id);
    if (!link) {
      // The scheduler only places on UP nodes, which have a stream: this is a bug, not a user error.
      LogError(kLog, "trial " + std::to_string(p.id()) + ": node " + m.node_id + " has no worker stream");
      continue;
    }
    v1::CoordinatorMessage msg;
    *msg.mutable_start() = std::move(s.start);
    m.live = true;
    nodes_.AddRun(m.node_id, p.id());
    outbox_.SendAfterCommit(link, std::move(msg));
  }
}

}  // namespace ladder::server
