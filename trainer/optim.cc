#include "trainer/optim.h"

#include <cmath>

namespace ladder::trainer {

void Optimizer::ZeroGrad() {
  for (auto& p : params_) p.mutable_grad() = torch::Tensor();
}

namespace {

bool Decays(const OptimizerOptions& o, size_t i, const torch::Tensor& p) {
  return p.dim() > 1 && !(i < o.no_decay.size() && o.no_decay[i]);
}

class MomentumFamily final : public Optimizer {  // sgd, lars, larc
 public:
  MomentumFamily(const OptimizerOptions& o, std::vector<torch::Tensor> params)
      : Optimizer(std::move(params)), o_(o), buf_(params_.size()) {}

  void Step(double lr) override {
    torch::NoGradGuard g;
    ++steps_;
    for (size_t i = 0; i < params_.size(); ++i) {
      auto& p = params_[i];
      if (!p.grad().defined()) continue;
      auto d = p.grad();
      const bool decay = Decays(o_, i, p);
      if (o_.name == "sgd" && SgdInPlace(p, d, buf_[i], decay ? o_.weight_decay : 0.0, lr)) continue;
      double local = 1.0;
      if (o_.name != "sgd" && decay) {
        const double wn = p.norm().item<double>(), gn = d.norm().item<double>();
        if (wn > 0 && gn > 0) {
          const double trust = o_.trust_coefficient * wn / (gn + o_.weight_decay * wn);
          local = (o_.name == "larc" && o_.larc_mode == "clip") ? std::min(trust / lr, 1.0) : trust;
        }
      }
      if (decay && o_.weight_decay != 0) d = d.add(p, o_.weight_decay);
      if (local != 1.0) d = d.mul(local);
      if (o_.momentum != 0) {
        if (!buf_[i].defined()) {
          buf_[i] = d.clone();
        } else {
          buf_[i].mul_(o_.momentum).add_(d);
        }
        d = o_.nesterov ? d.add(buf_[i], o_.momentum) : buf_[i];
      }
      p.add_(d, -lr);
    }
  }
  std::vector<torch::Tensor> State() override {
    std::vector<torch::Tensor> out;
    for (size_t i = 0; i < buf_.size(); ++i) {
      if (!buf_[i].defined()) buf_[i] = torch::zeros_like(params_[i]);
      out.push_back(buf_[i]);
    }
    return out;
  }
  int64_t step_count() const override { return steps_; }
  void set_step_count(int64_t s) override { steps_ = s; }

 private:
  // Plain SGD on contiguous fp32 CPU tensors with its momentum buffer started: one loop over raw memory doing
  // what the tensor ops below do, element by element in the same order (d = g + wd p; buf = m buf + d;
  // d = nesterov ? d + m buf : buf; p -= lr d), instead of three or four dispatched ops per parameter, which
  // dominate the optimizer's time on small models. false: take the general path.
  bool SgdInPlace(torch::Tensor& p, const torch::Tensor& grad, torch::Tensor& buf, double wd, double lr) {
    if (o_.momentum == 0 || !buf.defined() || !p.is_cpu() || p.scalar_type() != torch::kFloat32 ||
        grad.scalar_type() != torch::kFloat32 || buf.scalar_type() != torch::kFloat32 || !p.is_contiguous() ||
        !grad.is_contiguous() || !buf.is_contiguous() || grad.numel() != p.numel()) {
      return false;
    }
    float* w = p.data_ptr<float>();
    const float* gr = grad.data_ptr<float>();
    float* b = buf.data_ptr<float>();
    const auto m = static_cast<float>(o_.momentum), decay = static_cast<float>(wd), step = static_cast<float>(-lr);
    const int64_t n = p.numel();
    // One loop per case, without branches inside: each vectorizes (the file is built with -O3).
    if (o_.nesterov) {
      for (int64_t k = 0; k < n; ++k) {
        const float dk = gr[k] + decay * w[k];
        b[k] = b[k] * m + dk;
        w[k] += step * (dk + m * b[k]);
      }
    } else if (decay != 0) {
      for (int64_t k = 0; k < n; ++k) {
        b[k] = b[k] * m + (gr[k] + decay * w[k]);
        w[k] += step * b[k];
      }
    } else {
      for (int64_t k = 0; k < n; ++k) {
        b[k] = b[k] * m + gr[k];
        w[k] += step * b[k];
      }
    }
    return true;
  }

  OptimizerOptions o_;
  std::vector<torch::Tensor> buf_;
  int64_t steps_ = 0;
};

class AdamFamily final : public Optimizer {  // adam, adamw, lamb
 public:
  AdamFamily(const OptimizerOptions& o, std::vector<torch::Tensor> params) : Optimizer(std::move(params)), o_(o) {
    for (auto& p : params_) {
      m_.push_back(torch::zeros_like(p));
      v_.push_back(torch::zeros_like(p));
    }
  }

  void Step(double lr) override {
    torch::NoGradGuard g;
    ++steps_;
    const double bc1 = 1 - std::pow(o_.beta1, static_cast<double>(steps_));
    const double bc2 = 1 - std::pow(o_.beta2, static_cast<double>(steps_));
    for (size_t i = 0; i < params_.size(); ++i) {
      auto& p = params_[i];
      if (!p.grad().defined()) continue;
      auto grad = p.grad();
      const bool decay = Decays(o_, i, p) && o_.weight_decay != 0;
      if (o_.name == "adam" && decay) grad = grad.add(p, o_.weight_decay);
      if (o_.name == "adamw" && decay) p.mul_(1 - lr * o_.weight_decay);
      m_[i].mul_(o_.beta1).add_(grad, 1 - o_.beta1);
      v_[i].mul_(o_.beta2).addcmul_(grad, grad, 1 - o_.beta2);
      auto denom = (v_[i] / bc2).sqrt_().add_(o_.eps);
      auto update = (m_[i] / bc1) / denom;
      if (o_.name == "lamb") {
        if (decay) update.add_(p, o_.weight_decay);
        double trust = 1.0;
        if (Decays(o_, i, p)) {
          const double wn = p.norm().item<double>(), un = update.norm().item<double>();
          if (wn > 0 && un > 0) trust = wn / un;
        }
        p.add_(update, -lr * trust);
      } else {
        p.add_(update, -lr);
      }
    }
  }
  std::vector<torch::Tensor> State() override {
    std::vector<torch::Tensor> out = m_;
    out.insert(out.end(), v_.begin(), v_.end());
    return out;
  }
  int64_t step_count() const override { return steps_; }
  void set_step_count(int64_t s) override { steps_ = s; }

 private:
  OptimizerOptions o_;
  std::vector<torch::Tensor> m_, v_;
  int64_t steps_ = 0;
};

}  // namespace

std::unique_ptr<Optimizer> MakeOptimizer(const OptimizerOptions& o, std::vector<torch::Tensor> params,
                                         std::string* error) {
  if (o.name == "sgd" || o.name == "lars" || o.name == "larc") {
    if (o.name == "larc" && o.larc_mode != "clip" && o.larc_mode != "scale") {
      *error = "larc mode must be clip or scale, got '" + o.larc_mode + "'";
      return nullptr;
    }
    return std::make_unique<MomentumFamily>(o, std::move(params));
  }
  if (o.name == "adam" || o.name == "adamw" || o.name == "lamb") return std::make_unique<AdamFamily>(o, std::move(params));
  *error = "unknown optimizer '" + o.name + "' (sgd, adam, adamw, lars, larc, lamb)";
  return nullptr;
}

double ClipGradNorm(const std::vector<torch::Tensor>& params, double max_norm) {
  torch::NoGradGuard g;
  double total = 0;
  for (const auto& p : params) {
    if (p.grad().defined()) total += p.grad().pow(2).sum().item<double>();
  }
  total = std::sqrt(total);
  if (max_norm > 0 && total > max_norm) {
    const double scale = max_norm / (total + 1e-6);
    for (const auto& p : params) {
      if (p.grad().defined()) p.grad().mul_(scale);
    }
  }
  return total;
}

}  // namespace ladder::trainer
