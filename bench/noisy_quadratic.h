#pragma once
// The noisy quadratic model (Zhang et al. 2019, "Which algorithmic choices matter at which batch sizes?",
// arXiv 1907.04164): SGD on L(θ) = L0 + ½ Σ h_i θ_i² whose mini-batch gradient carries noise of variance c_i / B
// in each eigendirection. With a constant learning rate η every coordinate evolves independently and in closed
// form, so a task's whole loss surface over (η, B) costs O(dims) a point: cheap enough for hundreds of random
// instances, which is what counting the coverage of a stated interval honestly takes.
//
//   spectrum   h_i = h_max · i^(−alpha), i = 1..dims       (alpha: how fast curvature falls off)
//   noise      c_i = noise · h_i                           (the gradient covariance follows the Hessian, as the
//                                                           Fisher does near a minimum)
//   budget     a fixed number of epochs: steps(B) = max(1, floor(epochs · examples / B))
//   one step   θ ← θ − η (h ⊙ θ + ξ),  ξ_i ~ N(0, c_i / B)
//   after T    θ_i ~ N(μ_i, V_i),  μ_i = (1 − η h_i)^T θ0_i,  V_i = η² c_i / B · (1 − r_i^T) / (1 − r_i),
//              r_i = (1 − η h_i)²
//
// The dials put the bend of the best LR against the batch where a task wants it. At small batches the noise
// term dominates and the best LR grows about linearly with B; at large batches few steps remain, the iterate is
// limited by curvature, and the best LR levels off below the stability edge 2/h_max (the GD regime). More noise
// or more data (epochs · examples) moves the bend to larger batches; none, and the task saturates early.
//
// A seed fixes the initial point (θ0_i ~ N(0, init_scale²)) and the standard normals of the final iterate, and
// the same seed's draws serve every LR and batch: like a real seed (init and data order), it shifts a whole LR
// curve, so comparisons within a seed are paired. The oracle uses the expectation over seeds, which is exact.
// Pure: no I/O, no state beyond the parameters.
#include <cstdint>
#include <vector>

namespace ladder::bench {

struct NoisyQuadratic {
  int dims = 100;
  double h_max = 1.0;       // the largest curvature: the stability edge is 2 / h_max
  double alpha = 1.0;       // spectrum decay exponent
  double noise = 1.0;       // per-example gradient noise, as a multiple of the curvature
  double init_scale = 1.0;  // sd of each initial coordinate
  double floor_loss = 0.0;  // L0: the loss no training removes (label noise)
  int64_t examples = 100000;
  double epochs = 1.0;

  double Curvature(int i) const;  // h_i, i in [0, dims)
  int64_t Steps(int64_t batch) const;
  // The expectation over seeds of the final loss at a constant LR; +inf when any direction grows past the
  // initial loss by 1e6 (a diverged run).
  double ExpectedLoss(double lr, int64_t batch) const;
  // The seed-to-seed standard deviation of the final loss (exact for the Gaussian iterate).
  double LossSd(double lr, int64_t batch) const;
  // One run's final loss with `seed` (+inf when it diverged).
  double SampledLoss(double lr, int64_t batch, uint64_t seed) const;
  // The LR that minimises ExpectedLoss at `batch` (golden-section search in log LR, to 1e-4 octave), and the
  // loss there.
  struct Optimum {
    double lr = 0, loss = 0;
  };
  Optimum Oracle(int64_t batch) const;
};

}  // namespace ladder::bench
