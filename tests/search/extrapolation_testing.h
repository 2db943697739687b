#pragma once
// Shared by the extrapolation tests (extrapolation_fit_test.cc, scale_plan_test.cc): trials generated from known
// models (the McCandlish law with a parabola in log2 lr, a seed-replicated loss surface) and small plan helpers.
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "search/scaling/extrapolation.h"
#include "search/scaling/scale_plan.h"

namespace ladder::search::extrapolation_testing {

struct Truth {
  double eps_max = 0.8;
  double b_noise = 400;
  double loss_noise = 0.002;   // sd of the final loss around the model
  double noise_scale_sd = 0.15;  // log-normal spread of each trial's measured B_simple
};

inline double EpsOpt(const Truth& t, double b) { return t.eps_max / (1 + t.b_noise / b); }

// A sweep over a fixed LR grid (quarter octaves... here half octaves) at each batch; loss is a parabola in
// log2(lr / eps_opt(B)) plus noise; LRs beyond 4x the optimum diverge.
inline std::vector<ScaleTrial> MakeSweeps(const Truth& truth, const std::vector<int64_t>& batches, uint64_t seed,
                                   double lr_lo = 1e-3, double lr_hi = 8) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01(0, 1);
  std::vector<ScaleTrial> out;
  for (int64_t b : batches) {
    const double opt = EpsOpt(truth, static_cast<double>(b));
    for (double lr = lr_lo; lr <= lr_hi * 1.0001; lr *= std::sqrt(2.0)) {
      const double d = std::log2(lr / opt);
      if (d < -3.01) continue;  // a sweep of ±3 octaves around wherever it lands
      ScaleTrial t;
      t.id = "b" + std::to_string(b) + "-lr" + std::to_string(lr);
      t.global_batch = b;
      t.peak_lr = lr;
      t.steps = 1000000 / b;
      t.warmup_steps = t.steps / 10;
      t.decay = "cosine";
      if (d > 2.0) {
        t.diverged = true;
        t.final_loss = kNaN;
      } else {
        t.final_loss = 0.5 + 0.002 * b / 64.0 + 0.02 * d * d + truth.loss_noise * n01(rng);
        t.noise_scale = truth.b_noise * std::exp(truth.noise_scale_sd * n01(rng));
        t.noise_scale_start = truth.b_noise / 4 * std::exp(truth.noise_scale_sd * n01(rng));
      }
      out.push_back(t);
    }
  }
  return out;
}

// Sweeps at global batches 32..256 only, below the bend of ε_opt(B) at B_noise = 1500 (where it is nearly linear
// in B; the noise scale is measured), and their fit.
struct BelowTheBend {
  Truth truth;
  std::vector<ScaleTrial> trials;
  Fitted<ScalingReport> fit;
};
inline BelowTheBend SweepBelowTheBend(uint64_t seed) {
  BelowTheBend s;
  s.truth.b_noise = 1500;
  s.trials = MakeSweeps(s.truth, {32, 64, 128, 256}, seed);
  s.fit = FitScaling(s.trials, {});
  return s;
}

// A plan target: this global batch for a budget of 1,000 steps' examples.
inline PlanTarget ThousandStepsAt(int64_t batch) {
  PlanTarget t;
  t.global_batch = batch;
  t.examples = static_cast<double>(batch) * 1000;
  return t;
}

// Seed-replicated sweeps from a known loss surface loss(x, B) = L*(B) + k(B) (x − x*(B))² + noise, x = log2 lr,
// x*(B) = log2(c) + α log2 B; each batch has its own curvature and floor, and LRs 2.5 octaves above the optimum
// diverge. `flat_batch` (if any) gets a curvature 20x smaller and noise 4x larger: a sweep that says little.
inline std::vector<ScaleTrial> MakeSurface(double c, double alpha, const std::vector<int64_t>& batches, int seeds,
                                    double noise, uint64_t rng_seed, int64_t flat_batch = 0) {
  std::mt19937_64 rng(rng_seed);
  std::normal_distribution<double> n01(0, 1);
  std::vector<ScaleTrial> out;
  for (int64_t b : batches) {
    const double xs = std::log2(c) + alpha * std::log2(static_cast<double>(b));
    const bool flat = b == flat_batch;
    const double k = (flat ? 0.002 : 0.04) * (1 + 0.3 * std::log2(static_cast<double>(b)) / 4);
    const double floor = 0.3 + 0.01 * std::log2(static_cast<double>(b));
    for (int g = -6; g <= 6; ++g) {  // half octaves around the grid point nearest the optimum
      const double x = std::round(2 * xs) / 2 + 0.5 * g;
      for (int s = 0; s < seeds; ++s) {
        ScaleTrial t;
        t.id = "b" + std::to_string(b) + "-x" + std::to_string(x) + "-s" + std::to_string(s);
        t.global_batch = b;
        t.peak_lr = std::exp2(x);
        t.steps = 100000 / b;
        if (x - xs > 2.5) {
          t.diverged = true;
        } else {
          t.final_loss = floor + k * (x - xs) * (x - xs) + (flat ? 4 : 1) * noise * n01(rng);
        }
        out.push_back(t);
      }
    }
  }
  return out;
}


inline double PlannedExamples(const ScalePlan& plan) {
  if (plan.ramp.empty()) return static_cast<double>(plan.steps) * static_cast<double>(plan.global_batch);
  double examples = 0;
  for (size_t i = 0; i < plan.ramp.size(); ++i) {
    const int64_t end = i + 1 < plan.ramp.size() ? plan.ramp[i + 1].step : plan.steps;
    examples += static_cast<double>(end - plan.ramp[i].step) * static_cast<double>(plan.ramp[i].global_batch);
  }
  return examples;
}


// The plan's source line that starts with `prefix` ("" when none).
inline std::string SourceLine(const ScalePlan& p, const std::string& prefix) {
  for (const auto& s : p.sources) {
    if (s.rfind(prefix, 0) == 0) return s;
  }
  return "";
}

}  // namespace ladder::search::extrapolation_testing
