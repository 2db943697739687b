#pragma once
// Internal to search/ (scale extrapolation): small least-squares and order-statistics helpers. Pure.
#include <functional>
#include <optional>
#include <vector>

namespace ladder::search::internal {

// Least squares for y ≈ X·β with `p` columns (X row-major, rows = y.size()), optional weights (empty: 1).
// Normal equations solved by Gaussian elimination with partial pivoting; nullopt when X'WX is singular.
std::optional<std::vector<double>> LeastSquares(const std::vector<double>& x, const std::vector<double>& y,
                                                const std::vector<double>& w, int p);

// y ≈ a + b·x; nullopt with fewer than 2 distinct x.
struct Line {
  double a = 0, b = 0;
};
std::optional<Line> FitLine(const std::vector<double>& x, const std::vector<double>& y);

// The q-quantile (0..1) by linear interpolation; `v` need not be sorted. NaN when empty.
double Quantile(std::vector<double> v, double q);
double Median(std::vector<double> v);

// A bootstrap interval: `value` (the fit on all data) with the central `level` quantiles of the finite `draws`
// (widened to contain `value`). No interval (lo = hi = NaN) when no draw is finite or every finite draw is the
// same number: then the resampling could not vary the fit (an exactly determined fit — 2 points for a line — or
// no replicate succeeded), and [value, value] would read as certainty.
struct Bounds {
  double lo, hi;
};
Bounds Spread(double value, const std::vector<double>& draws, double level);

// The least-squares line's prediction interval at x0 for a new observation (central `level`): a + b·x0 ±
// t(n − 2) · s · √(1 + 1/n + (x0 − x̄)²/Sxx), s² the residuals' mean square over n − 2. It widens with the
// distance from the fitted x's and with few points (Student's t), as an extrapolation should. NaN bounds with
// fewer than 3 points (no residual freedom) or no spread in x.
Bounds LinePrediction(const std::vector<double>& x, const std::vector<double>& y, const Line& line, double x0,
                      double level);

// Minimizes f over [lo, hi]: a grid of `grid` points, then golden-section search around the best one.
// Returns the argmin.
double Minimize1D(const std::function<double(double)>& f, double lo, double hi, int grid = 64);

}  // namespace ladder::search::internal
