#include "trainer/curvature.h"

#include <cmath>

namespace ladder::trainer {

namespace {

double Dot(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += (a[i].to(torch::kFloat64) * b[i].to(torch::kFloat64)).sum().item<double>();
  return s;
}

std::vector<torch::Tensor> Scaled(const std::vector<torch::Tensor>& v, double k) {
  std::vector<torch::Tensor> out;
  out.reserve(v.size());
  for (const auto& t : v) out.push_back(t * k);
  return out;
}

}  // namespace

std::optional<Curvature> MeasureCurvature(Network& net, const std::vector<torch::Tensor>& params,
                                          const torch::Tensor& x, const torch::Tensor& y, const LossSpec& spec,
                                          int power_iterations) {
  const bool was_training = net.is_training();
  net.eval();
  struct Restore {
    Network& n;
    bool training;
    ~Restore() { n.train(training); }
  } restore{net, was_training};
  auto loss = NetworkLoss(net, x, y, spec);
  // The gradient with its graph, so that Hv = ∂(g·v)/∂θ is one more backward pass per product.
  auto grads = torch::autograd::grad({loss}, params, {}, /*retain_graph=*/true, /*create_graph=*/true);
  std::vector<torch::Tensor> g;
  for (const auto& t : grads) g.push_back(t.detach());
  Curvature c;
  c.grad_sq = Dot(g, g);
  if (!(c.grad_sq > 0) || !std::isfinite(c.grad_sq)) return std::nullopt;
  auto hvp = [&](const std::vector<torch::Tensor>& v) {
    torch::Tensor gv = torch::zeros({}, loss.options());
    for (size_t i = 0; i < grads.size(); ++i) gv = gv + (grads[i] * v[i]).sum();
    auto hv = torch::autograd::grad({gv}, params, {}, /*retain_graph=*/true, /*create_graph=*/false);
    std::vector<torch::Tensor> out;
    for (auto& t : hv) out.push_back(t.detach());
    return out;
  };
  const auto u = Scaled(g, 1.0 / std::sqrt(c.grad_sq));
  c.along_gradient = Dot(u, hvp(u));
  if (!std::isfinite(c.along_gradient)) return std::nullopt;
  // Power iteration from the gradient direction (it overlaps the top eigenvectors early in training).
  auto v = u;
  for (int i = 0; i < power_iterations; ++i) {
    auto hv = hvp(v);
    const double norm = std::sqrt(Dot(hv, hv));
    if (!(norm > 0) || !std::isfinite(norm)) break;
    c.sharpness = Dot(v, hv);  // Rayleigh quotient of the current (unit) vector
    v = Scaled(hv, 1.0 / norm);
  }
  return c;
}

}  // namespace ladder::trainer
