// The climb loop (climb.h): fit → check → propose → probe, within the probe budget.
#include "search/scaling/climb.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

namespace ladder::search {
namespace {

std::string Sig(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// One round's view: the fit, its mixture and every target's check.
struct Round {
  LawSet set;
  std::vector<MixtureDraw> mixture;
  std::vector<TargetCheck> checks;
};

Fitted<Round> FitRound(const std::vector<ScaleTrial>& trials, const std::vector<int64_t>& targets,
                       const ClimbOptions& o) {
  auto set = FitLaws(trials, o.laws);
  if (!set.ok()) return Fitted<Round>::Fail(set.error);
  Round r;
  r.set = std::move(*set.value);
  r.mixture = Mixture(r.set);
  for (int64_t t : targets) r.checks.push_back(CheckTarget(r.set, r.mixture, t, o.probe));
  return Fitted<Round>{std::move(r), {}};
}

// The flagged target whose p80 regret is highest (disagreement breaks ties); -1 when none is flagged.
int WorstTarget(const std::vector<TargetCheck>& checks) {
  int worst = -1;
  for (size_t i = 0; i < checks.size(); ++i) {
    if (!checks[i].needs_probe) continue;
    const auto& p = checks[i].posterior;
    if (worst < 0 || p.regret_p80 > checks[worst].posterior.regret_p80 ||
        (p.regret_p80 == checks[worst].posterior.regret_p80 && p.disagreement > checks[worst].posterior.disagreement)) {
      worst = static_cast<int>(i);
    }
  }
  return worst;
}

void Finish(ClimbResult& out, const Round& r, const std::vector<ScaleTrial>& trials, const ClimbOptions& o) {
  for (size_t i = 0; i < r.checks.size(); ++i) {
    TargetOutcome& t = out.targets[i];
    t.after = r.checks[i].posterior;
    t.decided = !r.checks[i].needs_probe;
    t.laws.clear();
    for (const LawFit& l : r.set.laws) {
      t.laws.push_back({l.name, std::exp2(r.set.FitLog2(l, static_cast<double>(t.global_batch))), l.weight, l.consistent});
    }
  }
  out.decided = WorstTarget(r.checks) < 0;
  if (!out.decided) {
    const int w = WorstTarget(r.checks);
    if (!out.next_probe) {
      out.next_probe = ProposeProbe(r.set, r.mixture, trials, out.targets[w].global_batch, o.probe);
    }
    out.undecided = UndecidedText(r.checks[w], out.next_probe, o.probe.max_disagreement);
  }
  out.laws = r.set;
}

// The probe budget left, in runs (ProbeOptions::runs_left: whether the next probe is the last).
double RunsLeft(const ClimbResult& out, const ClimbOptions& o) {
  return (out.budget_node_hours - out.probe_node_hours) / std::max(o.probe.node_hours_per_run, 1e-12);
}

// Runs one more LR at the last probe's batch while its optimum is not bracketed (at most 3, within the budget).
void ExtendUntilBracketed(ClimbResult& out, std::vector<ScaleTrial>& trials, const Probe& last, const ProbeRunner& run,
                          const ClimbOptions& o, double cap_log2) {
  for (int i = 0; i < 3; ++i) {
    auto ext = ExtendProbe(trials, last, o.probe, cap_log2);
    if (!ext || out.probe_node_hours + ext->node_hours > out.budget_node_hours + 1e-9) return;
    std::vector<ScaleTrial> got = run(*ext);
    if (got.empty()) return;
    out.probes.push_back(*ext);
    out.probe_node_hours += ext->node_hours;
    for (ScaleTrial& t : got) out.probe_trials.push_back(t), trials.push_back(std::move(t));
  }
}

// What both entry points start with: the options completed from the sweep (its largest batch; the laws anchored
// past it), the budget, and the sweep's own fit with every target's check as "before".
Fitted<Round> Begin(const std::vector<ScaleTrial>& sweep, const std::vector<int64_t>& targets, ClimbOptions& o,
                    ClimbResult& out) {
  if (o.probe.sweep_largest_batch <= 0) {
    for (const ScaleTrial& t : sweep) o.probe.sweep_largest_batch = std::max(o.probe.sweep_largest_batch, t.global_batch);
  }
  if (o.laws.anchor_above <= 0) o.laws.anchor_above = o.probe.sweep_largest_batch;
  out.sweep_node_hours = SweepNodeHours(sweep, o.probe.node_hours_per_run);
  out.budget_node_hours = o.probe_budget * out.sweep_node_hours;
  auto round = FitRound(sweep, targets, o);
  if (!round.ok()) return round;
  for (size_t i = 0; i < targets.size(); ++i) {
    TargetOutcome t;
    t.global_batch = targets[i], t.before = round.value->checks[i].posterior;
    t.flagged = round.value->checks[i].needs_probe, t.flag_why = round.value->checks[i].why;
    out.targets.push_back(std::move(t));
  }
  return round;
}

}  // namespace

std::string UndecidedText(const TargetCheck& check, const std::optional<Probe>& probe, double max_disagreement) {
  const LrPosterior& p = check.posterior;
  std::string s;
  if (p.law_lo != p.law_hi && p.disagreement > max_disagreement) {
    s = "the sweep cannot tell " + p.law_lo + " (lr " + Sig(std::exp2(p.law_lo_log2)) + ") from " + p.law_hi +
        " (lr " + Sig(std::exp2(p.law_hi_log2)) + ") (" + Sig(p.disagreement) + " octaves apart at batch " +
        std::to_string(p.global_batch) + ")";
  } else {
    s = "the sweep cannot pin the learning rate at batch " + std::to_string(p.global_batch) + " (80% interval [" +
        Sig(std::exp2(p.lo80)) + ", " + Sig(std::exp2(p.hi80)) + "], predicted p80 regret " +
        Sig(100 * p.regret_p80) + "%)";
  }
  if (!probe) return s + "; no probe batch lies between the sweep and the target";
  s += "; one probe at batch " + std::to_string(probe->global_batch) + ", learning rates {";
  for (size_t i = 0; i < probe->lrs.size(); ++i) s += (i ? ", " : "") + Sig(probe->lrs[i]);
  return s + "}, about " + Sig(probe->node_hours) + " node-hours, decides";
}

Fitted<ClimbResult> Climb(const std::vector<ScaleTrial>& sweep, const std::vector<int64_t>& targets,
                          const ProbeRunner& run, const ClimbOptions& options) {
  ClimbOptions o = options;
  ClimbResult out;
  auto round = Begin(sweep, targets, o, out);
  if (!round.ok()) return Fitted<ClimbResult>::Fail(round.error);
  std::vector<ScaleTrial> trials = sweep;
  for (int r = 0; r < o.max_rounds; ++r) {
    const int w = WorstTarget(round.value->checks);
    if (w < 0) break;
    o.probe.runs_left = RunsLeft(out, o);
    auto probe = ProposeProbe(round.value->set, round.value->mixture, trials, targets[w], o.probe);
    out.next_probe = probe;
    if (!probe || !run || out.probe_node_hours + probe->node_hours > out.budget_node_hours + 1e-9) break;
    std::vector<ScaleTrial> got = run(*probe);
    if (got.empty()) break;
    out.probes.push_back(*probe);
    out.probe_node_hours += probe->node_hours;
    out.next_probe.reset();
    for (ScaleTrial& t : got) out.probe_trials.push_back(t), trials.push_back(std::move(t));
    ExtendUntilBracketed(out, trials, *probe, run, o, round.value->set.cap_log2);
    auto next = FitRound(trials, targets, o);
    if (!next.ok()) break;  // keep the last good fit (a probe's trials cannot remove the sweep's)
    round = std::move(next);
  }
  o.probe.runs_left = RunsLeft(out, o);
  Finish(out, *round.value, trials, o);
  return Fitted<ClimbResult>{std::move(out), {}};
}

Fitted<ClimbResult> NextProbe(const std::vector<ScaleTrial>& sweep, const std::vector<ScaleTrial>& probe_trials,
                              const std::optional<Probe>& last_probe, const std::vector<int64_t>& targets,
                              const ClimbOptions& options) {
  ClimbOptions o = options;
  ClimbResult out;
  auto round = Begin(sweep, targets, o, out);
  if (!round.ok()) return Fitted<ClimbResult>::Fail(round.error);
  out.probe_node_hours = static_cast<double>(probe_trials.size()) * o.probe.node_hours_per_run;
  o.probe.runs_left = RunsLeft(out, o);
  out.probe_trials = probe_trials;
  std::vector<ScaleTrial> trials = sweep;
  trials.insert(trials.end(), probe_trials.begin(), probe_trials.end());
  if (!probe_trials.empty()) {
    auto next = FitRound(trials, targets, o);
    if (next.ok()) round = std::move(next);  // else the sweep's fit (a probe's trials cannot remove the sweep's)
  }
  if (last_probe) {
    size_t at_batch = 0;
    for (const ScaleTrial& t : probe_trials) at_batch += t.global_batch == last_probe->global_batch;
    if (at_batch < last_probe->lrs.size() + 3) {
      out.next_probe = ExtendProbe(trials, *last_probe, o.probe, round.value->set.cap_log2);
    }
  }
  Finish(out, *round.value, trials, o);
  return Fitted<ClimbResult>{std::move(out), {}};
}

void TakeClimbLr(ScalePlan& plan, const TargetOutcome& outcome, size_t probes_run) {
  const LrPosterior& a = outcome.after;
  if (!std::isfinite(a.log2_lr)) return;
  const double was = plan.peak_lr.value;
  plan.peak_lr = {std::exp2(a.log2_lr), std::exp2(a.lo90), std::exp2(a.hi90)};
  plan.lr_rule = "climb";
  std::string laws;
  for (const LawAtTarget& l : outcome.laws) {
    if (l.consistent) laws += (laws.empty() ? "" : ", ") + l.name;
  }
  plan.lr_rule_why = "the climb's posterior after " + std::to_string(probes_run) + " probe" +
                     (probes_run == 1 ? "" : "s") + " (the laws the data still allow: " + laws + "); " +
                     (outcome.decided ? "decided" : "still undecided") + "; the default fit said " + Sig(was);
  std::vector<std::string> kept;
  for (std::string& line : plan.sources) {
    if (line.rfind("peak_lr", 0) == 0) continue;
    if (line.rfind("stability edge:", 0) == 0) line = line.substr(0, line.find("; the peak LR is"));
    kept.push_back(std::move(line));
  }
  plan.sources = std::move(kept);
  plan.sources.push_back("peak_lr: climb " + Sig(plan.peak_lr.value) + " [" + Sig(plan.peak_lr.lo) + ", " +
                         Sig(plan.peak_lr.hi) + "] (90%), 80% [" + Sig(std::exp2(a.lo80)) + ", " +
                         Sig(std::exp2(a.hi80)) + "], predicted p80 regret " + Sig(100 * a.regret_p80) + "%");
  if (a.hi90 - a.lo90 > 1.0) {
    plan.sources.push_back("peak_lr uncertainty: its interval spans " + Sig(a.hi90 - a.lo90) +
                           " octaves (more than 1): the probes run do not pin the LR at batch " +
                           std::to_string(plan.global_batch) + "; `ladder promote --probe` runs the next");
  }
  if (std::isfinite(plan.stability_edge) && plan.peak_lr.value > plan.stability_edge) {
    for (std::string& line : plan.sources) {
      if (line.rfind("stability edge:", 0) == 0) {
        line += "; the peak LR is " + Sig(plan.peak_lr.value / plan.stability_edge) + "x above it";
      }
    }
  }
}

}  // namespace ladder::search
