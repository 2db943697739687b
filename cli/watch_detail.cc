#include "cli/watch_detail.h"

#include <algorithm>
#include <cstdio>

#include "cli/format.h"
#include "cli/watch_model.h"

namespace ladder::cli {

std::string FormatNodeHours(double node_seconds) {
  const double h = std::max(0.0, node_seconds / 3600);
  char buf[32];
  std::snprintf(buf, sizeof buf, h < 100 ? "%.2f" : "%.0f", h);
  return buf;
}

std::string RungLabel(const v1::Trial& t, const v1::Search* search) {
  if (t.rung() <= 0) return "-";
  return (search && search->rungs_size() > 0 ? "rung " : "gen ") + std::to_string(t.rung());
}

double NodeSecondsAt(const v1::Trial& t, double sent_unix, double now) {
  double s = t.node_seconds();
  if (t.state() == v1::TRIAL_RUNNING && t.started_unix() > 0) {
    s += std::max(0.0, now - std::max(sent_unix, t.started_unix())) * t.placement_size();
  }
  return s;
}

namespace {

std::string Join(const google::protobuf::RepeatedPtrField<std::string>& v, const char* sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

void AddRuns(const v1::Trial& t, double now, std::vector<std::string>& out) {
  out.push_back("");
  out.push_back(" runs");
  if (t.attempts_size() == 0) out.push_back("   (none yet)");
  for (const auto& a : t.attempts()) {
    const double end = a.ended_unix() > 0 ? a.ended_unix() : now;
    out.push_back("   attempt " + std::to_string(a.attempt() + 1) + "  " + ClockTime(a.started_unix()) + "  " +
                  FormatDuration(end - a.started_unix()) + "  on " + Join(a.nodes(), ",") + "  " +
                  (a.outcome().empty() ? (a.ended_unix() > 0 ? "ended" : "running") : a.outcome()));
  }
}

}  // namespace

std::vector<std::string> TrialDetailLines(const v1::Trial& t, const v1::Search* search, double now) {
  std::vector<std::string> out;
  auto line = [&](const std::string& k, const std::string& v) {
    std::string key = k;
    key.resize(std::max<size_t>(key.size(), 14), ' ');
    out.push_back(" " + key + v);
  };
  line("state", StateName(t.state()) + (t.attempt() ? "  (attempt " + std::to_string(t.attempt() + 1) + ")" : "") +
                    (t.preemptions() ? "  preempted " + std::to_string(t.preemptions()) + "x" : ""));
  line("parameters", FormatParams(t));
  if (t.probe()) {
    line("probe", "a probe of the climb (ladder promote --probe): " + std::to_string(std::max(1, t.micro_batches())) +
                      " micro-batches");
  }
  std::string cmd;
  for (const auto& a : t.command()) cmd += (cmd.empty() ? "" : " ") + a;
  line("command", cmd.empty() ? "-" : cmd);
  std::string group;
  for (const auto& p : t.placement()) {
    std::string slots;
    for (int s : p.slots()) slots += (slots.empty() ? "" : ",") + std::to_string(s);
    group += (group.empty() ? "" : "  ") + p.node_id() + " slots " + slots + " (first rank " +
             std::to_string(p.first_rank()) + ")";
  }
  line("node group", group.empty() ? "-" : group);
  line("objective", t.has_objective() ? FormatNumber(t.objective(), 4) : "-");
  line("rung", RungLabel(t, search));
  line("node-hours", FormatNodeHours(NodeSecondsAt(t, now, now)));
  std::string last;
  for (const auto& [k, v] : t.last_metrics().values()) last += (last.empty() ? "" : " ") + k + "=" + FormatNumber(v, 4);
  line("last metrics", last.empty() ? "-" : "step " + std::to_string(t.last_metrics().step()) + "  " + last);
  line("points", std::to_string(t.metric_count()) + " stored, " + std::to_string(t.ignored_lines()) +
                     " lines ignored" + (t.last_ignored_line().empty() ? "" : " (last: " + t.last_ignored_line() + ")"));
  line("note / error", t.error().empty() ? "-" : t.error());
  line("checkpoint", t.checkpoint_dir().empty() ? "-" : t.checkpoint_dir());
  AddRuns(t, now, out);
  out.push_back("");
  out.push_back(" journal");
  if (t.history_size() == 0) out.push_back("   (nothing yet)");
  for (const auto& j : t.history()) out.push_back("   " + ClockTime(j.time_unix()) + " " + j.kind() + ": " + j.detail());
  out.push_back("");
  out.push_back(" log tail (rank 0's stderr)");
  if (t.log_tail().empty()) out.push_back("   (empty)");
  size_t from = 0;
  while (from < t.log_tail().size()) {
    size_t nl = t.log_tail().find('\n', from);
    if (nl == std::string::npos) nl = t.log_tail().size();
    out.push_back("   " + t.log_tail().substr(from, nl - from));
    from = nl + 1;
  }
  return out;
}

}  // namespace ladder::cli
