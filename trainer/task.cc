#include "trainer/task.h"

#include <ATen/autocast_mode.h>

#include <cmath>

namespace ladder::trainer {

namespace F = torch::nn::functional;

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
