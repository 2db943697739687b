// ladder-extrapolation-fit: the scale-extrapolation library (search/scaling/extrapolation.h, search/scaling/scale_plan.h) on
// trials given as one JSON object on stdin; prints one JSON object on stdout. Used by bench/extrapolation.
//
// Input:
//   {"trials": [{"id", "global_batch", "peak_lr", "steps", "warmup_steps", "decay", "optimizer", "final_loss",
//                "best_loss", "noise_scale", "noise_scale_start", "sharpness", "momentum", "diverged", "compute", "seed",
//                "curve": [[step, loss], ...]}, ...],
//    "predict": [4096, 8192],                     global batches to predict the LR at (fit and baselines)
//    "oracle": [trials at other batches],          optional: the best LR of each of their sweeps
//    "options": {"seed": 0, "bootstrap": 200, "anchor": "largest" | "best", "neighbours": 2},
//    "plan": {"global_batch": 8192, "examples": 1e6, "nodes": 0, "per_node_batch": 0},   optional
//    "plans": {"batches": [4096, 8192], "examples": 1e6},   optional: one plan per batch, the same budget
//    "climb": {"targets": [4096, 8192], "probe_trials": [trials], "last_probe": {"global_batch", "micro_batches",
//              "lrs"} | null, "probe_budget": 0.1}}   optional: one step of the climb (search/scaling/climb.h
//              NextProbe, as `ladder promote` takes it), "trials" being the sweep's
// Output: {"best_lr": [...], "lr_fit": {...}, "noise_fit": {...}, "noise_ratio", "stability_edge", "tradeoff": {...},
//          "joint_fit": {...}, "power_fit": {...}, "surface_fit": {...}, "predictions": [{"batch",
//          "fit": [v, lo, hi], "power_fit", "surface_fit", "lr_fit", "noise_fit", "joint_fit", "linear", "sqrt"}],
//          "oracle": [{"batch", "lr": [v, lo, hi], "loss", "at_edge"}], "plan": {...}, "plans": [{...}, ...],
//          "climb": {"decided", "next_probe": {"global_batch", "micro_batches", "lrs", "node_hours", "extension"} | null,
//                    "sweep_node_hours", "probe_node_hours", "budget_node_hours", "undecided", "targets": [{"batch",
//                    "decided", "flagged", "why", "before": {"lr", "lo80", "hi80", "lo90", "hi90", "regret_p80"},
//                    "after": {...}, "laws": [{"name", "lr", "weight", "consistent"}]}]}, "notes": [...]}
// or {"error": "..."} with exit status 2.
#include <cmath>
#include <iostream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "search/scaling/climb.h"
#include "search/scaling/extrapolation.h"
#include "search/scaling/scale_plan.h"

using nlohmann::json;
using namespace ladder::search;

namespace {

json Iv(const Interval& iv) { return json::array({iv.value, iv.lo, iv.hi}); }

double Num(const json& j, const char* key, double def) {
  if (!j.contains(key) || j[key].is_null()) return def;
  return j[key].get<double>();
}

std::vector<ScaleTrial> ReadTrials(const json& arr) {
  std::vector<ScaleTrial> out;
  for (const json& j : arr) {
    ScaleTrial t;
    t.id = j.value("id", "");
    t.global_batch = j.value("global_batch", int64_t{0});
    t.peak_lr = Num(j, "peak_lr", 0);
    t.steps = j.value("steps", int64_t{0});
    t.warmup_steps = j.value("warmup_steps", int64_t{0});
    t.decay = j.value("decay", "none");
    t.optimizer = j.value("optimizer", "sgd");
    t.compute = Num(j, "compute", 0);
    t.final_loss = Num(j, "final_loss", kNaN);
    t.best_loss = Num(j, "best_loss", kNaN);
    t.noise_scale = Num(j, "noise_scale", 0);
    t.noise_scale_start = Num(j, "noise_scale_start", 0);
    t.sharpness = Num(j, "sharpness", 0);
    t.momentum = Num(j, "momentum", 0.9);
    t.diverged = j.value("diverged", false);
    t.seed = j.value("seed", int64_t{-1});
    if (j.contains("curve")) {
      for (const json& p : j["curve"]) t.curve.push_back({p.at(0).get<int64_t>(), p.at(1).get<double>()});
    }
    out.push_back(std::move(t));
  }
  return out;
}

json Fit(const std::optional<LrBatchFit>& f) {
  if (!f) return nullptr;
  return {{"eps_max", Iv(f->eps_max)}, {"b_noise", Iv(f->b_noise)}, {"identified", f->identified},
          {"rms_log2_residual", f->rms_log2_residual}};
}

json PlanOut(const ScalingReport& r, const std::vector<ScaleTrial>& trials, const json& pj) {
  PlanTarget target;
  target.global_batch = pj.value("global_batch", int64_t{0});
  target.nodes = pj.value("nodes", 0);
  target.per_node_batch = pj.value("per_node_batch", int64_t{0});
  target.examples = Num(pj, "examples", 0);
  auto plan = PlanRun(r, trials, target);
  if (!plan.ok()) return {{"error", plan.error}};
  const ScalePlan& p = *plan.value;
  json ramp = json::array();
  for (const RampStage& s : p.ramp) ramp.push_back({s.step, s.global_batch});
  return {{"global_batch", p.global_batch}, {"ramp", ramp}, {"peak_lr", Iv(p.peak_lr)},
          {"warmup_steps", p.warmup_steps}, {"decay", p.decay}, {"optimizer", p.optimizer}, {"steps", p.steps},
          {"final_loss", Iv(p.final_loss)}, {"sources", p.sources}};
}

json Posterior(const LrPosterior& p) {
  auto lr = [](double log2) { return std::isfinite(log2) ? json(std::exp2(log2)) : json(nullptr); };
  return {{"lr", lr(p.log2_lr)}, {"lo80", lr(p.lo80)}, {"hi80", lr(p.hi80)}, {"lo90", lr(p.lo90)},
          {"hi90", lr(p.hi90)}, {"regret_p80", std::isfinite(p.regret_p80) ? json(p.regret_p80) : json(nullptr)}};
}

// One step of the climb on the sweep's trials and the probes run so far (NextProbe: what `ladder promote` calls
// between probes; the caller runs the next probe while it fits the budget).
json ClimbOut(const std::vector<ScaleTrial>& sweep, const json& cj) {
  ClimbOptions options;
  options.probe_budget = cj.value("probe_budget", options.probe_budget);
  std::vector<int64_t> targets;
  for (const json& t : cj.at("targets")) targets.push_back(t.get<int64_t>());
  std::optional<Probe> last;
  if (cj.contains("last_probe") && cj["last_probe"].is_object()) {
    const json& lp = cj["last_probe"];
    Probe p;
    p.global_batch = lp.at("global_batch").get<int64_t>();
    p.micro_batches = lp.value("micro_batches", 1);
    p.target_batch = lp.value("target_batch", int64_t{0});
    p.lrs = lp.at("lrs").get<std::vector<double>>();
    last = p;
  }
  auto r = NextProbe(sweep, ReadTrials(cj.value("probe_trials", json::array())), last, targets, options);
  if (!r.ok()) return {{"error", r.error}};
  const ClimbResult& c = *r.value;
  json out{{"decided", c.decided}, {"sweep_node_hours", c.sweep_node_hours},
           {"probe_node_hours", c.probe_node_hours}, {"budget_node_hours", c.budget_node_hours},
           {"undecided", c.undecided}, {"next_probe", nullptr}, {"targets", json::array()}};
  if (c.next_probe) {
    const Probe& p = *c.next_probe;
    out["next_probe"] = {{"global_batch", p.global_batch}, {"target_batch", p.target_batch},
                         {"micro_batches", p.micro_batches}, {"lrs", p.lrs}, {"node_hours", p.node_hours},
                         {"extension", p.extension}};
  }
  for (const TargetOutcome& t : c.targets) {
    json laws = json::array();
    for (const LawAtTarget& l : t.laws) {
      laws.push_back({{"name", l.name}, {"lr", l.lr}, {"weight", l.weight}, {"consistent", l.consistent}});
    }
    out["targets"].push_back({{"batch", t.global_batch}, {"decided", t.decided}, {"flagged", t.flagged},
                              {"why", t.flag_why}, {"before", Posterior(t.before)}, {"after", Posterior(t.after)},
                              {"laws", laws}});
  }
  return out;
}

int Fail(const std::string& message) {
  std::cout << json{{"error", message}}.dump() << "\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) {
    std::cout << "usage: ladder-extrapolation-fit < input.json  (see the comment atop bench/extrapolation_fit.cc)\n";
    return std::string(argv[1]) == "--help" ? 0 : 2;
  }
  json in;
  try {
    const std::string text(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>{});
    in = json::parse(text);
  } catch (const std::exception& e) {
    return Fail(std::string("stdin: not JSON: ") + e.what());
  }
  try {
    const std::vector<ScaleTrial> trials = ReadTrials(in.value("trials", json::array()));
    ExtrapolationOptions o;
    const json opt = in.value("options", json::object());
    o.seed = opt.value("seed", uint64_t{0});
    o.bootstrap = opt.value("bootstrap", 200);
    o.parabola_neighbours = opt.value("neighbours", 2);
    o.anchor = opt.value("anchor", "largest") == "best" ? ScaleAnchor::kBestOverall : ScaleAnchor::kLargestBatch;
    auto fitted = FitScaling(trials, o);
    if (!fitted.ok()) return Fail(fitted.error);
    const ScalingReport& r = *fitted.value;
    json out;
    for (const BestLr& b : r.best_lr) {
      out["best_lr"].push_back({{"batch", b.global_batch}, {"lr", Iv(b.lr)}, {"loss", b.loss},
                                {"trials", b.trials}, {"at_edge", b.at_edge}, {"parabola", b.parabola}});
    }
    out["lr_fit"] = Fit(r.lr_fit);
    out["noise_fit"] = Fit(r.noise_fit);
    out["joint_fit"] = Fit(r.joint_fit);
    if (r.power_fit) {
      out["power_fit"] = {{"coefficient", Iv(r.power_fit->coefficient)}, {"exponent", Iv(r.power_fit->exponent)}};
    }
    if (r.surface_fit) {
      out["surface_fit"] = {{"coefficient", Iv(r.surface_fit->coefficient)},
                            {"exponent", Iv(r.surface_fit->exponent)}};
    }
    out["measured_noise_scale"] = Iv(r.measured_noise_scale);
    out["noise_ratio"] = std::isfinite(r.noise_ratio) ? json(r.noise_ratio) : json(nullptr);
    if (std::isfinite(r.stability_edge.value)) out["stability_edge"] = Iv(r.stability_edge);
    if (r.tradeoff) {
      out["tradeoff"] = {{"target_loss", r.tradeoff->target_loss}, {"s_min", Iv(r.tradeoff->s_min)},
                         {"e_min", Iv(r.tradeoff->e_min)}, {"b_crit", Iv(r.tradeoff->b_crit)}};
    }
    out["anchor"] = {{"batch", r.anchor.global_batch}, {"lr", r.anchor.lr}, {"trial", r.anchor.trial_id}};
    for (const json& b : in.value("predict", json::array())) {
      const double batch = b.get<double>();
      json p{{"batch", batch}};
      for (LrRule rule : {LrRule::kFit, LrRule::kPowerFit, LrRule::kSurfaceFit, LrRule::kLrFit, LrRule::kNoiseFit,
                          LrRule::kJointFit, LrRule::kLinear, LrRule::kSqrt}) {
        auto lr = PredictLr(r, batch, rule);
        p[LrRuleName(rule)] = lr.ok() ? Iv(*lr.value) : json(nullptr);
      }
      out["predictions"].push_back(p);
    }
    if (in.contains("oracle")) {
      std::map<int64_t, std::vector<ScaleTrial>> by_batch;
      for (ScaleTrial& t : ReadTrials(in["oracle"])) by_batch[t.global_batch].push_back(std::move(t));
      for (const auto& [batch, sweep] : by_batch) {
        auto b = FindBestLr(sweep, o.parabola_neighbours);
        if (!b.ok()) {
          out["oracle"].push_back({{"batch", batch}, {"error", b.error}});
        } else {
          out["oracle"].push_back({{"batch", batch}, {"lr", Iv(b.value->lr)}, {"loss", b.value->loss},
                                   {"at_edge", b.value->at_edge}, {"parabola", b.value->parabola}});
        }
      }
    }
    if (in.contains("plan")) out["plan"] = PlanOut(r, trials, in["plan"]);
    // One plan per target batch with the same budget (bench/extrapolation: the stated intervals' coverage).
    for (const json& b : in.value("plans", json::object()).value("batches", json::array())) {
      json pj = {{"global_batch", b}, {"examples", in["plans"].value("examples", 0.0)}};
      out["plans"].push_back(PlanOut(r, trials, pj));
    }
    if (in.contains("climb")) out["climb"] = ClimbOut(trials, in["climb"]);
    out["notes"] = r.notes;
    std::cout << out.dump() << "\n";
  } catch (const std::exception& e) {
    return Fail(std::string("stdin: bad field: ") + e.what());
  }
  return 0;
}
