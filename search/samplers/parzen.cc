#include "search/samplers/parzen.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "search/samplers/sampler_internal.h"

namespace ladder::search::internal {
namespace {

constexpr double kPriorWeight = 1.0;
constexpr double kLogSqrt2Pi = 0.91893853320467274178;

double NormalCdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

// log of a standard normal's mass over [a, b], a < b, accurate in both tails (erfc of the nearer side).
double LogNormalMass(double a, double b) {
  constexpr double kInvSqrt2 = 0.70710678118654752440;
  double m;
  if (a >= 0) {
    m = 0.5 * (std::erfc(a * kInvSqrt2) - std::erfc(b * kInvSqrt2));
  } else if (b <= 0) {
    m = 0.5 * (std::erfc(-b * kInvSqrt2) - std::erfc(-a * kInvSqrt2));
  } else {
    m = 1.0 - 0.5 * std::erfc(b * kInvSqrt2) - 0.5 * std::erfc(-a * kInvSqrt2);
  }
  if (m > 1e-300) return std::log(m);
  // Far in one tail: the mass beyond the nearer edge (Mills' ratio), an upper bound that keeps the order.
  const double z = std::max(std::min(std::abs(a), std::abs(b)), 1.0);
  return -0.5 * z * z - kLogSqrt2Pi - std::log(z);
}

size_t ChoiceOf(double u, size_t k) {
  auto c = static_cast<size_t>(std::clamp(u, 0.0, 1.0) * static_cast<double>(k));
  return std::min(c, k - 1);
}

// Sorts (centre in [0, 1], component) pairs, given in component order, by centre, ties by component: std::sort for small inputs, an LSD
// radix sort on 33 bits of the centre for large ones (the bad group of a long search has thousands of
// trials; this is the estimator's main cost). Centres closer than 2^-33 may come out in component order
// rather than by value; the bandwidths that follow are clipped far above such gaps.
void SortByCentre(std::vector<std::pair<double, uint32_t>>* v) {
  const size_t n = v->size();
  if (n < 512) {
    std::sort(v->begin(), v->end());
    return;
  }
  constexpr int kBits = 11, kPasses = 3;
  constexpr uint64_t kBuckets = uint64_t{1} << kBits;
  std::vector<uint64_t> key(n), key_tmp(n);
  std::vector<std::pair<double, uint32_t>> tmp(n);
  // The input is in component order and the radix passes are stable, so equal keys stay in component order.
  for (size_t i = 0; i < n; ++i) {
    key[i] = static_cast<uint64_t>(std::clamp((*v)[i].first, 0.0, 1.0) * 0x1.0p33);
    if (key[i] >= (uint64_t{1} << 33)) key[i] = (uint64_t{1} << 33) - 1;
  }
  std::vector<size_t> count(kBuckets);
  for (int pass = 0; pass < kPasses; ++pass) {
    const int shift = pass * kBits;
    std::fill(count.begin(), count.end(), 0);
    for (size_t i = 0; i < n; ++i) ++count[(key[i] >> shift) & (kBuckets - 1)];
    size_t acc = 0;
    for (auto& c : count) {
      size_t t = c;
      c = acc;
      acc += t;
    }
    for (size_t i = 0; i < n; ++i) {
      const size_t pos = count[(key[i] >> shift) & (kBuckets - 1)]++;
      tmp[pos] = (*v)[i];
      key_tmp[pos] = key[i];
    }
    v->swap(tmp);
    key.swap(key_tmp);
  }
}

}  // namespace

double DefaultTpeWeight(size_t i, size_t n) {
  if (n < 25 || i >= n - 25) return 1.0;
  const size_t ramp = n - 25;
  // numpy.linspace(1/n, 1, ramp)
  return ramp == 1 ? 1.0 / static_cast<double>(n)
                   : 1.0 / static_cast<double>(n) +
                         (1.0 - 1.0 / static_cast<double>(n)) * static_cast<double>(i) / static_cast<double>(ramp - 1);
}

double DefaultTpeWeightSum(size_t a, size_t b, size_t n) {
  if (b <= a) return 0;
  const size_t ramp = n < 25 ? 0 : n - 25;
  double sum = static_cast<double>(b - std::max(a, std::min(b, ramp)));  // the ones
  const size_t e = std::min(b, ramp);
  if (a < e) {  // the ramp's part: count / n + slope * (a + ... + e - 1)
    const double count = static_cast<double>(e - a);
    if (ramp == 1) return sum + count / static_cast<double>(n);
    const double slope = (1.0 - 1.0 / static_cast<double>(n)) / static_cast<double>(ramp - 1);
    sum += count / static_cast<double>(n) + slope * (static_cast<double>(a) + static_cast<double>(e - 1)) * count / 2;
  }
  return sum;
}

std::vector<double> DefaultTpeWeights(size_t n) {
  std::vector<double> w(n);
  for (size_t i = 0; i < n; ++i) w[i] = DefaultTpeWeight(i, n);
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
  // Bandwidths per coordinate, as Optuna's univariate TPE sets them (its default and, on our benchmarks, the
  // better one): each observation's bandwidth is the larger gap to its neighbours among the sorted centres
  // (the prior's 0.5 included, the box ends as outer neighbours, the two outermost taking their inner gap),
  // clipped to [1 / min(100, n + 2), 1]. Components still pair coordinates (joint sampling and density).
  const double min_sigma = 1.0 / std::min(100.0, static_cast<double>(components_) + 1);
  // One pass over the observations, into dim-major columns. The observations are scattered over a long
  // history (a subsample of it, tpe_history.h): each is two dependent loads (the vector, then its
  // coordinates), prefetched a few components ahead, which halves the estimator's construction there.
  constexpr size_t kAhead = 8;
  for (size_t k = 0; k < components_; ++k) {
    if (k + 2 * kAhead < n) __builtin_prefetch(points[k + 2 * kAhead]);
    if (k + kAhead < n) __builtin_prefetch(points[k + kAhead]->data());
    for (size_t j = 0; j < nn; ++j) mu_[j * components_ + k] = k == n ? 0.5 : (*points[k])[dims_[numeric_[j]]];
  }
  const double log_min_sigma = std::log(min_sigma);
  mass_of_.assign(nn, -1);
  for (size_t j = 0; j < nn; ++j) {
    const uint64_t levels = unit_.levels(dims_[numeric_[j]]);
    if (levels == 0 || levels > kMaxMassLevels) continue;
    mass_of_[j] = static_cast<int>(mass_.size());
    MassDim md;
    for (uint64_t k = 0; k <= levels; ++k) md.edges.push_back(unit_.LevelEdge(dims_[numeric_[j]], k));
    md.edges.front() = 0.0;
    md.edges.back() = 1.0;
    mass_.push_back(std::move(md));
  }
  std::vector<std::pair<double, uint32_t>> sorted(components_);  // (centre, component)
  for (size_t j = 0; j < nn; ++j) {
    for (size_t k = 0; k < components_; ++k) sorted[k] = {mu_[j * components_ + k], static_cast<uint32_t>(k)};
    SortByCentre(&sorted);
    const size_t m = sorted.size();
    std::vector<double> ext(m + 2);
    ext[0] = 0.0;
    ext[m + 1] = 1.0;
    for (size_t i = 0; i < m; ++i) ext[i + 1] = sorted[i].first;
    for (size_t i = 0; i < m; ++i) {
      double sigma = std::max(ext[i + 1] - ext[i], ext[i + 2] - ext[i + 1]);
      if (m + 2 >= 4) {
        if (i == 0) sigma = ext[2] - ext[1];
        if (i == m - 1) sigma = ext[m] - ext[m - 1];
      }
      const size_t k = sorted[i].second;
      if (k == n) sigma = 1.0;  // the prior
      sigma = std::clamp(sigma, min_sigma, 1.0);
      const double mu = sorted[i].first;
      if (mass_of_[j] >= 0) {  // an int's values: at least the width of the observation's value (see parzen.h)
        const std::vector<double>& e = mass_[static_cast<size_t>(mass_of_[j])].edges;
        const size_t levels = e.size() - 1;
        const auto v = std::min(levels - 1, static_cast<size_t>(std::upper_bound(e.begin() + 1, e.end() - 1, mu) -
                                                                (e.begin() + 1)));
        sigma = std::min(std::max(sigma, e[v + 1] - e[v]), 1.0);
      }
      mu_[j * components_ + k] = mu;
      sigma_[j * components_ + k] = sigma;
      inv_sigma_[j * components_ + k] = 1.0 / sigma;
      if (mass_of_[j] >= 0) continue;  // its values' masses come from FillMassTable below
      // Mass of the Gaussian inside [0, 1]; 1 to double precision when both ends are 9 sigma away.
      double z = mu - 9 * sigma > 0 && mu + 9 * sigma < 1
                     ? 1.0
                     : std::max(NormalCdf((1.0 - mu) / sigma) - NormalCdf((0.0 - mu) / sigma), 1e-300);
      log_const_[k] -= (sigma == min_sigma ? log_min_sigma : std::log(sigma)) + (z == 1.0 ? 0.0 : std::log(z)) +
                       kLogSqrt2Pi;
    }
    if (mass_of_[j] >= 0) FillMassTable(j);
  }
  // Categorical: a component puts (base + 1) / sum on its observed choice and base / sum on the others
  // (base = prior / components, sum = K base + 1); the prior component is uniform.
  cat_.resize(categorical_.size());
  for (size_t j = 0; j < categorical_.size(); ++j) {
    const size_t d = dims_[categorical_[j]];
    const size_t kc = unit_.choices(d);
    CategoricalDim& c = cat_[j];
    c.choices = kc;
    const double base = kPriorWeight / static_cast<double>(components_);
    const double sum = base * static_cast<double>(kc) + 1.0;
    c.p_hit = (base + 1.0) / sum;
    c.p_miss = base / sum;
    c.log_hit = std::log(c.p_hit);
    c.log_miss = std::log(c.p_miss);
    c.log_uniform = -std::log(static_cast<double>(kc));
    c.observed.resize(components_);
    for (size_t k = 0; k < n; ++k) c.observed[k] = static_cast<int>(ChoiceOf((*points[k])[d], kc));
    c.observed[n] = -1;  // the prior
  }
}

void ParzenEstimator::FillMassTable(size_t j) {
  MassDim& md = mass_[static_cast<size_t>(mass_of_[j])];
  const size_t levels = md.edges.size() - 1;
  md.row.resize(components_);
  std::map<std::pair<double, double>, uint32_t> rows;  // (mu, sigma) -> row; few (values x distinct gaps)
  std::vector<double> mass(levels);
  for (size_t k = 0; k < components_; ++k) {
    const double mu = mu_[j * components_ + k], sigma = sigma_[j * components_ + k];
    auto [it, added] = rows.try_emplace({mu, sigma}, static_cast<uint32_t>(rows.size()));
    md.row[k] = it->second;
    if (!added) continue;
    // log P(value v) = log mass over [edges[v], edges[v+1]) - log mass over [0, 1] (the truncation).
    double best = -std::numeric_limits<double>::infinity();
    for (size_t v = 0; v < levels; ++v) {
      mass[v] = LogNormalMass((md.edges[v] - mu) / sigma, (md.edges[v + 1] - mu) / sigma);
      best = std::max(best, mass[v]);
    }
    double total = 0;
    for (size_t v = 0; v < levels; ++v) total += std::exp(mass[v] - best);
    const double log_total = best + std::log(total);
    for (size_t v = 0; v < levels; ++v) md.log_mass.push_back(mass[v] - log_total);
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
  // Dim-major loops over the components (vectorizable).
  std::vector<double> terms(log_const_);
  for (size_t j = 0; j < nn; ++j) {
    const double xj = x[j];
    if (mass_of_[j] >= 0) {
      const MassDim& md = mass_[static_cast<size_t>(mass_of_[j])];
      const size_t levels = md.edges.size() - 1;
      size_t v = static_cast<size_t>(std::upper_bound(md.edges.begin() + 1, md.edges.end() - 1, xj) -
                                     (md.edges.begin() + 1));
      v = std::min(v, levels - 1);
      const uint32_t* row = md.row.data();
      const double* lm = md.log_mass.data();
      double* t = terms.data();
      for (size_t k = 0; k < components_; ++k) t[k] += lm[row[k] * levels + v];
      continue;
    }
    const double* mu = &mu_[j * components_];
    const double* is = &inv_sigma_[j * components_];
    double* t = terms.data();
    for (size_t k = 0; k < components_; ++k) {
      const double z = (xj - mu[k]) * is[k];
      t[k] -= 0.5 * z * z;
    }
  }
  for (size_t j = 0; j < cat_.size(); ++j) {
    const CategoricalDim& c = cat_[j];
    const int ch = static_cast<int>(choice[j]);
    for (size_t k = 0; k < components_; ++k) {
      const int o = c.observed[k];
      terms[k] += o < 0 ? c.log_uniform : (o == ch ? c.log_hit : c.log_miss);
    }
  }
  const double best = *std::max_element(terms.begin(), terms.end());
  double s = 0;
  for (size_t k = 0; k < components_; ++k) {
    const double e = terms[k] - best;
    if (e > -60) s += std::exp(e);  // smaller terms change nothing at double precision (and exp's underflow is slow)
  }
  return best + std::log(s);
}

void ParzenEstimator::Sample(std::mt19937_64& rng, std::vector<double>* u) const {
  const double r = Uniform01(rng);
  const size_t k = static_cast<size_t>(std::lower_bound(weight_cdf_.begin(), weight_cdf_.end(), r) - weight_cdf_.begin());
  const size_t comp = std::min(k, components_ - 1);
  const size_t nn = numeric_.size();
  for (size_t j = 0; j < nn; ++j) {
    const double mu = mu_[j * components_ + comp], sigma = sigma_[j * components_ + comp];
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
    const CategoricalDim& cd = cat_[j];
    const size_t kc = cd.choices;
    const int o = cd.observed[comp];
    size_t c;
    if (o < 0) {
      c = static_cast<size_t>(UniformBelow(rng, kc));
    } else if (Uniform01(rng) < cd.p_hit || kc == 1) {
      c = static_cast<size_t>(o);
    } else {  // one of the other kc - 1 choices, uniformly
      c = static_cast<size_t>(UniformBelow(rng, kc - 1));
      if (c >= static_cast<size_t>(o)) ++c;
    }
    (*u)[d] = (static_cast<double>(c) + 0.5) / static_cast<double>(kc);
  }
}

}  // namespace ladder::search::internal
