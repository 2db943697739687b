// ladder promote SEARCH: plan a hero run from a finished search's trials (scale extrapolation), print the
// plan, and unless --dry-run submit it as a one-trial search at hero priority with the plan stored.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>

#include "cli/commands.h"
#include "cli/format.h"
#include "cli/hero_job.h"
#include "cli/promote_plan.h"
#include "cli/search_progress.h"
#include "common/address.h"
#include "search/scaling/extrapolation.h"
#include "search/scaling/scale_plan.h"

namespace ladder::cli {

namespace {

std::string Iv(const search::Interval& i) { return search::FormatInterval(i); }

void PrintPlan(const v1::Search& s, size_t used, const search::ScalePlan& p,
               const std::vector<search::LossBandPoint>& band, const HeroShape& shape,
               const std::vector<std::string>& notes, std::ostream& out) {
  out << "hero plan from search " << s.id() << " '" << s.name() << "' (" << used << " trials fitted; intervals "
      << std::lround(p.interval_level * 100) << "% nominal)\n";
  out << "  node group     " << shape.nodes << " node(s) x " << shape.ranks_per_node << " rank(s)\n";
  out << "  global batch   " << p.global_batch;
  if (p.ramp.size() > 1) {
    out << "  (ramp:";
    for (const auto& r : p.ramp) out << " " << r.global_batch << "@" << r.step;
    out << ")";
  }
  out << "\n  peak LR        " << Iv(p.peak_lr) << "   (linear rule " << p.linear_rule_lr << ", sqrt rule "
      << p.sqrt_rule_lr << ")\n";
  out << "  LR rule        " << p.lr_rule << ": " << p.lr_rule_why << "\n";
  out << "  warmup         " << p.warmup_steps << " steps; decay " << p.decay << "; optimizer " << p.optimizer << "\n";
  out << "  steps          " << p.steps;
  if (!std::isnan(p.steps_to_target.value)) {
    out << "; steps to val_loss " << p.target_loss << ": " << Iv(p.steps_to_target);
  }
  if (!std::isnan(p.final_loss.value)) out << "; predicted final val_loss " << Iv(p.final_loss);
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

}  // namespace

void SetupPromote(CLI::App& app, GlobalOptions& g, int& exit_code) {
  struct Options {
    int64_t search_id = 0;
    int nodes = 0;
    int ranks_per_node = 0;
    int64_t batch = 0;
    int64_t per_node_batch = 0;
    double budget = 0;
    bool dry_run = false;
    bool stop_outside_band = false;
    std::string lr_rule = "fit";
    bool submit = false;
    bool wait = false;
    HeroJobOptions job;
  };
  auto opt = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "promote", "Plan a hero run from a search's trials (global batch, LR, warmup, decay, optimizer) and submit it");
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
                  "which law sets the peak LR: fit (default: the loss-surface power law), joint_fit (McCandlish "
                  "eps_max/(1 + B_noise/B) tied to the measured noise scale: the better rule where the best LR "
                  "levels off past the noise scale, as in bench/extrapolation's full synthetic run; see "
                  "docs/BENCHMARKS.md), or one of the other fits and baselines")
      ->check(CLI::IsMember(search::LrRuleNames()));
  cmd->add_flag("--dry-run", opt->dry_run, "print the plan and stop");
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
  cmd->callback([opt, cmd, &g, &exit_code] {
    for (const char* o : {"--time", "--partition", "--account", "--signal-lead", "--advertise"}) {
      if (cmd->count(o) > 0 && !opt->submit) {
        std::cerr << "ladder promote: " << o << " is an option of --submit\n";
        exit_code = kBadInput;
        return;
      }
    }
    if (opt->wait && (opt->submit || opt->dry_run)) {
      std::cerr << "ladder promote: --wait follows a hero run submitted here (not with --dry-run or --submit: "
                   "follow that one with ladder search show or ladder watch)\n";
      exit_code = kBadInput;
      return;
    }
    // As `search start --wait`: signals go to one thread, before gRPC starts its own.
    auto interrupt = std::make_shared<Interrupt>();
    if (opt->wait) HandleStopSignals([interrupt](int) { interrupt->Fire(); });
    Client client(g);
    v1::Search s;
    std::vector<v1::Trial> listed;
    if (!FetchSearchAndTrials(client, opt->search_id, "promote", &s, &listed, &exit_code)) return;
    std::vector<v1::Trial> trials;
    std::vector<std::string> notes;
    for (const auto& t : listed) {
      v1::GetTrialRequest treq;
      treq.set_trial_id(t.id());
      treq.set_include_metrics(true);
      treq.set_max_metric_points(100000);  // the most GetTrial gives: the fit reads the whole curve
      v1::GetTrialResponse tresp;
      if (!client.Call(&v1::Ladder::Stub::GetTrial, treq, &tresp, "promote", &exit_code)) return;
      if (tresp.metrics_step_stride() > 0) {
        notes.push_back("trial " + std::to_string(t.id()) + " reported more points than one answer carries; its " +
                        "curve is read at the multiples of step " + std::to_string(tresp.metrics_step_stride()) +
                        " and its last step");
      }
      trials.push_back(tresp.trial());
    }
    auto scale = ScaleTrialsFrom(s, trials, &notes);
    auto report = search::FitScaling(scale);
    if (!report.ok()) {
      std::cerr << "ladder promote: search " << s.id() << ": cannot fit the scaling laws: " << report.error << "\n";
      for (const auto& n : notes) std::cerr << "  note: " << n << "\n";
      exit_code = kFailed;
      return;
    }
    HeroShape shape;
    shape.nodes = opt->nodes > 0 ? opt->nodes : std::max(1, s.group().nodes());
    shape.ranks_per_node = opt->ranks_per_node > 0 ? opt->ranks_per_node : std::max(1, s.group().ranks_per_node());
    search::PlanTarget target;
    target.global_batch = opt->batch;
    if (opt->per_node_batch > 0) {
      target.nodes = shape.nodes;
      target.per_node_batch = opt->per_node_batch;
    } else if (opt->nodes > 0 && opt->batch == 0 && !(opt->budget > 0)) {
      // --nodes alone: weak scaling, each node keeps the per-node batch of the largest swept batch.
      const int64_t largest = report.value->best_lr.back().global_batch;  // with a convergent trial
      const int trial_nodes = std::max(1, s.group().nodes());
      target.nodes = shape.nodes;
      target.per_node_batch = std::max<int64_t>(1, largest / trial_nodes);
      notes.push_back("global batch: --nodes alone keeps the per-node batch of the largest swept batch with a "
                      "convergent trial (" + std::to_string(largest) + " over " + std::to_string(trial_nodes) +
                      " node(s): " + std::to_string(target.per_node_batch) + " per node" +
                      (largest % trial_nodes ? ", rounded down" : "") +
                      "); --per-node-batch or --batch chooses another");
    }
    target.examples = opt->budget;
    if (opt->budget > 0) {  // the trials' compute is their examples (steps x batch): the compute laws' unit
      target.compute = opt->budget;
      target.compute_per_example = 1;
    }
    search::PlanOptions plan_options;
    plan_options.lr_rule = *search::ParseLrRule(opt->lr_rule);  // checked against LrRuleNames() above
    auto plan = search::PlanRun(*report.value, scale, target, plan_options);
    if (!plan.ok()) {
      std::cerr << "ladder promote: " << plan.error << " (give --nodes, --batch, --per-node-batch or --budget)\n";
      exit_code = kBadInput;
      return;
    }
    auto live_band = LiveBand(*plan.value, scale);
    if (opt->stop_outside_band && live_band.empty()) {
      // The flag would be accepted and then watch nothing.
      std::cerr << "ladder promote: --stop-outside-band: this plan predicts no loss band to stop on (see "
                   "final_loss in the plan's sources: `--dry-run` prints them); submit without the flag\n";
      exit_code = kBadInput;
      return;
    }
    auto plan_json = PlanJson(*plan.value, live_band, shape, opt->stop_outside_band);
    auto ranked = RankTrials(s, trials);
    const v1::Trial* best = nullptr;
    const search::ScaleTrial* best_scale = nullptr;
    for (const auto& t : ranked) {
      for (const auto& sc : scale) {
        if (sc.id == "trial " + std::to_string(t.number()) && t.state() == v1::TRIAL_COMPLETED) best = &t, best_scale = &sc;
      }
      if (best) break;
    }
    std::string error;
    std::vector<std::string> command =
        best ? HeroCommand(*best, *best_scale, *plan.value, shape, &error) : std::vector<std::string>{};
    if (!best) error = "no completed trial to take the command from";
    if (g.json) {
      nlohmann::json out = {{"search_id", s.id()}, {"plan", plan_json}, {"command", command}, {"notes", notes}};
      if (!error.empty()) out["error"] = error;
      if (opt->dry_run || !error.empty()) {
        std::cout << out.dump() << "\n";
        exit_code = error.empty() ? kOk : kFailed;
        return;
      }
    } else {
      PrintPlan(s, scale.size(), *plan.value, live_band, shape, notes, std::cout);
      if (!command.empty()) {
        std::cout << "  command       ";
        for (const auto& w : command) std::cout << " " << w;
        std::cout << "\n";
      }
      if (!error.empty()) {
        std::cerr << "ladder promote: " << error << "\n";
        exit_code = kFailed;
        return;
      }
      if (opt->dry_run && !opt->submit) {
        exit_code = kOk;
        return;
      }
    }
    v1::CreateSearchRequest creq;
    creq.set_spec_yaml(HeroSpecYaml(s, command, shape));
    creq.set_spec_path("ladder promote " + std::to_string(s.id()));
    creq.set_priority(v1::PRIORITY_HERO);
    creq.set_plan_json(plan_json.dump());
    if (opt->submit) {
      opt->job.batch.nodes = shape.nodes;
      opt->job.dry_run = opt->dry_run;
      exit_code = SubmitHeroJob(client, g, opt->job, s.id(), [&](const std::string& pool) {
        HeroShape in_pool = shape;
        in_pool.pool = pool;
        return HeroSpecYaml(s, command, in_pool);
      }, creq);
      return;
    }
    v1::CreateSearchResponse cresp;
    if (!client.Call(&v1::Ladder::Stub::CreateSearch, creq, &cresp, "promote", &exit_code)) return;
    if (g.json) {
      // With --wait, one JSON object in the end: the hero run's result, as `search start --wait --json`.
      if (!opt->wait) {
        std::cout << nlohmann::json{{"search_id", s.id()}, {"hero_search_id", cresp.search().id()},
                                    {"plan", plan_json}, {"command", command}}
                         .dump()
                  << "\n";
      }
    } else {
      std::cout << "hero run submitted: search " << cresp.search().id() << " at hero priority (it preempts search "
                << "trials on the nodes it needs); where it stands against its band: ladder search show "
                << cresp.search().id() << "; live: ladder watch " << cresp.search().id() << "\n";
    }
    exit_code = kOk;
    if (!opt->wait) return;
    auto final_search = FollowSearch(client, cresp.search().id(), g.json, interrupt.get(), &exit_code);
    if (!final_search) return;
    exit_code = PrintResultTable(client, *final_search, g, 1);
  });
}

}  // namespace ladder::cli
