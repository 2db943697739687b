#pragma once
// Internal to search/: a Gaussian-process regression model for GP-BO. Zero mean on standardized targets,
// Matérn-5/2 kernel with one lengthscale per input (ARD), a signal variance and a noise variance, fitted by
// maximizing the log marginal likelihood plus weak log-normal priors on the hyperparameters (multi-start
// L-BFGS with analytic gradients). Inputs are features in [0, 1]. Not thread-safe; no I/O.
#include <Eigen/Dense>
#include <random>
#include <vector>

namespace ladder::search::internal {

struct GpHyper {
  Eigen::VectorXd log_lengthscale;  // one per input
  double log_signal = 0;            // log of the signal variance
  double log_noise = 0;             // log of the noise variance
};

struct GpFitOptions {
  int restarts = 2;        // random starts besides the default start
  int max_iterations = 40;  // L-BFGS iterations per start
};

// Maximizes the log posterior of the hyperparameters for data (x: n x d, y: n, standardized).
GpHyper FitGpHyper(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, const GpFitOptions& options,
                   std::mt19937_64& rng);

// Log marginal likelihood + log prior at `h`, and its gradient (order: lengthscales, signal, noise).
double GpLogPosterior(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, const GpHyper& h, Eigen::VectorXd* grad);

class GpPosterior {
 public:
  // Conditions on (x, y) with fixed hyperparameters. false if the kernel matrix is not positive definite even
  // with added jitter.
  bool Condition(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, const GpHyper& h);
  // Posterior mean and variance at each row of `q`.
  void Predict(const Eigen::MatrixXd& q, Eigen::VectorXd* mean, Eigen::VectorXd* var) const;

 private:
  Eigen::MatrixXd x_;
  GpHyper h_;
  Eigen::LLT<Eigen::MatrixXd> llt_;
  Eigen::VectorXd alpha_;
};

}  // namespace ladder::search::internal
