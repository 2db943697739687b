// CMA-ES (Hansen's (mu/mu_w, lambda) with rank-one and rank-mu updates, default strategy parameters) over the
// float/int parameters in unit-cube coordinates; categorical parameters are drawn uniformly at random (CMA-ES
// is for continuous spaces; Optuna's CmaEsSampler does the same), ints are rounded.
//
// Determinism: the distribution is a function of the told set. Completed trials are taken in trial-number
// order, lambda at a time, as one generation each (a told point is used as an injected solution: its step is
// clipped to a Mahalanobis norm of sqrt(d) + 2d/(d+2), like pycma's inject). Ask(n) samples the current
// distribution with the trial's own random stream, so pending trials get distinct points. When a Tell arrives
// for a trial number below the last one folded in, the state is rebuilt from the start on the next Ask.
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "search/samplers/sampler_internal.h"
#include "search/samplers/samplers.h"

namespace ladder::search::internal {
namespace {

constexpr double kDefaultSigma0 = 0.3;

class CmaEsSampler : public HistorySampler {
 public:
  explicit CmaEsSampler(const SearchSpec& spec) : HistorySampler(spec) {
    for (size_t i = 0; i < unit().dims(); ++i) {
      if (unit().choices(i) == 0) numeric_.push_back(i);
    }
    const SamplerOptions& o = spec.sampler_options;
    startup_ = std::max(0, o.n_startup_trials);
    sigma0_ = o.sigma0 > 0 ? o.sigma0 : kDefaultSigma0;
    const auto n = static_cast<double>(std::max<size_t>(numeric_.size(), 1));
    lambda_ = o.population > 0 ? o.population : 4 + static_cast<int>(std::floor(3 * std::log(n)));
    mu_ = lambda_ / 2;
    weights_.resize(mu_);
    for (int i = 0; i < mu_; ++i) weights_(i) = std::log((lambda_ + 1) / 2.0) - std::log(i + 1.0);
    weights_ /= weights_.sum();
    mueff_ = 1.0 / weights_.squaredNorm();
    cc_ = (4 + mueff_ / n) / (n + 4 + 2 * mueff_ / n);
    cs_ = (mueff_ + 2) / (n + mueff_ + 5);
    c1_ = 2 / ((n + 1.3) * (n + 1.3) + mueff_);
    cmu_ = std::min(1 - c1_, 2 * (mueff_ - 2 + 1 / mueff_) / ((n + 2) * (n + 2) + mueff_));
    damps_ = 1 + 2 * std::max(0.0, std::sqrt((mueff_ - 1) / (n + 1)) - 1) + cs_;
    chi_n_ = std::sqrt(n) * (1 - 1 / (4 * n) + 1 / (21 * n * n));
    Reset();
  }

 protected:
  void OnTold(const Observation& o) override {
    if (o.number <= last_folded_) dirty_ = true;
  }

  std::vector<double> Suggest(int64_t trial_number, const std::vector<const Observation*>& told,
                              const std::vector<const Observation*>&) override {
    std::vector<const Observation*> done;
    for (const Observation* o : told) {
      if (o->loss) done.push_back(o);
    }
    if (done.size() < static_cast<size_t>(startup_)) {
      std::vector<double> u = SobolPoint(static_cast<uint64_t>(trial_number));
      SnapAll(&u);
      return u;
    }
    if (dirty_) Reset();
    for (const Observation* o : done) {
      if (o->number <= last_folded_) continue;
      if (folded_ < startup_) {  // the startup points do not enter the distribution
        ++folded_;
        last_folded_ = o->number;
        continue;
      }
      generation_.push_back(o);
      last_folded_ = o->number;
      ++folded_;
      if (generation_.size() == static_cast<size_t>(lambda_)) Update();
    }
    std::mt19937_64 rng = TrialRng(seed(), trial_number, 0xc3a);
    std::vector<double> u(unit().dims());
    for (size_t i = 0; i < u.size(); ++i) u[i] = Uniform01(rng);  // categoricals: uniform
    const auto n = static_cast<Eigen::Index>(numeric_.size());
    if (n > 0) {
      Eigen::VectorXd z(n);
      for (Eigen::Index j = 0; j < n; ++j) z(j) = StandardNormal(rng);
      Eigen::VectorXd x = mean_ + sigma_ * (b_ * (d_.cwiseProduct(z)));
      for (Eigen::Index j = 0; j < n; ++j) {
        // Mirror into [0, 1] rather than clamp, so the boundary is not over-sampled.
        double v = std::fmod(std::abs(x(j)), 2.0);
        if (v > 1) v = 2 - v;
        u[numeric_[static_cast<size_t>(j)]] = v;
      }
    }
    SnapAll(&u);
    return u;
  }

 private:
  void Reset() {
    const auto n = static_cast<Eigen::Index>(numeric_.size());
    mean_ = Eigen::VectorXd::Constant(n, 0.5);
    sigma_ = sigma0_;
    c_ = Eigen::MatrixXd::Identity(n, n);
    b_ = Eigen::MatrixXd::Identity(n, n);
    d_ = Eigen::VectorXd::Ones(n);
    pc_ = Eigen::VectorXd::Zero(n);
    ps_ = Eigen::VectorXd::Zero(n);
    generation_.clear();
    generations_ = 0;
    last_folded_ = INT64_MIN;  // warm-start trials are told below 0
    folded_ = 0;
    dirty_ = false;
  }

  void Update() {
    const auto n = static_cast<Eigen::Index>(numeric_.size());
    std::stable_sort(generation_.begin(), generation_.end(),
                     [](const Observation* a, const Observation* b) { return *a->loss < *b->loss; });
    if (n == 0) {
      generation_.clear();
      return;
    }
    // Steps y = (x - m) / sigma, clipped in Mahalanobis norm.
    Eigen::MatrixXd y(n, mu_);
    Eigen::MatrixXd inv_sqrt_c = b_ * d_.cwiseInverse().asDiagonal() * b_.transpose();
    const double clip = std::sqrt(static_cast<double>(n)) + 2.0 * static_cast<double>(n) / (static_cast<double>(n) + 2);
    for (int k = 0; k < mu_; ++k) {
      const Observation* o = generation_[static_cast<size_t>(k)];
      Eigen::VectorXd x(n);
      for (Eigen::Index j = 0; j < n; ++j) {
        const size_t d = numeric_[static_cast<size_t>(j)];
        x(j) = o->active[d] ? o->u[d] : mean_(j);
      }
      Eigen::VectorXd step = (x - mean_) / sigma_;
      double norm = (inv_sqrt_c * step).norm();
      if (norm > clip) step *= clip / norm;
      y.col(k) = step;
    }
    Eigen::VectorXd yw = y * weights_;
    mean_ += sigma_ * yw;
    ++generations_;
    ps_ = (1 - cs_) * ps_ + std::sqrt(cs_ * (2 - cs_) * mueff_) * (inv_sqrt_c * yw);
    const double ps_norm = ps_.norm();
    const double hsig_bound = (1.4 + 2 / (static_cast<double>(n) + 1)) * chi_n_ *
                              std::sqrt(1 - std::pow(1 - cs_, 2.0 * static_cast<double>(generations_)));
    const double hsig = ps_norm < hsig_bound ? 1.0 : 0.0;
    pc_ = (1 - cc_) * pc_ + hsig * std::sqrt(cc_ * (2 - cc_) * mueff_) * yw;
    Eigen::MatrixXd rank_mu = y * weights_.asDiagonal() * y.transpose();
    c_ = (1 - c1_ - cmu_) * c_ + c1_ * (pc_ * pc_.transpose() + (1 - hsig) * cc_ * (2 - cc_) * c_) + cmu_ * rank_mu;
    sigma_ *= std::exp((cs_ / damps_) * (ps_norm / chi_n_ - 1));
    sigma_ = std::clamp(sigma_, 1e-8, 1.0);
    c_ = 0.5 * (c_ + c_.transpose());
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(c_);
    if (eig.info() == Eigen::Success && eig.eigenvalues().minCoeff() > 0) {
      b_ = eig.eigenvectors();
      d_ = eig.eigenvalues().cwiseSqrt();
    } else {  // numerical trouble: restart the shape, keep the mean
      c_ = Eigen::MatrixXd::Identity(n, n);
      b_ = c_;
      d_ = Eigen::VectorXd::Ones(n);
    }
    generation_.clear();
  }

  std::vector<size_t> numeric_;
  int startup_ = 0;
  double sigma0_;
  int lambda_, mu_;
  Eigen::VectorXd weights_;
  double mueff_, cc_, cs_, c1_, cmu_, damps_, chi_n_;
  Eigen::VectorXd mean_, pc_, ps_, d_;
  Eigen::MatrixXd c_, b_;
  double sigma_ = 0.3;
  std::vector<const Observation*> generation_;  // points into the base's told map, which never moves them
  int64_t generations_ = 0;
  int64_t last_folded_ = INT64_MIN;
  int folded_ = 0;
  bool dirty_ = false;
};

}  // namespace

std::unique_ptr<Sampler> MakeCmaEsSampler(const SearchSpec& spec) { return std::make_unique<CmaEsSampler>(spec); }

}  // namespace ladder::search::internal
