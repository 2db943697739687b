// The learning-rate rules (LrRule): their names, the fit behind each (FitForRule, DefaultLaw), the LR each
// predicts at a batch with its interval (PredictLr); and PowerLaw::At.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "search/scaling/extrapolation.h"
#include "search/scaling/extrapolation_internal.h"

namespace ladder::search {
namespace {

using extrapolation_internal::Num;
using extrapolation_internal::Spread;

}  // namespace

double PowerLaw::At(double x) const { return coefficient.value * std::pow(x, exponent.value); }

const char* LrRuleName(LrRule rule) {
  switch (rule) {
    case LrRule::kFit: return "fit";
    case LrRule::kPowerFit: return "power_fit";
    case LrRule::kSurfaceFit: return "surface_fit";
    case LrRule::kLrFit: return "lr_fit";
    case LrRule::kNoiseFit: return "noise_fit";
    case LrRule::kJointFit: return "joint_fit";
    case LrRule::kLinear: return "linear";
    case LrRule::kSqrt: return "sqrt";
  }
  return "?";
}

namespace {
constexpr LrRule kAllRules[] = {LrRule::kFit,     LrRule::kPowerFit,  LrRule::kSurfaceFit, LrRule::kLrFit,
                                LrRule::kNoiseFit, LrRule::kJointFit, LrRule::kLinear,     LrRule::kSqrt};
}  // namespace

std::optional<LrRule> ParseLrRule(const std::string& name) {
  for (LrRule rule : kAllRules) {
    if (name == LrRuleName(rule)) return rule;
  }
  return std::nullopt;
}

std::vector<std::string> LrRuleNames() {
  std::vector<std::string> names;
  for (LrRule rule : kAllRules) names.emplace_back(LrRuleName(rule));
  return names;
}

const PowerLaw* DefaultLaw(const ScalingReport& r, LrRule rule) {
  if (rule == LrRule::kSurfaceFit || (rule == LrRule::kFit && r.surface_fit)) {
    return r.surface_fit ? &*r.surface_fit : nullptr;
  }
  if (rule == LrRule::kFit || rule == LrRule::kPowerFit) return r.power_fit ? &*r.power_fit : nullptr;
  return nullptr;
}

const LrBatchFit* FitForRule(const ScalingReport& r, LrRule rule, const char** name) {
  const LrBatchFit* fit = nullptr;
  LrRule used = rule;
  if (rule == LrRule::kJointFit) fit = r.joint_fit ? &*r.joint_fit : nullptr;
  if (rule == LrRule::kNoiseFit) fit = r.noise_fit ? &*r.noise_fit : nullptr;
  if (rule == LrRule::kLrFit) fit = r.lr_fit ? &*r.lr_fit : nullptr;
  if (name) *name = LrRuleName(used);
  return fit;
}

Fitted<Interval> PredictLr(const ScalingReport& r, double batch, LrRule rule) {
  if (!(batch >= 1)) return Fitted<Interval>::Fail("global_batch must be >= 1, got " + Num(batch));
  const double lv = r.interval_level;
  if (rule == LrRule::kLinear || rule == LrRule::kSqrt) {
    if (!std::isfinite(r.anchor.lr)) return Fitted<Interval>::Fail("no anchor: the report has no best LR");
    const double ratio = batch / static_cast<double>(r.anchor.global_batch);
    const double f = rule == LrRule::kLinear ? ratio : std::sqrt(ratio);
    Interval iv{r.anchor.lr * f, kNaN, kNaN};  // the anchor's own interval, when it is a swept batch's best
    for (const BestLr& b : r.best_lr) {
      if (b.global_batch == r.anchor.global_batch) iv.lo = b.lr.lo * f, iv.hi = b.lr.hi * f;
    }
    return Fitted<Interval>{iv, ""};
  }
  if (rule == LrRule::kFit || rule == LrRule::kPowerFit || rule == LrRule::kSurfaceFit) {
    const PowerLaw* law = DefaultLaw(r, rule);
    if (!law) {
      return Fitted<Interval>::Fail(std::string("rule ") + LrRuleName(rule) +
                                    ": the report has no such fit (see its notes)");
    }
    std::vector<double> draws;
    for (const auto& [c, a] : law->draws) draws.push_back(c * std::pow(batch, a));
    return Fitted<Interval>{Spread(law->At(batch), draws, lv), ""};
  }
  const LrBatchFit* fit = FitForRule(r, rule);
  if (!fit) {
    return Fitted<Interval>::Fail(std::string("rule ") + LrRuleName(rule) +
                                  ": the report has no such fit (see its notes)");
  }
  std::vector<double> draws;
  for (const auto& [eps, noise] : fit->draws) draws.push_back(eps / (1 + noise / batch));
  return Fitted<Interval>{Spread(fit->Lr(batch), draws, lv), ""};
}

}  // namespace ladder::search
