#include "cli/extrapolation_json.h"

#include <algorithm>
#include <cmath>

namespace ladder::cli {

namespace {

nlohmann::json IntervalJson(const search::Interval& i) { return nlohmann::json::array({i.value, i.lo, i.hi}); }

// One law: its LR along the batches, and at the target with its interval; null when the report lacks it.
nlohmann::json Law(const search::ScalingReport& report, search::LrRule rule, const std::string& name,
                   const std::vector<double>& batches, const search::ScalePlan& plan) {
  nlohmann::json points = nlohmann::json::array();
  for (double b : batches) {
    auto lr = search::PredictLr(report, b, rule);
    if (!lr.ok() || !(lr.value->value > 0) || !std::isfinite(lr.value->value)) return nullptr;
    points.push_back({b, lr.value->value});
  }
  auto at = search::PredictLr(report, static_cast<double>(plan.global_batch), rule);
  return {{"name", name},
          {"points", points},
          {"at_target", at.ok() ? IntervalJson(*at.value) : nlohmann::json(nullptr)},
          {"chosen", name == plan.lr_rule},
          {"consistent", nullptr}};  // no test of the laws against the data yet
}

// A climb law over the batches, with its seed bootstrap's interval at the target (the report's level); null when
// a point is not a finite LR.
nlohmann::json ClimbLaw(const search::LawSet& set, const search::LawFit& law, const search::LawAtTarget* at,
                        const std::vector<double>& batches, double target, double level, bool chosen) {
  nlohmann::json points = nlohmann::json::array();
  for (double b : batches) {
    const double lr = std::exp2(set.FitLog2(law, b));  // anchored past the largest probe, as the climb predicts
    if (!(lr > 0) || !std::isfinite(lr)) return nullptr;
    points.push_back({b, lr});
  }
  std::vector<std::pair<double, double>> draws;
  const int index = static_cast<int>(&law - set.laws.data());
  for (size_t j = 0; j < law.draws.size(); ++j) {
    double x = search::DrawLog2(set, {index, law.draws[j], 1.0, static_cast<int>(j)}, target);
    if (std::isfinite(set.cap_log2)) x = std::min(x, set.cap_log2);
    if (std::isfinite(x)) draws.push_back({x, 1.0});
  }
  const double tail = (1 - level) / 2;
  const double lo = draws.empty() ? search::kNaN : std::exp2(search::WeightedQuantile(draws, tail));
  const double hi = draws.empty() ? search::kNaN : std::exp2(search::WeightedQuantile(draws, 1 - tail));
  return {{"name", law.name},
          {"source", "climb"},
          {"points", points},
          {"at_target", nlohmann::json::array({at ? at->lr : std::exp2(law.Log2Lr(target)), lo, hi})},
          {"chosen", chosen},
          {"consistent", law.consistent},
          {"weight", law.weight}};
}

nlohmann::json Verdict(const ClimbVerdict& climb) {
  if (!climb.result) return {{"error", climb.error}};
  const search::ClimbResult& r = *climb.result;
  const search::TargetOutcome& t = *climb.At();
  const search::LrPosterior& p = t.after;
  nlohmann::json probe = nullptr;
  if (r.next_probe) {
    probe = {{"batch", r.next_probe->global_batch},
             {"nodes", r.next_probe->nodes},
             {"micro_batches", r.next_probe->micro_batches},
             {"lrs", r.next_probe->lrs},
             {"node_hours", r.next_probe->node_hours},
             {"extension", r.next_probe->extension}};
  }
  return {{"batch", t.global_batch},
          {"flagged", t.flagged},
          {"why", t.flag_why},
          {"decided", t.decided},
          {"disagreement_octaves", p.disagreement},
          {"laws_apart", nlohmann::json::array({p.law_lo, p.law_hi})},
          {"lr", std::exp2(p.log2_lr)},
          {"lr_80", nlohmann::json::array({std::exp2(p.lo80), std::exp2(p.hi80)})},
          {"lr_90", nlohmann::json::array({std::exp2(p.lo90), std::exp2(p.hi90)})},
          {"regret", {{"mean", p.regret_mean}, {"p80", p.regret_p80}}},
          // decided: none, unless the last probe's optimum is not bracketed yet (its extension)
          {"next_probe", t.decided && !(r.next_probe && r.next_probe->extension) ? nlohmann::json(nullptr) : probe},
          {"undecided", r.undecided.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.undecided)},
          {"probes", climb.probes ? "auto" : "off"},
          {"probe_budget", climb.probe_budget},
          {"sweep_node_hours", r.sweep_node_hours},
          {"probe_node_hours", r.probe_node_hours},
          {"budget_node_hours", r.budget_node_hours}};
}

nlohmann::json ProbesJson(const std::vector<ProbeRun>& runs) {
  nlohmann::json out = nlohmann::json::array();
  for (const ProbeRun& r : runs) {
    out.push_back({{"batch", r.batch},
                   {"micro_batches", r.micro_batches},
                   {"lrs", r.lrs},
                   {"trials", r.trials},
                   {"best_lr", std::isfinite(r.best_lr) ? nlohmann::json(r.best_lr) : nlohmann::json(nullptr)}});
  }
  return out;
}

}  // namespace

nlohmann::json ExtrapolationJson(const search::ScalingReport& report, const search::ScalePlan& plan,
                                 const ClimbVerdict* climb) {
  nlohmann::json swept = nlohmann::json::array();
  for (const auto& b : report.best_lr) {
    swept.push_back({{"batch", b.global_batch},
                     {"lr", IntervalJson(b.lr)},
                     {"loss", b.loss},
                     {"trials", b.trials},
                     {"at_edge", b.at_edge}});
  }
  std::vector<double> batches;
  if (!report.best_lr.empty()) {
    const double lo = static_cast<double>(report.best_lr.front().global_batch);
    const double hi = 2 * std::max(static_cast<double>(report.best_lr.back().global_batch),
                                   static_cast<double>(plan.global_batch));
    for (int i = 0; i < kCurvePoints; ++i) {
      batches.push_back(lo * std::pow(hi / lo, static_cast<double>(i) / (kCurvePoints - 1)));
    }
  }
  nlohmann::json laws = nlohmann::json::array();
  // The default fit under the name of the law it resolves to (surface_fit, else power_fit), as plan.lr_rule says.
  const search::PowerLaw* fit = search::DefaultLaw(report, search::LrRule::kFit);
  const std::string fit_name = !fit ? "" : (report.surface_fit && fit == &*report.surface_fit) ? "surface_fit"
                                                                                               : "power_fit";
  std::vector<std::pair<search::LrRule, std::string>> rules;
  if (fit) rules.push_back({search::LrRule::kFit, fit_name});
  if (fit_name == "surface_fit" && report.power_fit) rules.push_back({search::LrRule::kPowerFit, "power_fit"});
  for (auto rule : {search::LrRule::kLrFit, search::LrRule::kJointFit, search::LrRule::kNoiseFit,
                    search::LrRule::kLinear, search::LrRule::kSqrt}) {
    rules.push_back({rule, search::LrRuleName(rule)});
  }
  for (const auto& [rule, name] : rules) {
    if (batches.empty()) break;
    if (auto law = Law(report, rule, name, batches, plan); !law.is_null()) laws.push_back(std::move(law));
  }
  const search::TargetOutcome* at = climb ? climb->At() : nullptr;
  if (at && !batches.empty()) {
    const search::LawSet& set = climb->result->laws;
    // A plan whose LR is the climb's (lr_rule climb) draws the heaviest consistent law thick.
    const search::LawFit* heaviest = nullptr;
    for (const search::LawFit& law : set.laws) {
      if (law.consistent && (!heaviest || law.weight > heaviest->weight)) heaviest = &law;
    }
    for (const search::LawFit& law : set.laws) {
      const search::LawAtTarget* mine = nullptr;
      for (const auto& l : at->laws) mine = l.name == law.name ? &l : mine;
      auto j = ClimbLaw(set, law, mine, batches, static_cast<double>(plan.global_batch), report.interval_level,
                        plan.lr_rule == "climb" && &law == heaviest);
      if (!j.is_null()) laws.push_back(std::move(j));
    }
  }
  const auto& edge = report.stability_edge;
  return {{"swept", swept},
          {"laws", laws},
          {"target", {{"batch", plan.global_batch}, {"lr", IntervalJson(plan.peak_lr)}, {"rule", plan.lr_rule}}},
          {"stability_edge", std::isfinite(edge.value) ? IntervalJson(edge) : nlohmann::json(nullptr)},
          {"probes", climb ? ProbesJson(climb->runs) : nlohmann::json::array()},
          {"verdict", climb ? Verdict(*climb) : nlohmann::json(nullptr)},
          {"interval_level", report.interval_level}};
}

}  // namespace ladder::cli
