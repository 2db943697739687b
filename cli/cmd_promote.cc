// ladder promote SEARCH: plan a hero run from a finished search's trials (scale extrapolation), print the
// plan, and unless --dry-run submit it as a one-trial search at hero priority with the plan stored. Probes: with
// --probe, the climb's next probe runs as trials of the search (promote_probes.h) and the refitted plan is printed;
// without --dry-run, a `scales:` search with `probes: auto` first runs the climb's probes within the probe budget.
// A search with several objectives is planned from the point of its Pareto front that --pick or --weights chooses
// (cli/pareto_front.h): the fit reads every trial, the hero run takes that trial's command.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "cli/commands.h"
#include "cli/format.h"
#include "cli/hero_job.h"
#include "cli/pareto_front.h"
#include "cli/promote_plan.h"
#include "cli/promote_probes.h"
#include "cli/search_progress.h"
#include "common/address.h"
#include "search/scaling/climb.h"
#include "search/scaling/extrapolation.h"
#include "search/scaling/scale_plan.h"
#include "search/spec/spec_reader.h"

namespace ladder::cli {

namespace {

std::string IntervalText(const search::Interval& i) { return search::FormatInterval(i); }

std::string Sig(double v, const char* format = "%.4g") {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// What the climb's dry run says at the target, from the plan JSON's "extrapolation" (so the text and --json agree):
// each candidate law's LR and whether the data still allow it, the LR with its intervals and predicted regret, and
// where undecided the probe that decides.
void PrintVerdict(const nlohmann::json& x, std::ostream& out) {
  if (!x.is_object() || !x.contains("verdict") || x["verdict"].is_null()) return;
  const auto& v = x["verdict"];
  if (v.contains("error")) {
    out << "  laws           not judged: " << v["error"].get<std::string>() << "\n";
    return;
  }
  const auto num = [](const nlohmann::json& j) { return j.is_number() ? Sig(j.get<double>()) : std::string("-"); };
  out << "  laws at batch " << v["batch"] << " (each fitted to the loss surface; seed-bootstrap interval):\n";
  for (const auto& l : x["laws"]) {
    if (l.value("source", "") != "climb") continue;
    const auto& at = l["at_target"];
    std::string lr = "lr " + num(at[0]) + (at[1].is_number() ? " [" + num(at[1]) + ", " + num(at[2]) + "]" : "");
    char line[256];
    std::snprintf(line, sizeof line, "    %-16s %-32s weight %-6s %s\n", l["name"].get<std::string>().c_str(),
                  lr.c_str(), Sig(l["weight"].get<double>(), "%.2f").c_str(),
                  l["consistent"].get<bool>() ? "the data allow it" : "ruled out by the data");
    out << line;
  }
  const double apart = v["disagreement_octaves"].get<double>();
  const auto& regret = v["regret"];
  if (v["flagged"].get<bool>()) {
    out << "  verdict        flagged: " << v["why"].get<std::string>() << "\n";
  } else {
    out << "  verdict        not flagged: the laws the data allow part by " << Sig(apart, "%.2f")
        << " octave there and the predicted p80 regret is " << Sig(100 * regret["p80"].get<double>(), "%.2g") << "%\n";
  }
  out << "  climb LR       " << num(v["lr"]) << " (80% [" << num(v["lr_80"][0]) << ", " << num(v["lr_80"][1])
      << "], 90% [" << num(v["lr_90"][0]) << ", " << num(v["lr_90"][1]) << "]); predicted regret "
      << Sig(100 * regret["mean"].get<double>(), "%.2g") << "% (p80 " << Sig(100 * regret["p80"].get<double>(), "%.2g")
      << (x["target"]["rule"] == "climb" ? "%); the plan's peak LR (probes ran)\n"
                                         : "%); the plan's peak LR is still its rule's (no probe has run)\n");
  if (v["undecided"].is_string()) out << "  undecided      " << v["undecided"].get<std::string>() << "\n";
  if (v["next_probe"].is_object() &&
      v["next_probe"]["node_hours"].get<double>() > v["budget_node_hours"].get<double>()) {
    out << "                 (that probe is over the probe budget of " << Sig(v["budget_node_hours"].get<double>(), "%.3g")
        << " node-hours: raise scales.probe_budget, or run it by hand)\n";
  }
  const auto& runs = x["probes"];
  out << "  probes         " << (runs.empty() ? std::string("none run") : std::to_string(runs.size()) + " run")
      << " (probes: " << v["probes"].get<std::string>() << ", budget "
      << Sig(100 * v["probe_budget"].get<double>(), "%.3g") << "% of the sweep's " << Sig(v["sweep_node_hours"].get<double>(), "%.3g")
      << " node-hours; spent " << Sig(v["probe_node_hours"].get<double>(), "%.3g") << ")\n";
  for (const auto& r : runs) {
    std::string lrs, trials;
    for (const auto& lr : r["lrs"]) lrs += (lrs.empty() ? "" : ", ") + Sig(lr.get<double>(), "%.3g");
    for (const auto& t : r["trials"]) trials += (trials.empty() ? "" : ", ") + std::to_string(t.get<int>());
    out << "    batch " << r["batch"].get<int64_t>() << " (" << r["micro_batches"].get<int>()
        << " micro-batches): lrs {" << lrs << "}, trials " << trials << "; best lr " << num(r["best_lr"]) << "\n";
  }
}

void PrintPlan(const v1::Search& s, size_t used, const search::ScalePlan& p,
               const std::vector<search::LossBandPoint>& band, const HeroShape& shape,
               const std::vector<std::string>& notes, const nlohmann::json& extrapolation, std::ostream& out) {
  out << "hero plan from search " << s.id() << " '" << s.name() << "' (" << used << " trials fitted; intervals "
      << std::lround(p.interval_level * 100) << "% nominal)\n";
  out << "  node group     " << shape.nodes << " node(s) x " << shape.ranks_per_node << " rank(s)\n";
  out << "  global batch   " << p.global_batch;
  if (p.ramp.size() > 1) {
    out << "  (ramp:";
    for (const auto& r : p.ramp) out << " " << r.global_batch << "@" << r.step;
    out << ")";
  }
  out << "\n  peak LR        " << IntervalText(p.peak_lr) << "   (linear rule " << p.linear_rule_lr << ", sqrt rule "
      << p.sqrt_rule_lr << ")\n";
  out << "  LR rule        " << p.lr_rule << ": " << p.lr_rule_why << "\n";
  PrintVerdict(extrapolation, out);
  out << "  warmup         " << p.warmup_steps << " steps; decay " << p.decay << "; optimizer " << p.optimizer << "\n";
  out << "  steps          " << p.steps;
  if (!std::isnan(p.steps_to_target.value)) {
    out << "; steps to val_loss " << p.target_loss << ": " << IntervalText(p.steps_to_target);
  }
  if (!std::isnan(p.final_loss.value)) out << "; predicted final val_loss " << IntervalText(p.final_loss);
  out << "\n";
  if (!band.empty()) {
    out << "  live val_loss band";
    for (const auto& b : band) {
      char buf[64];
      std::snprintf(buf, sizeof buf, " %lld:[%.3g,%.3g]", static_cast<long long>(b.step), b.loss.lo, b.loss.hi);
      out << buf;
    }
    out << "\n";
    if (std::isnan(p.final_loss.lo)) {
      out << "  (the final val_loss has no interval: the band is the near-best trials' spread around its value)\n";
    }
  }
  out << "  from:\n";
  for (const auto& src : p.sources) out << "    " << src << "\n";
  for (const auto& n : notes) out << "  note: " << n << "\n";
  for (const auto& w : p.warnings) out << "  WARNING: " << w << "\n";
}

struct PromoteOptions {
  int64_t search_id = 0;
  int nodes = 0;
  int ranks_per_node = 0;
  int64_t batch = 0;
  int64_t per_node_batch = 0;
  double budget = 0;
  bool dry_run = false;
  bool probe = false;
  bool stop_outside_band = false;
  std::string lr_rule = "fit";
  bool submit = false;
  bool wait = false;
  int pick = -1;        // several objectives: the front's trial to plan from
  std::string weights;  // or the weights that choose it
  HeroJobOptions job;
};

void AddPromoteOptions(CLI::App* cmd, PromoteOptions* opt) {
  cmd->add_option("SEARCH", opt->search_id, "the search whose trials swept batch sizes and learning rates")->required();
  cmd->add_option("--nodes", opt->nodes,
                  "nodes of the hero run (default: the search's); alone, the global batch is nodes x the per-node "
                  "batch of the largest swept batch")->check(CLI::Range(1, 100000));
  cmd->add_option("--ranks-per-node", opt->ranks_per_node, "ranks per node (default: the search's)")
      ->check(CLI::Range(1, 4096));
  auto* batch = cmd->add_option("--batch", opt->batch, "global batch of the hero run")
                    ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  cmd->add_option("--per-node-batch", opt->per_node_batch, "global batch = nodes x this")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30))
      ->excludes(batch);
  cmd->add_option("--budget", opt->budget, "training budget in examples (default: steps to the fitted target loss)")
      ->check([](const std::string& v) {
        char* end = nullptr;
        const double x = std::strtod(v.c_str(), &end);
        return end != v.c_str() && *end == '\0' && x > 0 && std::isfinite(x)
                   ? std::string()
                   : v + " is not a positive number of examples";
      });
  cmd->add_option("--lr-rule", opt->lr_rule,
                  "which law sets the peak LR: fit (default: the loss-surface power law, or once the search ran "
                  "the climb's probes the climb's posterior; name surface_fit for the power law then), joint_fit (McCandlish "
                  "eps_max/(1 + B_noise/B) tied to the measured noise scale: the better rule where the best LR "
                  "levels off past the noise scale, as in bench/extrapolation's full synthetic run; see "
                  "docs/BENCHMARKS.md), or one of the other fits and baselines")
      ->check(CLI::IsMember(search::LrRuleNames()));
  cmd->add_flag("--dry-run", opt->dry_run, "print the plan and stop");
  auto* pick = cmd->add_option("--pick", opt->pick,
                               "several objectives: plan from this trial (its number) of the Pareto front; with "
                               "constraints: from this completed trial, if feasible")
                   ->check(CLI::Range(0, 1 << 30));
  cmd->add_option("--weights", opt->weights,
                  "several objectives: plan from the front's point with the lowest weighted sum of the objectives, "
                  "each normalised over the front (W1,W2,...: one per objective)")
      ->excludes(pick);
  cmd->add_flag("--probe", opt->probe,
                "run the climb's next probe (a few learning rates at a larger batch, on the search's nodes by "
                "gradient accumulation: {micro_batches}) as trials of the search, wait for them, refit and print "
                "the plan with the updated verdict (nothing is submitted; whatever the probe budget)");
  cmd->add_flag("--wait", opt->wait,
                "follow the hero run until it ends, saying when its validation loss leaves the predicted band "
                "(and when it comes back), then print its result");
  cmd->add_flag("--submit", opt->submit,
                "submit the hero run as its own Slurm batch job on --nodes nodes: one ladder-worker per node in a "
                "pool of the job's own (the run goes only there, nothing else does), reporting to this "
                "coordinator; the job ends with the hero search (with --dry-run: print the script)");
  cmd->add_option("--time", opt->job.batch.time, "--submit: the job's time limit (Slurm's --time)");
  cmd->add_option("--partition", opt->job.batch.partition, "--submit: Slurm partition");
  cmd->add_option("--account", opt->job.batch.account, "--submit: Slurm account to charge");
  cmd->add_option("--signal-lead", opt->job.batch.signal_lead_s,
                  "--submit: seconds before the time limit at which the hero run checkpoints and stops")
      ->check(CLI::Range(10, 86400))
      ->capture_default_str();
  cmd->add_option("--advertise", opt->job.advertise,
                  "--submit: the coordinator's host:port as the job's nodes reach it (default: --server's)")
      ->check([](const std::string& v) { return HostPortError(v); });
  cmd->add_flag("--stop-outside-band", opt->stop_outside_band,
                "the coordinator stops the hero run when its validation loss rises above the predicted band "
                "(default: it warns when the loss leaves the band either way; below it only warns)");
}

// The combinations CLI11 cannot check; false (with the message said) when the command line is refused.
bool CheckPromoteOptions(const PromoteOptions& opt, CLI::App* cmd) {
  for (const char* o : {"--time", "--partition", "--account", "--signal-lead", "--advertise"}) {
    if (cmd->count(o) > 0 && !opt.submit) {
      std::cerr << "ladder promote: " << o << " is an option of --submit\n";
      return false;
    }
  }
  if (opt.probe && (opt.submit || opt.dry_run || opt.wait)) {
    std::cerr << "ladder promote: --probe runs a probe and prints the plan: not with --dry-run, --submit or --wait\n";
    return false;
  }
  if (opt.wait && (opt.submit || opt.dry_run)) {
    std::cerr << "ladder promote: --wait follows a hero run submitted here (not with --dry-run or --submit: "
                 "follow that one with ladder search show or ladder watch)\n";
    return false;
  }
  return true;
}

// The search and every trial with its whole curve (what the fit reads); notes say where a curve was thinned.
bool FetchTrialsWithCurves(Client& client, int64_t search_id, v1::Search* s, std::vector<v1::Trial>* trials,
                           std::vector<std::string>* notes, int* exit_code) {
  std::vector<v1::Trial> listed;
  if (!FetchSearchAndTrials(client, search_id, "promote", s, &listed, exit_code)) return false;
  for (const auto& t : listed) {
    v1::GetTrialRequest treq;
    treq.set_trial_id(t.id());
    treq.set_include_metrics(true);
    treq.set_max_metric_points(100000);  // the most GetTrial gives: the fit reads the whole curve
    v1::GetTrialResponse tresp;
    if (!client.Call(&v1::Ladder::Stub::GetTrial, treq, &tresp, "promote", exit_code)) return false;
    if (tresp.metrics_step_stride() > 0) {
      notes->push_back("trial " + std::to_string(t.id()) + " reported more points than one answer carries; its " +
                       "curve is read at the multiples of step " + std::to_string(tresp.metrics_step_stride()) +
                       " and its last step");
    }
    trials->push_back(tresp.trial());
  }
  return true;
}

// The hero run's shape and what the plan aims at, from the options and the search (--nodes alone: weak scaling).
search::PlanTarget HeroTarget(const PromoteOptions& opt, const v1::Search& s, const search::ScalingReport& report,
                              HeroShape* shape, std::vector<std::string>* notes) {
  shape->nodes = opt.nodes > 0 ? opt.nodes : std::max(1, s.group().nodes());
  shape->ranks_per_node = opt.ranks_per_node > 0 ? opt.ranks_per_node : std::max(1, s.group().ranks_per_node());
  search::PlanTarget target;
  target.global_batch = opt.batch;
  if (opt.per_node_batch > 0) {
    target.nodes = shape->nodes;
    target.per_node_batch = opt.per_node_batch;
  } else if (opt.nodes > 0 && opt.batch == 0 && !(opt.budget > 0)) {
    // --nodes alone: weak scaling, each node keeps the per-node batch of the largest swept batch.
    const int64_t largest = report.best_lr.back().global_batch;  // with a convergent trial
    const int trial_nodes = std::max(1, s.group().nodes());
    target.nodes = shape->nodes;
    target.per_node_batch = std::max<int64_t>(1, largest / trial_nodes);
    notes->push_back("global batch: --nodes alone keeps the per-node batch of the largest swept batch with a "
                     "convergent trial (" + std::to_string(largest) + " over " + std::to_string(trial_nodes) +
                     " node(s): " + std::to_string(target.per_node_batch) + " per node" +
                     (largest % trial_nodes ? ", rounded down" : "") + "); --per-node-batch or --batch chooses another");
  }
  target.examples = opt.budget;
  if (opt.budget > 0) {  // the trials' compute is their examples (steps x batch): the compute laws' unit
    target.compute = opt.budget;
    target.compute_per_example = 1;
  }
  return target;
}

// The hero run's command: the best completed trial's, with the plan's batch, LR and schedule; empty with `error`.
// With several objectives, `chosen` (the front's point --pick or --weights chose) instead of the best.
std::vector<std::string> BestTrialCommand(const v1::Search& s, const std::vector<v1::Trial>& trials,
                                          const std::vector<search::ScaleTrial>& scale, const search::ScalePlan& plan,
                                          const HeroShape& shape, int64_t chosen, std::string* error) {
  for (const auto& t : RankTrials(s, trials)) {
    if (t.state() != v1::TRIAL_COMPLETED || t.probe()) continue;  // a probe's command accumulates micro-batches
    if (t.infeasible()) continue;  // it broke a constraint: never the hero run's configuration
    if (chosen != 0 && t.id() != chosen) continue;
    for (const auto& sc : scale) {
      if (sc.id == "trial " + std::to_string(t.number())) return HeroCommand(t, sc, plan, shape, error);
    }
  }
  *error = s.constraints_size() > 0 ? "no completed feasible trial to take the command from"
                                     : "no completed trial to take the command from";
  return {};
}

// One swept run at the sweep's largest batch in node-hours (the probes' unit: probe_plan.h node_hours_per_run): the
// median node-seconds of the trials there; 1 (runs) when they report none, said in `notes`.
double RunNodeHours(const std::vector<v1::Trial>& trials, const std::vector<search::ScaleTrial>& scale,
                    std::vector<std::string>* notes) {
  int64_t largest = 0;
  for (const auto& t : scale) largest = std::max(largest, t.global_batch);
  std::vector<double> hours;
  for (const auto& sc : scale) {
    if (sc.global_batch != largest) continue;
    for (const auto& t : trials) {
      if (sc.id == "trial " + std::to_string(t.number()) && t.node_seconds() > 0) hours.push_back(t.node_seconds() / 3600);
    }
  }
  if (hours.empty()) {
    notes->push_back("probe costs are counted in runs at the largest swept batch (its trials report no node-seconds)");
    return 1;
  }
  std::sort(hours.begin(), hours.end());
  return hours[hours.size() / 2];
}

// The climb (search/scaling/climb.h) at the plan's batch after the probes the search ran (its trials marked
// probe): which candidate laws the data still allow there, the LR's posterior and predicted regret, and the next
// probe (the last one's extension, or where undecided the probe that would decide). Nothing runs from here; the
// spec's scales.probes and probe_budget are read (defaults without `scales:`).
ClimbVerdict JudgeLaws(const v1::Search& s, const std::vector<v1::Trial>& trials,
                       const std::vector<search::ScaleTrial>& scale, int64_t batch, std::vector<std::string>* notes) {
  ClimbVerdict v;
  auto spec = search::ParseSpec(s.spec_yaml(), "search " + std::to_string(s.id()));
  if (spec.ok() && spec.spec->scales.enabled) {
    v.scales = true;
    v.probes = spec.spec->scales.probes;
    v.probe_budget = spec.spec->scales.probe_budget;
  }
  search::ClimbOptions options;
  options.probe_budget = v.probe_budget;
  ProbeTrials split = SplitProbes(trials, scale);
  v.runs = split.runs;
  if (split.last) split.last->target_batch = batch, split.last->nodes = std::max(1, s.group().nodes());
  options.probe.node_hours_per_run = RunNodeHours(trials, split.sweep, notes);
  auto climb = search::NextProbe(split.sweep, split.probes, split.last, {batch}, options);
  if (!climb.ok()) {
    v.error = climb.error;
    return v;
  }
  v.result = std::move(*climb.value);
  return v;
}

// A plan, fitted and ready to show or submit.
struct PlannedHero {
  v1::Search search;
  size_t fitted = 0;  // trials the fit used
  search::ScalePlan plan;
  std::vector<search::LossBandPoint> band;
  HeroShape shape;
  nlohmann::json plan_json;
  ClimbVerdict verdict;  // the climb after the probes run so far
  std::vector<std::string> command;
  std::vector<std::string> notes;
  std::string error;  // no command (the plan is still shown)
  std::optional<FrontChoice> choice;  // several objectives: the point of the front planned from
};

// Several objectives: the point of the front --pick or --weights chooses (none for one objective without them);
// false (the reason said, exit 2) when there is none.
bool ChoosePoint(const PromoteOptions& opt, const v1::Search& s, const std::vector<v1::Trial>& trials,
                 std::optional<FrontChoice>* out, int* exit_code) {
  if (s.objectives_size() == 0 && opt.pick < 0 && opt.weights.empty()) return true;
  std::vector<double> weights;
  std::string error;
  if (!opt.weights.empty() && !ParseWeights(opt.weights, &weights, &error)) {
    std::cerr << "ladder promote: " << error << "\n";
    *exit_code = kBadInput;
    return false;
  }
  FrontChoice c = ChooseFromFront(s, trials, opt.pick, weights);
  if (!c.error.empty()) {
    std::cerr << "ladder promote: " << c.error << "\n";
    *exit_code = kBadInput;
    return false;
  }
  *out = std::move(c);
  return true;
}

// Fetch, fit, plan: false (exit_code set, the reason said) when no plan can be made.
bool PlanHero(Client& client, const PromoteOptions& opt, PlannedHero* h, int* exit_code) {
  std::vector<v1::Trial> trials;
  if (!FetchTrialsWithCurves(client, opt.search_id, &h->search, &trials, &h->notes, exit_code)) return false;
  const v1::Search& s = h->search;
  if (!ChoosePoint(opt, s, trials, &h->choice, exit_code)) return false;
  const auto all = ScaleTrialsFrom(s, trials, &h->notes);
  // The plan's own fits (its LR rule, steps, optimizer, warmup, loss band) read the sweep alone; the probes reach
  // the plan through the climb (JudgeLaws). A probe is a few LRs at one larger batch, its optimum not bracketed
  // until its extensions end: taken as a swept batch, its best loss moved the steps-examples trade-off (seen on
  // scales-synthetic at 1024: B_crit 646 -> 117, LARS, warmup past the last step, a final loss of 2.26 against
  // a stated [1.64, 1.70]).
  const auto scale = SplitProbes(trials, all).sweep;
  auto report = search::FitScaling(scale);
  if (!report.ok()) {
    std::cerr << "ladder promote: search " << s.id() << ": cannot fit the scaling laws: " << report.error << "\n";
    for (const auto& n : h->notes) std::cerr << "  note: " << n << "\n";
    *exit_code = kFailed;
    return false;
  }
  auto target = HeroTarget(opt, s, *report.value, &h->shape, &h->notes);
  search::PlanOptions plan_options;
  plan_options.lr_rule = *search::ParseLrRule(opt.lr_rule);  // checked against LrRuleNames() above
  auto plan = search::PlanRun(*report.value, scale, target, plan_options);
  if (!plan.ok()) {
    std::cerr << "ladder promote: " << plan.error << " (give --nodes, --batch, --per-node-batch or --budget)\n";
    *exit_code = kBadInput;
    return false;
  }
  h->plan = *plan.value;
  h->fitted = scale.size();
  h->band = LiveBand(h->plan, scale);
  if (opt.stop_outside_band && h->band.empty()) {
    // The flag would be accepted and then watch nothing.
    std::cerr << "ladder promote: --stop-outside-band: this plan predicts no loss band to stop on (see "
                 "final_loss in the plan's sources: `--dry-run` prints them); submit without the flag\n";
    *exit_code = kBadInput;
    return false;
  }
  h->verdict = JudgeLaws(s, trials, all, h->plan.global_batch, &h->notes);
  // Once probes ran, the default rule is the climb's posterior (search/scaling/climb.h TakeClimbLr).
  if (opt.lr_rule == "fit" && !h->verdict.runs.empty() && h->verdict.At()) {
    search::TakeClimbLr(h->plan, *h->verdict.At(), h->verdict.runs.size());
  }
  h->plan_json = PlanJson(h->plan, h->band, h->shape, opt.stop_outside_band, &*report.value, &h->verdict);
  if (h->choice) h->plan_json["front_choice"] = h->choice->json;  // said in the plan, and stored with the hero run
  h->command = BestTrialCommand(s, trials, scale, h->plan, h->shape, h->choice ? h->choice->trial_id : 0, &h->error);
  return true;
}

// The climb's probes as trials of the search, the plan made again from every trial after each: with --probe the
// next one (whatever the budget; none when the verdict is decided), else, for a `scales:` search with
// `probes: auto`, while a target is flagged (or the last probe is not bracketed) and the next probe fits the budget.
// False (exit_code set) when a probe could not run or the plan could not be made again.
bool ClimbWithProbes(Client& client, const GlobalOptions& g, const PromoteOptions& opt, PlannedHero* h,
                     Interrupt* interrupt, int* exit_code) {
  constexpr int kMaxProbeSteps = 12;  // a guard: the budget ends the climb first
  for (int step = 0; step < (opt.probe ? 1 : kMaxProbeSteps); ++step) {
    const ClimbVerdict& v = h->verdict;
    const bool none = !v.result || !v.result->next_probe || (v.result->decided && !v.result->next_probe->extension);
    if (none && opt.probe) {
      h->notes.push_back(std::string("--probe: no probe to run (") +
                         (!v.result ? "the laws could not be fitted" : v.result->decided ? "the verdict is decided"
                                                                       : "no probe batch lies below the target") + ")");
    }
    if (none) return true;
    const search::Probe next = *v.result->next_probe;
    const double budget = v.result->budget_node_hours, spent = v.result->probe_node_hours;  // before *h changes
    const bool fits = spent + next.node_hours <= budget + 1e-9;
    if (!opt.probe && !fits) return true;
    if (!RunProbe(client, opt.search_id, next, g.json, interrupt, exit_code)) return false;
    PlannedHero again;
    if (!PlanHero(client, opt, &again, exit_code)) return false;
    *h = std::move(again);
    if (!fits) {
      h->notes.push_back("the probe at batch " + std::to_string(next.global_batch) + " (" +
                         Sig(next.node_hours, "%.3g") + " node-hours) ran over the probe budget (" +
                         Sig(budget, "%.3g") + " node-hours, " + Sig(std::max(0.0, budget - spent), "%.3g") +
                         " of it left): --probe runs it whatever the budget");
    }
  }
  return true;
}

// Says the plan (JSON or text); false when promote ends here (a dry run, or no command to run).
bool ShowPlan(const PlannedHero& h, const PromoteOptions& opt, bool json, int* exit_code) {
  if (json) {
    nlohmann::json out = {
        {"search_id", h.search.id()}, {"plan", h.plan_json}, {"command", h.command}, {"notes", h.notes}};
    if (!h.error.empty()) out["error"] = h.error;
    if (opt.dry_run || opt.probe || !h.error.empty()) {
      std::cout << out.dump() << "\n";
      *exit_code = h.error.empty() ? kOk : kFailed;
      return false;
    }
    return true;
  }
  PrintPlan(h.search, h.fitted, h.plan, h.band, h.shape, h.notes,
            h.plan_json.contains("extrapolation") ? h.plan_json["extrapolation"] : nlohmann::json(), std::cout);
  if (h.choice) std::cout << "  point          " << h.choice->how << "\n";
  if (!h.command.empty()) {
    std::cout << "  command       ";
    for (const auto& w : h.command) std::cout << " " << w;
    std::cout << "\n";
  }
  if (!h.error.empty()) {
    std::cerr << "ladder promote: " << h.error << "\n";
    *exit_code = kFailed;
    return false;
  }
  if ((opt.dry_run && !opt.submit) || opt.probe) {
    *exit_code = kOk;
    return false;
  }
  return true;
}

// The hero run as a one-trial search at hero priority with its plan, here or (--submit) in a Slurm job of its
// own; with --wait, followed to its end.
void SubmitHero(Client& client, const GlobalOptions& g, PromoteOptions& opt, const PlannedHero& h,
                Interrupt* interrupt, int* exit_code) {
  const v1::Search& s = h.search;
  v1::CreateSearchRequest creq;
  creq.set_spec_yaml(HeroSpecYaml(s, h.command, h.shape));
  creq.set_spec_path("ladder promote " + std::to_string(s.id()));
  creq.set_priority(v1::PRIORITY_HERO);
  creq.set_plan_json(h.plan_json.dump());
  if (opt.submit) {
    opt.job.batch.nodes = h.shape.nodes;
    opt.job.dry_run = opt.dry_run;
    *exit_code = SubmitHeroJob(client, g, opt.job, s.id(), [&](const std::string& pool) {
      HeroShape in_pool = h.shape;
      in_pool.pool = pool;
      return HeroSpecYaml(s, h.command, in_pool);
    }, creq);
    return;
  }
  v1::CreateSearchResponse cresp;
  if (!client.Call(&v1::Ladder::Stub::CreateSearch, creq, &cresp, "promote", exit_code)) return;
  if (g.json) {
    // With --wait, one JSON object in the end: the hero run's result, as `search start --wait --json`.
    if (!opt.wait) {
      std::cout << nlohmann::json{{"search_id", s.id()}, {"hero_search_id", cresp.search().id()},
                                  {"plan", h.plan_json}, {"command", h.command}}
                       .dump()
                << "\n";
    }
  } else {
    std::cout << "hero run submitted: search " << cresp.search().id() << " at hero priority (it preempts search "
              << "trials on the nodes it needs); where it stands against its band: ladder search show "
              << cresp.search().id() << "; live: ladder watch " << cresp.search().id() << "\n";
  }
  *exit_code = kOk;
  if (!opt.wait) return;
  auto final_search = FollowSearch(client, cresp.search().id(), g.json, interrupt, exit_code);
  if (!final_search) return;
  *exit_code = PrintResultTable(client, *final_search, g, 1);
}

}  // namespace

void SetupPromote(CLI::App& app, GlobalOptions& g, int& exit_code) {
  auto opt = std::make_shared<PromoteOptions>();
  auto* cmd = app.add_subcommand(
      "promote", "Plan a hero run from a search's trials (global batch, LR, warmup, decay, optimizer) and submit it");
  AddPromoteOptions(cmd, opt.get());
  cmd->callback([opt, cmd, &g, &exit_code] {
    if (!CheckPromoteOptions(*opt, cmd)) {
      exit_code = kBadInput;
      return;
    }
    // As `search start --wait`: signals go to one thread, before gRPC starts its own.
    auto interrupt = std::make_shared<Interrupt>();
    if (opt->wait || opt->probe) HandleStopSignals([interrupt](int) { interrupt->Fire(); });
    Client client(g);
    PlannedHero hero;
    if (!PlanHero(client, *opt, &hero, &exit_code)) return;
    const bool auto_probes = !opt->dry_run && hero.verdict.scales && hero.verdict.probes;
    if ((opt->probe || auto_probes) && !ClimbWithProbes(client, g, *opt, &hero, interrupt.get(), &exit_code)) return;
    if (!ShowPlan(hero, *opt, g.json, &exit_code)) return;
    SubmitHero(client, g, *opt, hero, interrupt.get(), &exit_code);
  });
}

}  // namespace ladder::cli
