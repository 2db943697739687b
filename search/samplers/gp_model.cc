#include "search/samplers/gp_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "search/samplers/sampler_internal.h"

namespace ladder::search::internal {
namespace {

constexpr double kSqrt5 = 2.23606797749979;
constexpr double kJitter = 1e-8;
// Weak log-normal priors (inputs in [0, 1], targets standardized).
constexpr double kLengthscalePriorMean = -1.0;  // log 0.37
constexpr double kLengthscalePriorSd = 1.5;
constexpr double kSignalPriorMean = 0.0;
constexpr double kSignalPriorSd = 1.5;
constexpr double kNoisePriorMean = -4.6;  // log 0.01
constexpr double kNoisePriorSd = 2.5;
// Box for the search in log space.
constexpr double kMinLogLengthscale = -4.6, kMaxLogLengthscale = 3.0;
constexpr double kMinLogSignal = -4.6, kMaxLogSignal = 4.6;
constexpr double kMinLogNoise = -13.8, kMaxLogNoise = 1.0;

// r^2 scaled by the lengthscales, for every pair.
Eigen::MatrixXd ScaledSquaredDistances(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b,
                                       const Eigen::VectorXd& inv_l) {
  Eigen::MatrixXd as = a * inv_l.asDiagonal(), bs = b * inv_l.asDiagonal();
  Eigen::VectorXd an = as.rowwise().squaredNorm(), bn = bs.rowwise().squaredNorm();
  Eigen::MatrixXd d = (-2.0 * as * bs.transpose()).colwise() + an;
  d.rowwise() += bn.transpose();
  return d.cwiseMax(0.0);
}

double Matern52(double r2) {
  double r = std::sqrt(r2);
  return (1.0 + kSqrt5 * r + 5.0 / 3.0 * r2) * std::exp(-kSqrt5 * r);
}

Eigen::VectorXd Pack(const GpHyper& h) {
  const auto d = h.log_lengthscale.size();
  Eigen::VectorXd t(d + 2);
  t.head(d) = h.log_lengthscale;
  t(d) = h.log_signal;
  t(d + 1) = h.log_noise;
  return t;
}

GpHyper Unpack(const Eigen::VectorXd& t) {
  const auto d = t.size() - 2;
  GpHyper h;
  h.log_lengthscale = t.head(d).cwiseMax(kMinLogLengthscale).cwiseMin(kMaxLogLengthscale);
  h.log_signal = std::clamp(t(d), kMinLogSignal, kMaxLogSignal);
  h.log_noise = std::clamp(t(d + 1), kMinLogNoise, kMaxLogNoise);
  return h;
}

double LogNormalPrior(double v, double mean, double sd, double* grad) {
  double z = (v - mean) / sd;
  *grad = -z / sd;
  return -0.5 * z * z;
}

}  // namespace

double GpLogPosterior(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, const GpHyper& h, Eigen::VectorXd* grad) {
  const Eigen::Index n = x.rows(), d = x.cols();
  const double s2 = std::exp(h.log_signal), noise = std::exp(h.log_noise);
  Eigen::VectorXd inv_l = (-h.log_lengthscale).array().exp();
  Eigen::MatrixXd r2 = ScaledSquaredDistances(x, x, inv_l);
  Eigen::MatrixXd k(n, n), g(n, n);  // g: s2 (5/3)(1 + sqrt5 r) e^{-sqrt5 r}, the factor of dK/dlog l
  for (Eigen::Index j = 0; j < n; ++j) {
    for (Eigen::Index i = 0; i < n; ++i) {
      double r = std::sqrt(r2(i, j));
      double e = std::exp(-kSqrt5 * r);
      k(i, j) = s2 * (1.0 + kSqrt5 * r + 5.0 / 3.0 * r2(i, j)) * e;
      g(i, j) = s2 * 5.0 / 3.0 * (1.0 + kSqrt5 * r) * e;
    }
  }
  Eigen::MatrixXd kn = k;
  kn.diagonal().array() += noise + kJitter;
  Eigen::LLT<Eigen::MatrixXd> llt(kn);
  if (llt.info() != Eigen::Success) return -std::numeric_limits<double>::infinity();
  Eigen::VectorXd alpha = llt.solve(y);
  double log_det = 2.0 * llt.matrixLLT().diagonal().array().log().sum();
  double lml = -0.5 * y.dot(alpha) - 0.5 * log_det - 0.5 * static_cast<double>(n) * std::log(2 * M_PI);
  double gp;
  double prior = 0;
  grad->resize(d + 2);
  for (Eigen::Index j = 0; j < d; ++j) {
    prior += LogNormalPrior(h.log_lengthscale(j), kLengthscalePriorMean, kLengthscalePriorSd, &gp);
    (*grad)(j) = gp;
  }
  prior += LogNormalPrior(h.log_signal, kSignalPriorMean, kSignalPriorSd, &gp);
  (*grad)(d) = gp;
  prior += LogNormalPrior(h.log_noise, kNoisePriorMean, kNoisePriorSd, &gp);
  (*grad)(d + 1) = gp;
  // W = alpha alpha^T - K^-1; dLML/dtheta = 0.5 tr(W dK/dtheta).
  Eigen::MatrixXd w = llt.solve(Eigen::MatrixXd::Identity(n, n));
  w = alpha * alpha.transpose() - w;
  Eigen::MatrixXd wg = w.cwiseProduct(g);
  for (Eigen::Index j = 0; j < d; ++j) {
    // dK_ab/dlog l_j = g_ab * (x_aj - x_bj)^2 / l_j^2
    Eigen::VectorXd c = x.col(j) * inv_l(j);
    double acc = 0;
    for (Eigen::Index b = 0; b < n; ++b) {
      for (Eigen::Index a = 0; a < n; ++a) {
        double diff = c(a) - c(b);
        acc += wg(a, b) * diff * diff;
      }
    }
    (*grad)(j) += 0.5 * acc;
  }
  (*grad)(d) += 0.5 * w.cwiseProduct(k).sum();
  (*grad)(d + 1) += 0.5 * noise * w.trace();
  // Zero the gradient of a coordinate pinned at its box (the search clamps there).
  for (Eigen::Index j = 0; j < d; ++j) {
    if ((h.log_lengthscale(j) <= kMinLogLengthscale && (*grad)(j) < 0) ||
        (h.log_lengthscale(j) >= kMaxLogLengthscale && (*grad)(j) > 0)) {
      (*grad)(j) = 0;
    }
  }
  return lml + prior;
}

namespace {

// L-BFGS (memory 6) maximizing f with backtracking (Armijo) line search; t is clamped into the box by Unpack.
Eigen::VectorXd Lbfgs(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, Eigen::VectorXd t, int max_iter,
                      double* best_value) {
  auto eval = [&](const Eigen::VectorXd& at, Eigen::VectorXd* g) {
    GpHyper h = Unpack(at);
    double v = GpLogPosterior(x, y, h, g);
    *g = -*g;
    return -v;  // minimize the negative
  };
  t = Pack(Unpack(t));
  Eigen::VectorXd g;
  double f = eval(t, &g);
  if (!std::isfinite(f)) {
    *best_value = -std::numeric_limits<double>::infinity();
    return t;
  }
  std::vector<Eigen::VectorXd> s_hist, y_hist;
  std::vector<double> rho;
  for (int it = 0; it < max_iter; ++it) {
    // Two-loop recursion.
    Eigen::VectorXd q = g;
    std::vector<double> a(s_hist.size());
    for (size_t i = s_hist.size(); i-- > 0;) {
      a[i] = rho[i] * s_hist[i].dot(q);
      q -= a[i] * y_hist[i];
    }
    double gamma = s_hist.empty() ? 1.0 / std::max(1.0, g.norm()) : s_hist.back().dot(y_hist.back()) / y_hist.back().squaredNorm();
    Eigen::VectorXd dir = gamma * q;
    for (size_t i = 0; i < s_hist.size(); ++i) {
      double b = rho[i] * y_hist[i].dot(dir);
      dir += s_hist[i] * (a[i] - b);
    }
    dir = -dir;
    double slope = g.dot(dir);
    if (slope >= 0) {  // not a descent direction: restart from steepest descent
      s_hist.clear();
      y_hist.clear();
      rho.clear();
      dir = -g / std::max(1.0, g.norm());
      slope = g.dot(dir);
    }
    double step = 1.0, f_new = 0;
    Eigen::VectorXd t_new, g_new;
    bool accepted = false;
    for (int ls = 0; ls < 20; ++ls) {
      t_new = Pack(Unpack(t + step * dir));
      f_new = eval(t_new, &g_new);
      if (std::isfinite(f_new) && f_new <= f + 1e-4 * step * slope) {
        accepted = true;
        break;
      }
      step *= 0.5;
    }
    if (!accepted) break;
    Eigen::VectorXd s = t_new - t, yk = g_new - g;
    const double sy = s.dot(yk);
    const double improvement = f - f_new;
    t = t_new;
    g = g_new;
    f = f_new;
    if (sy > 1e-10) {
      s_hist.push_back(s);
      y_hist.push_back(yk);
      rho.push_back(1.0 / sy);
      if (s_hist.size() > 6) {
        s_hist.erase(s_hist.begin());
        y_hist.erase(y_hist.begin());
        rho.erase(rho.begin());
      }
    }
    if (improvement < 1e-7 * std::max(1.0, std::abs(f)) || g.norm() < 1e-6) break;
  }
  *best_value = -f;
  return t;
}

}  // namespace

GpHyper FitGpHyper(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, const GpFitOptions& options,
                   std::mt19937_64& rng) {
  const Eigen::Index d = x.cols();
  GpHyper start;
  start.log_lengthscale = Eigen::VectorXd::Constant(d, kLengthscalePriorMean);
  start.log_signal = 0;
  start.log_noise = kNoisePriorMean;
  double best_value = -std::numeric_limits<double>::infinity();
  Eigen::VectorXd best = Pack(start);
  for (int r = 0; r <= options.restarts; ++r) {
    Eigen::VectorXd t = Pack(start);
    if (r > 0) {
      for (Eigen::Index j = 0; j < d; ++j) t(j) = kLengthscalePriorMean + kLengthscalePriorSd * StandardNormal(rng);
      t(d) = kSignalPriorMean + 0.5 * StandardNormal(rng);
      t(d + 1) = kNoisePriorMean + 1.5 * StandardNormal(rng);
    }
    double value;
    Eigen::VectorXd found = Lbfgs(x, y, t, options.max_iterations, &value);
    if (value > best_value) {
      best_value = value;
      best = found;
    }
  }
  return Unpack(best);
}

bool GpPosterior::Condition(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, const GpHyper& h) {
  x_ = x;
  h_ = h;
  Eigen::VectorXd inv_l = (-h.log_lengthscale).array().exp();
  Eigen::MatrixXd k = ScaledSquaredDistances(x, x, inv_l).unaryExpr(&Matern52) * std::exp(h.log_signal);
  double jitter = kJitter;
  for (int attempt = 0; attempt < 6; ++attempt) {
    Eigen::MatrixXd kn = k;
    kn.diagonal().array() += std::exp(h.log_noise) + jitter;
    llt_.compute(kn);
    if (llt_.info() == Eigen::Success) {
      alpha_ = llt_.solve(y);
      return true;
    }
    jitter *= 100;
  }
  return false;
}

void GpPosterior::Predict(const Eigen::MatrixXd& q, Eigen::VectorXd* mean, Eigen::VectorXd* var) const {
  Eigen::VectorXd inv_l = (-h_.log_lengthscale).array().exp();
  const double s2 = std::exp(h_.log_signal);
  Eigen::MatrixXd ks = ScaledSquaredDistances(q, x_, inv_l).unaryExpr(&Matern52) * s2;  // m x n
  *mean = ks * alpha_;
  Eigen::MatrixXd v = llt_.matrixL().solve(ks.transpose());  // n x m
  *var = (s2 - v.colwise().squaredNorm().transpose().array()).cwiseMax(1e-12).matrix();
}

}  // namespace ladder::search::internal
