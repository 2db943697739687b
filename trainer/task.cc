#include "trainer/task.h"

#include <ATen/autocast_mode.h>

#include <cmath>

namespace ladder::trainer {

namespace F = torch::nn::functional;

namespace {

// A regression's evaluation in float64 sums over the rows, so chunks add up exactly: |error|, error² and, per
// target, Σy and Σy² (R²'s total sum of squares around the rows' mean).
struct RegressionSums {
  double abs_err = 0, values = 0;
  torch::Tensor sq_err, sum_y, sum_y2;  // [K]
  double rows = 0;

  void Add(const torch::Tensor& out, const torch::Tensor& target) {
    auto z = out.to(torch::kFloat64).cpu().reshape({out.size(0), -1});
    auto t = target.to(torch::kFloat64).cpu().reshape(z.sizes());
    auto e = z - t;
    if (!sq_err.defined()) {
      sq_err = torch::zeros({z.size(1)}, torch::kFloat64);
      sum_y = torch::zeros({z.size(1)}, torch::kFloat64);
      sum_y2 = torch::zeros({z.size(1)}, torch::kFloat64);
    }
    abs_err += e.abs().sum().item<double>();
    values += static_cast<double>(e.numel());
    sq_err += e.pow(2).sum(0);
    sum_y += t.sum(0);
    sum_y2 += t.pow(2).sum(0);
    rows += static_cast<double>(z.size(0));
  }
  void Report(std::map<std::string, double>* out) const {
    (*out)["mae"] = values > 0 ? abs_err / values : 0.0;
    if (rows == 0) {
      (*out)["r2"] = 0.0;
      return;
    }
    // A target constant over the rows has no variance to explain: it counts 1 when predicted exactly, else 0.
    auto ss_tot = sum_y2 - sum_y.pow(2) / rows;
    auto r2 = torch::where(ss_tot.gt(1e-12), 1 - sq_err / ss_tot.clamp_min(1e-12),
                           sq_err.le(1e-12).to(torch::kFloat64));
    (*out)["r2"] = r2.mean().item<double>();
  }
};

}  // namespace

torch::Tensor TaskLoss(const torch::Tensor& logits, const torch::Tensor& labels, const LossSpec& spec) {
  auto z = logits.to(torch::kFloat32);
  switch (spec.task) {
    case Task::kClassify:
      return F::cross_entropy(z, labels.reshape({-1}));
    case Task::kSegment: {
      auto y = labels.reshape({z.size(0), z.size(2), z.size(3)});
      auto opts = F::CrossEntropyFuncOptions().reduction(torch::kNone);
      if (spec.class_weights.defined()) opts = opts.weight(spec.class_weights);
      return F::cross_entropy(z, y, opts).mean();
    }
    case Task::kLanguageModel:
      return F::cross_entropy(z.reshape({-1, z.size(-1)}), labels.reshape({-1}));
    case Task::kRegress: {
      auto t = labels.to(torch::kFloat32).reshape(z.sizes());
      if (spec.regression_loss == "l1") return F::l1_loss(z, t);
      if (spec.regression_loss == "huber") return F::huber_loss(z, t);
      return F::mse_loss(z, t);
    }
  }
  return {};
}

torch::Tensor NetworkLoss(Network& net, const torch::Tensor& x, const torch::Tensor& y, const LossSpec& spec) {
  return net.HasOwnLoss() ? net.OwnLoss(x, y) : TaskLoss(net.forward(x), y, spec);
}

bool ClassWeights(const std::string& option, const Dataset& train, torch::Tensor* out, std::string* error) {
  *out = torch::Tensor();
  if (option == "none" || train.task != Task::kSegment) return true;
  const auto c = static_cast<size_t>(train.classes);
  std::vector<double> w(c, 0);
  if (option == "auto") {
    std::vector<double> count(c, 0);
    for (int64_t label : train.y) count[static_cast<size_t>(label)] += 1;
    const double total = static_cast<double>(train.y.size());
    double norm = 0;
    for (size_t k = 0; k < c; ++k) {
      const double f = std::max(count[k], 1.0) / total;
      w[k] = 1.0 / std::sqrt(f);
      norm += f * w[k];
    }
    for (auto& x : w) x /= norm;
  } else {
    size_t k = 0, start = 0;
    for (;;) {
      size_t comma = option.find(',', start);
      if (k < c) w[k] = std::atof(option.substr(start, comma == std::string::npos ? std::string::npos : comma - start).c_str());
      ++k;
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (k != c) {
      *error = "--class-weights '" + option + "' has " + std::to_string(k) + " weights, the data has " +
               std::to_string(c) + " classes";
      return false;
    }
  }
  *out = torch::tensor(w, torch::kFloat32);
  return true;
}

std::map<std::string, double> Evaluate(Network& net, const torch::Tensor& x, const torch::Tensor& y,
                                       const LossSpec& spec, int64_t classes, const EvalOptions& o) {
  torch::NoGradGuard no_grad;
  const bool was_training = net.is_training();
  net.eval();
  const int64_t rows = o.max_rows > 0 ? std::min(o.max_rows, x.size(0)) : x.size(0);
  // Chunks of about 4M input elements.
  const int64_t per_row = std::max<int64_t>(1, x.numel() / std::max<int64_t>(1, x.size(0)));
  const int64_t chunk = std::max<int64_t>(1, (int64_t{1} << 22) / per_row);
  double loss_sum = 0, correct = 0, counted = 0;
  RegressionSums reg;
  auto inter = torch::zeros({classes}, torch::kFloat64), uni = torch::zeros({classes}, torch::kFloat64);
  for (int64_t start = 0; start < rows; start += chunk) {
    const int64_t len = std::min(chunk, rows - start);
    auto xb = x.narrow(0, start, len).to(o.device), yb = y.narrow(0, start, len).to(o.device);
    torch::Tensor logits;
    {
      AutocastScope autocast(o.device, o.bf16);
      logits = net.forward(xb);
    }
    const auto loss = net.HasOwnLoss() ? net.OwnLoss(xb, yb) : TaskLoss(logits, yb, spec);
    loss_sum += loss.item<double>() * static_cast<double>(len);
    if (spec.task == Task::kRegress) {
      reg.Add(logits, yb);
      continue;
    }
    auto pred = (spec.task == Task::kClassify ? logits.argmax(1) : spec.task == Task::kSegment ? logits.argmax(1)
                                                                                                : logits.argmax(-1))
                    .reshape({-1});
    auto truth = yb.reshape({-1});
    correct += pred.eq(truth).sum().item<double>();
    counted += static_cast<double>(truth.numel());
    if (spec.task == Task::kSegment) {
      auto p1 = F::one_hot(pred, classes).to(torch::kFloat64), t1 = F::one_hot(truth, classes).to(torch::kFloat64);
      inter += (p1 * t1).sum(0).cpu();
      uni += ((p1 + t1).clamp_max(1)).sum(0).cpu();
    }
  }
  if (was_training) net.train();
  std::map<std::string, double> out;
  out["loss"] = rows > 0 ? loss_sum / static_cast<double>(rows) : 0.0;
  if (spec.task == Task::kRegress) {
    reg.Report(&out);
    return out;
  }
  out["accuracy"] = counted > 0 ? correct / counted : 0.0;
  if (spec.task == Task::kSegment) {
    // Mean over the classes that occur in the truth or the prediction.
    auto present = uni.gt(0);
    out["miou"] = present.any().item<bool>() ? (inter.masked_select(present) / uni.masked_select(present)).mean().item<double>() : 0.0;
  }
  if (spec.task == Task::kLanguageModel) out["perplexity"] = std::exp(out["loss"]);
  return out;
}

AutocastScope::AutocastScope(torch::Device device, bool enabled) : enabled_(enabled), cuda_(device.is_cuda()) {
  if (!enabled_) return;
  if (cuda_) {
    was_enabled_ = at::autocast::is_enabled();
    at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
    at::autocast::set_enabled(true);
  } else {
    was_enabled_ = at::autocast::is_cpu_enabled();
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::set_cpu_enabled(true);
  }
}

AutocastScope::~AutocastScope() {
  if (!enabled_) return;
  if (cuda_) {
    at::autocast::set_enabled(was_enabled_);
  } else {
    at::autocast::set_cpu_enabled(was_enabled_);
  }
  if (!was_enabled_) at::autocast::clear_cache();
}

}  // namespace ladder::trainer
