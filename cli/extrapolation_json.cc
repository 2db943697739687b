#include "cli/extrapolation_json.h"

#include <algorithm>
#include <cmath>

namespace ladder::cli {

namespace {

nlohmann::json Iv(const search::Interval& i) { return nlohmann::json::array({i.value, i.lo, i.hi}); }

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
          {"at_target", at.ok() ? Iv(*at.value) : nlohmann::json(nullptr)},
          {"chosen", name == plan.lr_rule},
          {"consistent", nullptr}};  // no test of the laws against the data yet
}

}  // namespace

nlohmann::json ExtrapolationJson(const search::ScalingReport& report, const search::ScalePlan& plan) {
  nlohmann::json swept = nlohmann::json::array();
  for (const auto& b : report.best_lr) {
    swept.push_back({{"batch", b.global_batch},
                     {"lr", Iv(b.lr)},
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
  const auto& edge = report.stability_edge;
  return {{"swept", swept},
          {"laws", laws},
          {"target", {{"batch", plan.global_batch}, {"lr", Iv(plan.peak_lr)}, {"rule", plan.lr_rule}}},
          {"stability_edge", std::isfinite(edge.value) ? Iv(edge) : nlohmann::json(nullptr)},
          {"probes", nlohmann::json::array()},
          {"interval_level", report.interval_level}};
}

}  // namespace ladder::cli
