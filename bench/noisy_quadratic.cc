#include "bench/noisy_quadratic.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

namespace ladder::bench {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kDivergedFactor = 1e6;  // a run whose loss grew this many times its initial loss diverged

// One direction after T steps at a constant LR: the factor a^T on the initial value and the variance V the
// noise added.
struct Direction {
  double decay = 0;     // (1 − η h)^T
  double variance = 0;  // η² c / B · Σ_{k<T} r^k, r = (1 − η h)²
};

Direction Evolve(double lr, double h, double c, int64_t batch, int64_t steps) {
  const double a = 1.0 - lr * h;
  const double r = a * a;
  const double t = static_cast<double>(steps);
  Direction d;
  d.decay = std::pow(a, t);
  // Σ_{k<T} r^k, written so that it stays exact near r = 1 (tiny η h, or η h near 2).
  double sum;
  if (r == 1.0) {
    sum = t;
  } else {
    const double log_r = std::log(r);
    sum = std::expm1(t * log_r) / std::expm1(log_r);
  }
  d.variance = lr * lr * c / static_cast<double>(batch) * sum;
  return d;
}

}  // namespace

double NoisyQuadratic::Curvature(int i) const { return h_max * std::pow(static_cast<double>(i + 1), -alpha); }

int64_t NoisyQuadratic::Steps(int64_t batch) const {
  const double s = std::floor(epochs * static_cast<double>(examples) / static_cast<double>(std::max<int64_t>(1, batch)));
  return std::max<int64_t>(1, static_cast<int64_t>(s));
}

double NoisyQuadratic::ExpectedLoss(double lr, int64_t batch) const {
  const int64_t steps = Steps(batch);
  double initial = 0, loss = 0;
  for (int i = 0; i < dims; ++i) {
    const double h = Curvature(i);
    const Direction d = Evolve(lr, h, noise * h, batch, steps);
    initial += 0.5 * h * init_scale * init_scale;
    loss += 0.5 * h * (d.decay * d.decay * init_scale * init_scale + d.variance);
  }
  if (!std::isfinite(loss) || loss > kDivergedFactor * initial) return kInf;
  return floor_loss + loss;
}

double NoisyQuadratic::LossSd(double lr, int64_t batch) const {
  const int64_t steps = Steps(batch);
  double var = 0;
  for (int i = 0; i < dims; ++i) {
    const double h = Curvature(i);
    const Direction d = Evolve(lr, h, noise * h, batch, steps);
    // Over seeds θ_i ~ N(0, S), S = a^{2T} init² + V; Var(½ h θ²) = ½ h² S².
    const double s = d.decay * d.decay * init_scale * init_scale + d.variance;
    var += 0.5 * h * h * s * s;
  }
  return std::isfinite(var) ? std::sqrt(var) : kInf;
}

double NoisyQuadratic::SampledLoss(double lr, int64_t batch, uint64_t seed) const {
  const int64_t steps = Steps(batch);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  double initial = 0, loss = 0;
  for (int i = 0; i < dims; ++i) {
    // Two draws per direction, in a fixed order: the same seed gives the same θ0 and z at every LR and batch.
    const double theta0 = init_scale * normal(rng);
    const double z = normal(rng);
    const double h = Curvature(i);
    const Direction d = Evolve(lr, h, noise * h, batch, steps);
    const double theta = d.decay * theta0 + std::sqrt(d.variance) * z;
    initial += 0.5 * h * init_scale * init_scale;
    loss += 0.5 * h * theta * theta;
  }
  if (!std::isfinite(loss) || loss > kDivergedFactor * initial) return kInf;
  return floor_loss + loss;
}

NoisyQuadratic::Optimum NoisyQuadratic::Oracle(int64_t batch) const {
  // A grid over 30 octaves below the stability edge finds the basin (the loss need not be unimodal in log LR
  // across a whole spectrum), then golden-section search refines it between the grid's neighbours.
  const double hi = std::log2(2.0 / h_max), lo = hi - 30.0;
  constexpr int kGrid = 241;  // 1/8 octave
  auto loss_at = [&](double x) { return ExpectedLoss(std::exp2(x), batch); };
  int best = 0;
  double best_loss = kInf;
  for (int k = 0; k < kGrid; ++k) {
    const double l = loss_at(lo + (hi - lo) * k / (kGrid - 1));
    if (l < best_loss) best_loss = l, best = k;
  }
  const double step = (hi - lo) / (kGrid - 1);
  double a = lo + step * std::max(0, best - 1), b = lo + step * std::min(kGrid - 1, best + 1);
  const double g = (std::sqrt(5.0) - 1) / 2;
  double x1 = b - g * (b - a), x2 = a + g * (b - a);
  double f1 = loss_at(x1), f2 = loss_at(x2);
  while (b - a > 1e-4) {
    if (f1 <= f2) {
      b = x2, x2 = x1, f2 = f1;
      x1 = b - g * (b - a), f1 = loss_at(x1);
    } else {
      a = x1, x1 = x2, f1 = f2;
      x2 = a + g * (b - a), f2 = loss_at(x2);
    }
  }
  const double x = (a + b) / 2;
  Optimum o{std::exp2(x), loss_at(x)};
  if (o.loss > best_loss) o = {std::exp2(lo + step * best), best_loss};
  return o;
}

}  // namespace ladder::bench
