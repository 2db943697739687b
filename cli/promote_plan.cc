#include "cli/promote_plan.h"

#include "cli/extrapolation_json.h"
#include "search/core/spec.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

namespace ladder::cli {

namespace {

// The value after `flag` in argv ("--lr 0.1" or "--lr=0.1"); empty when absent.
std::string FlagValue(const std::vector<std::string>& argv, const std::string& flag) {
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == flag && i + 1 < argv.size()) return argv[i + 1];
    if (argv[i].rfind(flag + "=", 0) == 0) return argv[i].substr(flag.size() + 1);
  }
  return "";
}

// Sets `flag` to `value` (replacing every occurrence, either spelling), appending it when absent.
void SetFlag(std::vector<std::string>* argv, const std::string& flag, const std::string& value) {
  std::vector<std::string> out;
  bool set = false;
  for (size_t i = 0; i < argv->size(); ++i) {
    const std::string& a = (*argv)[i];
    if (a == flag && i + 1 < argv->size()) {
      if (!set) out.insert(out.end(), {flag, value});
      set = true;
      ++i;
    } else if (a.rfind(flag + "=", 0) == 0) {
      if (!set) out.insert(out.end(), {flag, value});
      set = true;
    } else {
      out.push_back(a);
    }
  }
  if (!set) out.insert(out.end(), {flag, value});
  *argv = std::move(out);
}

// Drops every occurrence of `flag` (either spelling) with its value.
void RemoveFlag(std::vector<std::string>* argv, const std::string& flag) {
  std::vector<std::string> out;
  for (size_t i = 0; i < argv->size(); ++i) {
    const std::string& a = (*argv)[i];
    if (a == flag) {
      ++i;  // and its value
    } else if (a.rfind(flag + "=", 0) != 0) {
      out.push_back(a);
    }
  }
  *argv = std::move(out);
}

bool HasFlag(const std::vector<std::string>& argv, const std::string& flag) {
  return std::any_of(argv.begin(), argv.end(), [&](const std::string& a) { return a == flag || a.rfind(flag + "=", 0) == 0; });
}

std::string Sig6(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

double UpperMedian(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

std::vector<search::ScaleTrial> ScaleTrialsFrom(const v1::Search& search, const std::vector<v1::Trial>& trials,
                                                std::vector<std::string>* notes) {
  std::vector<search::ScaleTrial> out;
  for (const auto& t : trials) {
    const std::string name = "trial " + std::to_string(t.number());
    const bool diverged = t.state() == v1::TRIAL_FAILED && t.exit_code() == 3;
    if (t.workflow_step()) continue;
    if (t.state() != v1::TRIAL_COMPLETED && !diverged) {
      if (t.state() == v1::TRIAL_FAILED) notes->push_back(name + ": failed (" + t.error() + "); left out");
      continue;
    }
    search::ScaleTrial s;
    s.id = name;
    s.nodes = std::max(1, search.group().nodes());
    std::vector<double> noise;
    for (const auto& p : t.metrics()) {
      const auto& v = p.values();
      if (auto it = v.find("global_batch"); it != v.end()) s.global_batch = static_cast<int64_t>(it->second);
      if (auto it = v.find("lr"); it != v.end()) s.peak_lr = std::max(s.peak_lr, it->second);
      if (auto it = v.find("noise_scale"); it != v.end() && std::isfinite(it->second)) noise.push_back(it->second);
      if (auto it = v.find("sharpness"); it != v.end() && std::isfinite(it->second)) {
        s.sharpness = std::max(s.sharpness, std::abs(it->second));
      }
      s.steps = std::max<int64_t>(s.steps, p.step());
      if (auto it = v.find("val_loss"); it != v.end()) {
        s.curve.push_back({p.step(), it->second});
        s.final_loss = it->second;
        if (!(s.best_loss <= it->second)) s.best_loss = it->second;
      }
    }
    if (!noise.empty()) {
      s.noise_scale = UpperMedian({noise.begin() + static_cast<std::ptrdiff_t>(noise.size() / 2), noise.end()});
      s.noise_scale_start = noise[std::min(noise.size() - 1, noise.size() / 10)];
    }
    std::vector<std::string> argv(t.command().begin(), t.command().end());
    if (auto w = FlagValue(argv, "--warmup-steps"); !w.empty()) s.warmup_steps = std::atoll(w.c_str());
    if (auto f = FlagValue(argv, "--warmup-fraction"); !f.empty()) {
      s.warmup_steps = std::llround(std::atof(f.c_str()) * static_cast<double>(s.steps));
    }
    if (auto d = FlagValue(argv, "--decay"); !d.empty()) s.decay = d;
    if (auto o = FlagValue(argv, "--optimizer"); !o.empty()) s.optimizer = o;
    if (auto m = FlagValue(argv, "--momentum"); !m.empty()) s.momentum = std::atof(m.c_str());
    s.diverged = diverged;
    if (diverged) s.final_loss = search::kNaN;
    if (s.global_batch <= 0 || s.peak_lr <= 0 || s.steps <= 0 || (s.curve.empty() && !diverged)) {
      notes->push_back(name + ": its metrics lack global_batch, lr or val_loss (a ladder-train run reports them); "
                              "left out");
      continue;
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<std::string> HeroCommand(const v1::Trial& best, const search::ScaleTrial& best_scale,
                                     const search::ScalePlan& plan, const HeroShape& shape, std::string* error) {
  std::vector<std::string> argv(best.command().begin(), best.command().end());
  if (argv.empty()) {
    *error = "trial " + std::to_string(best.number()) + " has no command to start the hero run from";
    return {};
  }
  const int64_t ranks = static_cast<int64_t>(shape.nodes) * shape.ranks_per_node;
  const int64_t first_batch = plan.ramp.empty() ? plan.global_batch : plan.ramp.front().global_batch;
  if (first_batch % ranks != 0) {
    *error = "the plan's global batch " + std::to_string(first_batch) + " does not split over " +
             std::to_string(ranks) + " ranks";
    return {};
  }
  // Measurements that only fed the fit (the loss curvature: 12 double-backward passes each time) are not the
  // hero run's to pay for.
  RemoveFlag(&argv, "--curvature-every");
  RemoveFlag(&argv, "--curvature-rows");
  SetFlag(&argv, "--lr", Sig6(plan.peak_lr.value));
  SetFlag(&argv, "--batch-size", std::to_string(first_batch / ranks));
  RemoveFlag(&argv, "--warmup-fraction");  // the plan's warmup, in steps, replaces it
  SetFlag(&argv, "--warmup-steps", std::to_string(plan.warmup_steps));
  SetFlag(&argv, "--decay", plan.decay);
  SetFlag(&argv, "--optimizer", plan.optimizer);
  SetFlag(&argv, "--max-steps", std::to_string(plan.steps));
  if (plan.ramp.size() > 1) {
    std::string ramp;
    for (size_t i = 1; i < plan.ramp.size(); ++i) {
      ramp += (ramp.empty() ? "" : ",") + std::to_string(plan.ramp[i].step) + ":" +
              std::to_string(plan.ramp[i].global_batch / first_batch);
    }
    SetFlag(&argv, "--batch-ramp", ramp);
  }
  // Enough epochs for the steps (the best trial's epochs tell how many examples one epoch has).
  const std::string epochs_flag = FlagValue(argv, "--epochs");
  const double trial_epochs = epochs_flag.empty() ? 10 : std::atof(epochs_flag.c_str());
  const double per_epoch = static_cast<double>(best_scale.steps * best_scale.global_batch) / std::max(1.0, trial_epochs);
  if (per_epoch > 0) {
    const double examples = static_cast<double>(plan.steps) * static_cast<double>(plan.global_batch);
    SetFlag(&argv, "--epochs", std::to_string(static_cast<int64_t>(std::ceil(examples / per_epoch)) + 1));
  }
  if (!HasFlag(argv, "--checkpoint")) {
    SetFlag(&argv, "--checkpoint", "{checkpoint_dir}/hero.pt");
    SetFlag(&argv, "--checkpoint-every", std::to_string(std::max<int64_t>(1, plan.steps / 20)));
  }
  if (!HasFlag(argv, "--resume")) argv.push_back("--resume");
  return argv;
}

std::string HeroSpecYaml(const v1::Search& search, const std::vector<std::string>& command, const HeroShape& shape) {
  nlohmann::json words = command;
  std::string yaml;
  yaml += "name: " + search.name().substr(0, 58) + "-hero\n";
  yaml += "description: hero run promoted from search " + std::to_string(search.id()) + " by ladder promote\n";
  // One objective: the search's, or of several the first the trial prints (node_hours and wall_time are measured
  // by the coordinator, and the hero run is one trial).
  std::string metric = search.objective_metric();
  v1::Direction direction = search.direction();
  for (const auto& o : search.objectives()) {
    if (search::IsBuiltinMetric(o.metric())) continue;
    metric = o.metric();
    direction = o.direction();
    break;
  }
  yaml += std::string("objective: {metric: ") + metric + ", mode: " + (direction == v1::MAXIMIZE ? "max" : "min") +
          "}\n";
  yaml += "budget: {max_trials: 1, parallelism: 1, max_retries: 3, max_failed_trials: 1}\n";
  yaml += "resources: {nodes: " + std::to_string(shape.nodes) + ", ranks_per_node: " +
          std::to_string(shape.ranks_per_node) + ", gpus_per_rank: " + std::to_string(search.group().gpus_per_rank()) +
          (search.group().launcher() == v1::LAUNCHER_MPIRUN  ? ", launcher: mpirun"
           : search.group().launcher() == v1::LAUNCHER_SRUN ? ", launcher: srun"
                                                           : "") +
          (shape.pool.empty() ? "" : ", pool: " + shape.pool) + "}\n";
  yaml += "command: " + words.dump() + "\n";  // JSON is YAML: the words stay exact
  yaml += "space:\n  plan: {type: categorical, values: [hero]}\n";
  return yaml;
}

std::vector<search::LossBandPoint> LiveBand(const search::ScalePlan& plan,
                                            const std::vector<search::ScaleTrial>& trials) {
  // The loss of a curve at fraction f of its steps (linear between points; nullopt before its first point).
  auto at = [](const search::ScaleTrial& t, double f) -> std::optional<double> {
    const double step = f * static_cast<double>(t.steps);
    const auto& c = t.curve;
    if (c.empty() || step < static_cast<double>(c.front().step)) return std::nullopt;
    for (size_t i = 1; i < c.size(); ++i) {
      if (step <= static_cast<double>(c[i].step)) {
        const double a = static_cast<double>(c[i - 1].step), b = static_cast<double>(c[i].step);
        const double w = b > a ? (step - a) / (b - a) : 1.0;
        return c[i - 1].loss + w * (c[i].loss - c[i - 1].loss);
      }
    }
    return c.back().loss;
  };
  double best = search::kNaN;
  for (const auto& t : trials) {
    if (!t.diverged && std::isfinite(t.final_loss) && !(best <= t.final_loss)) best = t.final_loss;
  }
  std::vector<const search::ScaleTrial*> near;
  for (const auto& t : trials) {
    if (!t.diverged && std::isfinite(t.final_loss) && t.final_loss <= best * 1.25 && t.steps > 0) near.push_back(&t);
  }
  std::vector<search::LossBandPoint> band;
  if (near.empty() || plan.steps <= 0 || !std::isfinite(plan.final_loss.value)) return band;
  // Without an interval on the prediction (an exactly determined loss line), the band is the trials' spread alone.
  const bool has_interval = std::isfinite(plan.final_loss.lo) && std::isfinite(plan.final_loss.hi);
  const double final_lo = has_interval ? plan.final_loss.lo : plan.final_loss.value;
  const double final_hi = has_interval ? plan.final_loss.hi : plan.final_loss.value;
  double end_lo = std::numeric_limits<double>::infinity(), end_hi = -end_lo;
  for (const auto* t : near) {
    end_lo = std::min(end_lo, *at(*t, 1.0));
    end_hi = std::max(end_hi, *at(*t, 1.0));
  }
  for (int k = 1; k <= 10; ++k) {
    const double f = k / 10.0;
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const auto* t : near) {
      if (auto v = at(*t, f)) lo = std::min(lo, *v), hi = std::max(hi, *v);
    }
    if (!std::isfinite(lo)) continue;
    search::LossBandPoint p;
    p.step = static_cast<int64_t>(std::llround(f * static_cast<double>(plan.steps)));
    p.loss.lo = lo + (final_lo - end_lo);
    p.loss.hi = hi + (final_hi - end_hi);
    p.loss.value = (p.loss.lo + p.loss.hi) / 2;
    band.push_back(p);
  }
  return band;
}

nlohmann::json PlanJson(const search::ScalePlan& plan, const std::vector<search::LossBandPoint>& live_band,
                        const HeroShape& shape, bool stop_outside_band, const search::ScalingReport* report,
                        const ClimbVerdict* climb) {
  auto iv = [](const search::Interval& i) { return nlohmann::json::array({i.value, i.lo, i.hi}); };
  nlohmann::json ramp = nlohmann::json::array(), band = nlohmann::json::array(), envelope = nlohmann::json::array();
  for (const auto& r : plan.ramp) ramp.push_back({r.step, r.global_batch});
  for (const auto& b : live_band) band.push_back({b.step, b.loss.lo, b.loss.hi});
  for (const auto& b : plan.loss_band) envelope.push_back({b.step, b.loss.lo, b.loss.hi});
  nlohmann::json out = {{"nodes", shape.nodes},
                        {"ranks_per_node", shape.ranks_per_node},
                        {"global_batch", plan.global_batch},
                        {"ramp", ramp},
                        {"peak_lr", iv(plan.peak_lr)},
                        {"interval_level", plan.interval_level},
                        {"warmup_steps", plan.warmup_steps},
                        {"decay", plan.decay},
                        {"optimizer", plan.optimizer},
                        {"steps", plan.steps},
                        {"target_loss", plan.target_loss},
                        {"steps_to_target", iv(plan.steps_to_target)},  // NaN (no tradeoff fit) is written as null
                        {"final_loss", iv(plan.final_loss)},
                        {"loss_band", band},
                        {"final_loss_envelope", envelope},
                        {"linear_rule_lr", plan.linear_rule_lr},
                        {"sqrt_rule_lr", plan.sqrt_rule_lr},
                        {"stability_edge", plan.stability_edge},  // NaN (not measured) is written as null, as the rules' LRs
                        {"sources", plan.sources},
                        {"lr_rule", plan.lr_rule},
                        {"lr_rule_why", plan.lr_rule_why},
                        {"warnings", plan.warnings},
                        {"stop_outside_band", stop_outside_band}};
  if (report) out["extrapolation"] = ExtrapolationJson(*report, plan, climb);
  return out;
}

}  // namespace ladder::cli
