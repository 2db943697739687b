// ladder-climb-bench (bench/climb): the climb of search/scaling/climb.h counted honestly on random noisy-quadratic
// instances. Each instance's dials (spectrum decay, noise, examples) are drawn so that the bend of its best LR lies
// below the sweep, inside the targets' range, or past the targets, in turn; a sweep at batches 16..256 (half-octave
// LR grids extended until bracketed, 3 seeds) is simulated with SampledLoss; the targets are 16x and 32x the largest
// swept batch; the climb runs with default options, its probes simulated by the same model. Per target it prints
// the oracle, the pre-probe and final predictions, and at the end one JSON object (the last line). Writes no files.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench/nqm_sweep.h"
#include "search/scaling/climb.h"

namespace {

using ladder::bench::NoisyQuadratic;
using ladder::search::ClimbResult;
using ladder::search::LrPosterior;

const char* kClassNames[] = {"below", "inside", "past"};

// log2 of the best LR on a quarter-octave grid below the edge, within [lo, hi] (the oracle without its refinement:
// for classes).
double CoarseBest(const NoisyQuadratic& q, int64_t batch, double lo, double hi) {
  double best = hi, best_loss = 1e300;
  for (double x = hi; x >= lo - 1e-9; x -= 0.25) {
    const double l = q.ExpectedLoss(std::exp2(x), batch);
    if (l < best_loss) best_loss = l, best = x;
  }
  return best;
}

// The batch where the best LR's slope d log2 lr / d log2 B first drops below 0.5 (doublings from 16); 2^20: never.
// Each doubling searches 2 octaves either side of the last best LR (it moves at most 1 octave a doubling).
double BendBatch(const NoisyQuadratic& q) {
  const double edge = std::log2(2.0 / q.h_max);
  double prev = CoarseBest(q, 16, edge - 20, edge);
  for (int64_t b = 32; b <= (1 << 16); b *= 2) {
    const double x = CoarseBest(q, b, prev - 2, std::min(edge, prev + 2));
    if (x - prev < 0.5) return static_cast<double>(b);
    prev = x;
  }
  return 1 << 20;
}

int ClassOf(double bend, int64_t largest_swept, int64_t last_target) {
  if (bend <= static_cast<double>(largest_swept)) return 0;
  return bend <= static_cast<double>(last_target) ? 1 : 2;
}

NoisyQuadratic Draw(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  NoisyQuadratic q;
  q.alpha = 0.8 + 1.7 * u(rng);
  q.noise = std::pow(10.0, -2 + 5 * u(rng));
  q.examples = static_cast<int64_t>(std::exp2(17 + 6 * u(rng)));
  q.init_scale = 1.0;
  return q;
}

struct TargetRow {
  int cls = 0;
  double err_before = 0, err = 0, regret_before = 0, regret = 0;
  double seed_spread = 0;  // the oracle's seed-to-seed sd of the final loss, relative to its loss
  bool within_goal = false;  // regret <= max(1%, 2 seed_spread)
  bool flagged = false, flag_right = false, confident_miss = false;
  bool cov80_before = false, cov90_before = false, cov80 = false, cov90 = false;
  double width80 = 0, width90 = 0;
};

double RegretOf(const NoisyQuadratic& q, double log2_lr, int64_t batch, double oracle_loss) {
  const double l = q.ExpectedLoss(std::exp2(log2_lr), batch);
  return std::isfinite(l) ? l / oracle_loss - 1 : 1e9;
}

TargetRow Score(const NoisyQuadratic& q, int cls, int64_t batch, const LrPosterior& before, const LrPosterior& after,
                bool flagged, bool decided) {
  const auto oracle = q.Oracle(batch);
  const double x = std::log2(oracle.lr);
  TargetRow r;
  r.cls = cls;
  r.err_before = std::abs(before.log2_lr - x), r.err = std::abs(after.log2_lr - x);
  r.regret_before = RegretOf(q, before.log2_lr, batch, oracle.loss);
  r.regret = RegretOf(q, after.log2_lr, batch, oracle.loss);
  r.seed_spread = q.LossSd(oracle.lr, batch) / oracle.loss;
  r.within_goal = r.regret <= std::max(0.01, 2 * r.seed_spread);
  r.flagged = flagged;
  r.flag_right = flagged == (r.err_before > 0.5 || r.regret_before > 0.01);
  r.confident_miss = (!flagged && r.err_before > 0.5) || (decided && r.err > 0.5);
  r.cov80_before = x >= before.lo80 && x <= before.hi80, r.cov90_before = x >= before.lo90 && x <= before.hi90;
  r.cov80 = x >= after.lo80 && x <= after.hi80, r.cov90 = x >= after.lo90 && x <= after.hi90;
  r.width80 = after.hi80 - after.lo80, r.width90 = after.hi90 - after.lo90;
  std::printf("  target %6lld oracle %.4g | sweep %.4g err %.2f regret %.2f%% %s | final %.4g [%.4g, %.4g] err %.2f "
              "regret %.2f%% (seed spread %.1f%%) in80 %d in90 %d%s\n",
              static_cast<long long>(batch), oracle.lr, std::exp2(before.log2_lr), r.err_before,
              100 * r.regret_before, flagged ? "flagged" : "not flagged", std::exp2(after.log2_lr),
              std::exp2(after.lo90), std::exp2(after.hi90), r.err, 100 * r.regret, 100 * r.seed_spread, r.cov80, r.cov90, decided ? " decided" : "");
  return r;
}

// One-sided 95% Clopper–Pearson lower bound of a proportion k/n.
double ClopperPearsonLower(int k, int n) {
  if (k <= 0 || n <= 0) return 0;
  auto tail = [&](double p) {  // P(X >= k | n, p)
    double s = 0;
    for (int i = k; i <= n; ++i) {
      s += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) + i * std::log(p) +
                    (n - i) * std::log1p(-p));
    }
    return s;
  };
  double lo = 0, hi = 1;
  for (int it = 0; it < 60; ++it) {
    const double mid = (lo + hi) / 2;
    (tail(mid) < 0.05 ? lo : hi) = mid;
  }
  return lo;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct Tally {
  std::vector<TargetRow> rows;
  std::vector<double> cost_fraction;  // per instance: probe node-hours / sweep node-hours
  int probes = 0, undecided = 0;
};

// Instance `inst`'s task: drawn until its bend falls in class inst % 3 (or the given dials).
NoisyQuadratic InstanceTask(int inst, std::mt19937_64& rng, const double dials[3], int64_t largest, int64_t last,
                            int* cls) {
  NoisyQuadratic q = Draw(rng);
  for (int tries = 0; dials[0] <= 0 && tries < 400 && ClassOf(BendBatch(q), largest, last) != inst % 3; ++tries) {
    q = Draw(rng);
  }
  if (dials[0] > 0) q.alpha = dials[0], q.noise = dials[1], q.examples = static_cast<int64_t>(dials[2]);
  *cls = ClassOf(BendBatch(q), largest, last);
  return q;
}

void PrintClimb(int inst, int cls, const NoisyQuadratic& q, size_t sweep_runs, const ClimbResult& c, int64_t last) {
  std::printf("instance %d (%s; alpha %.2f noise %.3g examples %lld): %zu sweep runs, %zu probes (%.1f%% of the "
              "sweep)%s\n",
              inst, kClassNames[cls], q.alpha, q.noise, static_cast<long long>(q.examples), sweep_runs,
              c.probes.size(), 100 * c.probe_node_hours / c.sweep_node_hours,
              c.decided ? "" : ("; undecided: " + c.undecided).c_str());
  for (const auto& t : c.probe_trials) {
    std::printf("  probe batch %lld lr %.4g seed %lld loss %.5g (expected %.5g)\n",
                static_cast<long long>(t.global_batch), t.peak_lr, static_cast<long long>(t.seed), t.final_loss,
                q.ExpectedLoss(t.peak_lr, t.global_batch));
  }
  for (const auto& l : c.laws.laws) {
    std::printf("  law %s weight %.3f%s delta %.2f: lr at %lld %.4g\n", l.name.c_str(), l.weight,
                l.consistent ? "" : " (rejected)", l.delta, static_cast<long long>(last),
                std::exp2(l.Log2Lr(static_cast<double>(last))));
  }
}

// One instance: its sweep, the climb with probes simulated by the same model, the targets scored.
void RunInstance(int inst, int cls, const NoisyQuadratic& q, std::mt19937_64& rng, const std::vector<int64_t>& targets,
                 Tally& tally) {
  ladder::bench::NqmSweepPlan plan;
  plan.seed_base = 1000 * static_cast<uint64_t>(inst);
  std::uniform_real_distribution<double> offset(-1.5, 1.5);
  plan.first_guess_log2 = std::log2(q.Oracle(plan.batches.front()).lr) + offset(rng);
  const auto sweep = ladder::bench::SimulateSweep(q, plan);
  int probe_index = 0;
  auto runner = [&](const ladder::search::Probe& p) {
    if (!p.extension) ++probe_index;  // an extension reuses its probe's seed
    return ladder::bench::SimulateProbe(q, p, plan.seed_base + 100 + static_cast<uint64_t>(probe_index));
  };
  auto climb = ladder::search::Climb(sweep, targets, runner);
  if (!climb.ok()) {
    std::printf("instance %d: %s\n", inst, climb.error.c_str());
    return;
  }
  const ClimbResult& c = *climb.value;
  PrintClimb(inst, cls, q, sweep.size(), c, targets.back());
  for (const auto& t : c.targets) {
    if (t.flagged) {
      std::printf("  target %lld flagged by the sweep: %s\n", static_cast<long long>(t.global_batch),
                  t.flag_why.c_str());
    }
    tally.rows.push_back(Score(q, cls, t.global_batch, t.before, t.after, t.flagged, t.decided));
  }
  tally.cost_fraction.push_back(c.probe_node_hours / c.sweep_node_hours);
  tally.probes += static_cast<int>(c.probes.size());
  tally.undecided += c.decided ? 0 : 1;
}

void PrintSummary(int instances, const Tally& t) {
  int n = static_cast<int>(t.rows.size()), c80 = 0, c90 = 0, c80b = 0, c90b = 0, misses = 0, flags = 0, right = 0;
  int within = 0;
  std::vector<double> spreads;
  double worst_err = 0, worst_regret = 0, worst_cost = 0, mean_cost = 0;
  std::vector<double> errs, errs_before, widths80, widths90, regrets;
  for (const TargetRow& r : t.rows) {
    c80 += r.cov80, c90 += r.cov90, c80b += r.cov80_before, c90b += r.cov90_before;
    misses += r.confident_miss, flags += r.flagged, right += r.flag_right, within += r.within_goal;
    spreads.push_back(r.seed_spread);
    worst_err = std::max(worst_err, r.err), worst_regret = std::max(worst_regret, r.regret);
    errs.push_back(r.err), errs_before.push_back(r.err_before), regrets.push_back(r.regret);
    widths80.push_back(r.width80), widths90.push_back(r.width90);
  }
  for (double f : t.cost_fraction) worst_cost = std::max(worst_cost, f), mean_cost += f;
  if (!t.cost_fraction.empty()) mean_cost /= static_cast<double>(t.cost_fraction.size());
  auto frac = [n](int k) { return n ? static_cast<double>(k) / n : 0.0; };
  std::printf(
      "{\"instances\": %d, \"targets\": %d, \"log2_err\": %.3f, \"log2_err_median\": %.3f, "
      "\"log2_err_median_before\": %.3f, \"regret\": %.3f, \"regret_median\": %.4f, \"coverage_80\": %.3f, "
      "\"coverage_90\": %.3f, \"coverage_80_before\": %.3f, \"coverage_90_before\": %.3f, \"coverage_instances\": %d, "
      "\"coverage_80_lower95\": %.3f, \"coverage_90_lower95\": %.3f, \"confident_misses\": %d, \"flagged\": %d, "
      "\"flag_right\": %d, \"probes\": %d, \"undecided_instances\": %d, \"probe_cost_fraction\": %.3f, "
      "\"probe_cost_fraction_mean\": %.4f, \"median_width_octaves\": %.3f, \"median_width80_octaves\": %.3f, "
      "\"seed_spread_median\": %.4f, \"regret_within_goal\": %d}\n",
      instances, n, worst_err, Median(errs), Median(errs_before), 100 * worst_regret, 100 * Median(regrets),
      frac(c80), frac(c90), frac(c80b), frac(c90b), n, ClopperPearsonLower(c80, n), ClopperPearsonLower(c90, n),
      misses, flags, right, t.probes, t.undecided, worst_cost, mean_cost, Median(widths90), Median(widths80),
      100 * Median(spreads), within);
}

}  // namespace

int main(int argc, char** argv) {
  int instances = 200;
  uint64_t seed = 1;
  double dials[3] = {0, 0, 0};  // --dials ALPHA,NOISE,EXAMPLES: every instance is this one (to reproduce a case)
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) {
      instances = 60;
    } else if (!std::strcmp(argv[i], "--instances") && i + 1 < argc) {
      instances = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--dials") && i + 1 < argc) {
      if (std::sscanf(argv[++i], "%lf,%lf,%lf", &dials[0], &dials[1], &dials[2]) != 3) return 2;
    } else if (!std::strcmp(argv[i], "--seed") && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else {
      std::fprintf(stderr, "usage: ladder-climb-bench [--quick] [--instances N] [--seed S] [--dials A,NOISE,EXAMPLES]\n");
      return 2;
    }
  }
  const int64_t largest = ladder::bench::NqmSweepPlan{}.batches.back();
  const std::vector<int64_t> targets = {16 * largest, 32 * largest};
  std::mt19937_64 rng(seed);
  Tally tally;
  for (int inst = 0; inst < instances; ++inst) {
    int cls = 0;
    const NoisyQuadratic q = InstanceTask(inst, rng, dials, largest, targets.back(), &cls);
    RunInstance(inst, cls, q, rng, targets, tally);
  }
  PrintSummary(instances, tally);
  return 0;
}
