#include "search/scaling/scale_math.h"

#include <boost/math/distributions/students_t.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace ladder::search::internal {

std::optional<std::vector<double>> LeastSquares(const std::vector<double>& x, const std::vector<double>& y,
                                                const std::vector<double>& w, int p) {
  const size_t n = y.size();
  if (p < 1 || x.size() != n * static_cast<size_t>(p) || (!w.empty() && w.size() != n) || n < size_t(p)) {
    return std::nullopt;
  }
  // Augmented normal equations [X'WX | X'Wy].
  std::vector<std::vector<double>> m(p, std::vector<double>(p + 1, 0.0));
  for (size_t r = 0; r < n; ++r) {
    const double wr = w.empty() ? 1.0 : w[r];
    for (int i = 0; i < p; ++i) {
      for (int j = 0; j < p; ++j) m[i][j] += wr * x[r * p + i] * x[r * p + j];
      m[i][p] += wr * x[r * p + i] * y[r];
    }
  }
  double scale = 0;
  for (int i = 0; i < p; ++i) scale = std::max(scale, std::abs(m[i][i]));
  if (!(scale > 0)) return std::nullopt;
  for (int c = 0; c < p; ++c) {
    int piv = c;
    for (int r = c + 1; r < p; ++r) {
      if (std::abs(m[r][c]) > std::abs(m[piv][c])) piv = r;
    }
    if (std::abs(m[piv][c]) <= 1e-12 * scale) return std::nullopt;
    std::swap(m[c], m[piv]);
    for (int r = 0; r < p; ++r) {
      if (r == c) continue;
      const double f = m[r][c] / m[c][c];
      for (int k = c; k <= p; ++k) m[r][k] -= f * m[c][k];
    }
  }
  std::vector<double> beta(p);
  for (int i = 0; i < p; ++i) beta[i] = m[i][p] / m[i][i];
  return beta;
}

std::optional<Line> FitLine(const std::vector<double>& x, const std::vector<double>& y) {
  std::vector<double> design;
  design.reserve(2 * x.size());
  for (double v : x) {
    design.push_back(1.0);
    design.push_back(v);
  }
  auto beta = LeastSquares(design, y, {}, 2);
  if (!beta) return std::nullopt;
  return Line{(*beta)[0], (*beta)[1]};
}

Bounds LinePrediction(const std::vector<double>& x, const std::vector<double>& y, const Line& line, double x0,
                      double level) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const size_t n = x.size();
  if (n < 3 || y.size() != n) return {nan, nan};
  double mean = 0;
  for (double v : x) mean += v / static_cast<double>(n);
  double sxx = 0, sse = 0;
  for (size_t i = 0; i < n; ++i) {
    sxx += (x[i] - mean) * (x[i] - mean);
    const double r = y[i] - (line.a + line.b * x[i]);
    sse += r * r;
  }
  if (!(sxx > 0)) return {nan, nan};
  const double s = std::sqrt(sse / static_cast<double>(n - 2));
  const double t = boost::math::quantile(boost::math::students_t(static_cast<double>(n - 2)), 0.5 + level / 2);
  const double half = t * s * std::sqrt(1 + 1.0 / static_cast<double>(n) + (x0 - mean) * (x0 - mean) / sxx);
  const double mid = line.a + line.b * x0;
  return {mid - half, mid + half};
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(v.size() - 1);
  const size_t i = static_cast<size_t>(std::floor(pos));
  const size_t j = std::min(i + 1, v.size() - 1);
  return v[i] + (pos - static_cast<double>(i)) * (v[j] - v[i]);
}

double Median(std::vector<double> v) { return Quantile(std::move(v), 0.5); }

Bounds Spread(double value, const std::vector<double>& draws, double level) {
  std::vector<double> finite;
  for (double d : draws) {
    if (std::isfinite(d)) finite.push_back(d);
  }
  const auto [mn, mx] = std::minmax_element(finite.begin(), finite.end());
  if (finite.empty() || *mn == *mx) {
    return {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN()};
  }
  return {std::min(value, Quantile(finite, (1 - level) / 2)), std::max(value, Quantile(finite, 1 - (1 - level) / 2))};
}

double Minimize1D(const std::function<double(double)>& f, double lo, double hi, int grid) {
  if (!(hi > lo)) return lo;
  grid = std::max(grid, 3);
  int best = 0;
  double best_f = std::numeric_limits<double>::infinity();
  const double h = (hi - lo) / (grid - 1);
  for (int i = 0; i < grid; ++i) {
    const double fi = f(lo + h * i);
    if (fi < best_f) best_f = fi, best = i;
  }
  double a = lo + h * std::max(best - 1, 0), b = lo + h * std::min(best + 1, grid - 1);
  const double g = (std::sqrt(5.0) - 1) / 2;
  double c = b - g * (b - a), d = a + g * (b - a);
  double fc = f(c), fd = f(d);
  for (int it = 0; it < 60 && b - a > 1e-10 * (1 + std::abs(a)); ++it) {
    if (fc < fd) {
      b = d, d = c, fd = fc, c = b - g * (b - a), fc = f(c);
    } else {
      a = c, c = d, fc = fd, d = a + g * (b - a), fd = f(d);
    }
  }
  const double x = (a + b) / 2;
  return f(x) <= best_f ? x : lo + h * best;
}

}  // namespace ladder::search::internal
