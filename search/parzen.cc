#include "search/parzen.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "search/sampler_internal.h"

namespace ladder::search::internal {
namespace {

constexpr double kPriorWeight = 1.0;
constexpr double kSigma0 = 0.2;
constexpr double kLogSqrt2Pi = 0.91893853320467274178;

double NormalCdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

size_t ChoiceOf(double u, size_t k) {
  auto c = static_cast<size_t>(std::clamp(u, 0.0, 1.0) * static_cast<double>(k));
  return std::min(c, k - 1);
}

}  // namespace

std::vector<double> DefaultTpeWeights(size_t n) {
  std::vector<double> w(n, 1.0);
  if (n < 25) return w;
  const size_t ramp = n - 25;
  for (size_t i = 0; i < ramp; ++i) {
    // numpy.linspace(1/n, 1, ramp)
    w[i] = ramp == 1 ? 1.0 / static_cast<double>(n)
                     : 1.0 / static_cast<double>(n) +
                           (1.0 - 1.0 / static_cast<double>(n)) * static_cast<double>(i) / static_cast<double>(ramp - 1);
  }
  return w;
}

ParzenEstimator::ParzenEstimator(const UnitSpace& unit, std::vector<size_t> dims,
                                 const std::vector<const std::vector<double>*>& points,
                                 const std::vector<double>& weights)
    : unit_(unit), dims_(std::move(dims)) {
  for (size_t j = 0; j < dims_.size(); ++j) {
    (unit_.choices(dims_[j]) > 0 ? categorical_ : numeric_).push_back(j);
  }
  const size_t n = points.size();
  components_ = n + 1;  // the prior is the last component
  std::vector<double> w(weights.begin(), weights.end());
  w.resize(n, 1.0);
  w.push_back(kPriorWeight);
  double total = 0;
  for (double x : w) total += x;
  weight_cdf_.resize(components_);
  log_const_.resize(components_);
  double acc = 0;
  for (size_t k = 0; k < components_; ++k) {
    acc += w[k] / total;
    weight_cdf_[k] = acc;
    log_const_[k] = std::log(w[k] / total);
  }
  weight_cdf_.back() = 1.0;

  const size_t nn = numeric_.size();
  mu_.resize(components_ * nn);
  inv_sigma_.resize(components_ * nn);
  sigma_.resize(components_ * nn);
  const double sigma_obs =
      kSigma0 * std::pow(static_cast<double>(std::max<size_t>(n, 1)), -1.0 / (static_cast<double>(dims_.size()) + 4));
  const double min_sigma = 1.0 / std::min(100.0, static_cast<double>(components_) + 1);
  for (size_t k = 0; k < components_; ++k) {
    const bool prior = k == n;
    for (size_t j = 0; j < nn; ++j) {
      const size_t d = dims_[numeric_[j]];
      double mu = prior ? 0.5 : (*points[k])[d];
      double sigma = std::clamp(prior ? 1.0 : sigma_obs, min_sigma, 1.0);
      double z = NormalCdf((1.0 - mu) / sigma) - NormalCdf((0.0 - mu) / sigma);
      z = std::max(z, 1e-300);
      mu_[k * nn + j] = mu;
      sigma_[k * nn + j] = sigma;
      inv_sigma_[k * nn + j] = 1.0 / sigma;
      log_const_[k] -= std::log(sigma) + std::log(z) + kLogSqrt2Pi;
    }
  }
  log_p_.resize(categorical_.size());
  for (size_t j = 0; j < categorical_.size(); ++j) {
    const size_t d = dims_[categorical_[j]];
    const size_t kc = unit_.choices(d);
    std::vector<double>& lp = log_p_[j];
    lp.assign(components_ * kc, 0.0);
    const double base = kPriorWeight / static_cast<double>(components_);
    for (size_t k = 0; k < components_; ++k) {
      if (k == n) {
        for (size_t c = 0; c < kc; ++c) lp[k * kc + c] = -std::log(static_cast<double>(kc));
        continue;
      }
      const size_t obs = ChoiceOf((*points[k])[d], kc);
      const double sum = base * static_cast<double>(kc) + 1.0;
      for (size_t c = 0; c < kc; ++c) lp[k * kc + c] = std::log((base + (c == obs ? 1.0 : 0.0)) / sum);
    }
  }
}

double ParzenEstimator::LogPdf(const std::vector<double>& u) const {
  const size_t nn = numeric_.size();
  std::vector<double> x(nn);
  for (size_t j = 0; j < nn; ++j) x[j] = u[dims_[numeric_[j]]];
  std::vector<size_t> choice(categorical_.size());
  for (size_t j = 0; j < categorical_.size(); ++j) {
    const size_t d = dims_[categorical_[j]];
    choice[j] = ChoiceOf(u[d], unit_.choices(d));
  }
  double best = -std::numeric_limits<double>::infinity();
  std::vector<double> terms(components_);
  for (size_t k = 0; k < components_; ++k) {
    double t = log_const_[k];
    const double* mu = &mu_[k * nn];
    const double* is = &inv_sigma_[k * nn];
    double q = 0;
    for (size_t j = 0; j < nn; ++j) {
      double z = (x[j] - mu[j]) * is[j];
      q += z * z;
    }
    t -= 0.5 * q;
    for (size_t j = 0; j < categorical_.size(); ++j) {
      const size_t kc = unit_.choices(dims_[categorical_[j]]);
      t += log_p_[j][k * kc + choice[j]];
    }
    terms[k] = t;
    best = std::max(best, t);
  }
  double s = 0;
  for (size_t k = 0; k < components_; ++k) s += std::exp(terms[k] - best);
  return best + std::log(s);
}

void ParzenEstimator::Sample(std::mt19937_64& rng, std::vector<double>* u) const {
  const double r = Uniform01(rng);
  const size_t k = static_cast<size_t>(std::lower_bound(weight_cdf_.begin(), weight_cdf_.end(), r) - weight_cdf_.begin());
  const size_t comp = std::min(k, components_ - 1);
  const size_t nn = numeric_.size();
  for (size_t j = 0; j < nn; ++j) {
    const double mu = mu_[comp * nn + j], sigma = sigma_[comp * nn + j];
    double x = mu;
    bool ok = false;
    for (int tries = 0; tries < 64 && !ok; ++tries) {  // truncated normal by rejection (acceptance >= ~1/3)
      x = mu + sigma * StandardNormal(rng);
      ok = x >= 0.0 && x < 1.0;
    }
    if (!ok) x = std::clamp(x, 0.0, 1.0);
    const size_t d = dims_[numeric_[j]];
    (*u)[d] = unit_.Snap(d, x);
  }
  for (size_t j = 0; j < categorical_.size(); ++j) {
    const size_t d = dims_[categorical_[j]];
    const size_t kc = unit_.choices(d);
    double r2 = Uniform01(rng), acc = 0;
    size_t c = kc - 1;
    for (size_t i = 0; i < kc; ++i) {
      acc += std::exp(log_p_[j][comp * kc + i]);
      if (r2 < acc) {
        c = i;
        break;
      }
    }
    (*u)[d] = (static_cast<double>(c) + 0.5) / static_cast<double>(kc);
  }
}

}  // namespace ladder::search::internal
