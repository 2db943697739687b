#include "trainer/torchscript_model.h"

#include <ATen/autocast_mode.h>
#include <torch/csrc/jit/runtime/graph_executor.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <stdexcept>

#include "trainer/task.h"
#include "trainer/torchscript_file.h"

namespace ladder::trainer {

namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// torch::nn::Module names may not hold dots: "features.0.weight" is registered as "features/0/weight".
std::string Registered(std::string name) {
  std::replace(name.begin(), name.end(), '.', '/');
  return name;
}

// The tensor itself, made contiguous in place where it is not (the collectives and the gradient buckets want it).
torch::Tensor Contiguous(torch::Tensor t) {
  if (!t.is_contiguous()) {
    torch::NoGradGuard no_grad;
    t.set_data(t.contiguous());
  }
  return t;
}

torch::Tensor AsTensor(const c10::IValue& v, const char* method) {
  if (!v.isTensor()) {
    throw std::runtime_error(std::string("the TorchScript model's ") + method + " returned a " + v.type()->repr_str() +
                             ", not a tensor");
  }
  return v.toTensor();
}

std::string ShapeText(at::IntArrayRef s) { return c10::str(s); }

// The output forward must give for `n` samples of `meta` where the task says (an empty vector: not said here).
std::vector<int64_t> ExpectedOutput(const Dataset& meta, int64_t n) {
  const auto shape = meta.SampleShape();
  if (meta.task == Task::kClassify) return {n, meta.classes};
  if (meta.task == Task::kSegment && shape.size() == 3) return {n, meta.classes, shape[1], shape[2]};
  if (meta.task == Task::kLanguageModel) return {n, shape.at(0), meta.classes};
  return {};
}

// forward on the first two samples (eval mode, no gradient) against the task, and loss(x, y) where defined.
bool CheckAgainstData(TorchScriptNetwork& net, const Dataset& meta, const std::string& prefix, std::string* error) {
  const int64_t n = std::min<int64_t>(2, meta.rows);
  if (n == 0) return true;
  std::vector<int64_t> shape = {n};
  for (int64_t s : meta.SampleShape()) shape.push_back(s);
  const auto x = torch::from_blob(const_cast<float*>(meta.x.data()), shape, torch::kFloat32).clone();
  const auto y = torch::from_blob(const_cast<int64_t*>(meta.y.data()), {n, meta.label_size}, torch::kInt64).clone();
  torch::NoGradGuard no_grad;
  net.eval();
  std::string what = "forward(x) on x of shape " + ShapeText(x.sizes());
  try {
    const auto out = net.forward(x);
    const auto want = ExpectedOutput(meta, n);
    if (!want.empty() && !out.sizes().equals(want)) {
      *error = prefix + what + " returned shape " + ShapeText(out.sizes()) + "; task " + TaskName(meta.task) +
               " with " + std::to_string(meta.classes) + " classes expects " + ShapeText(want);
      return false;
    }
    LossSpec spec;
    spec.task = meta.task;
    what = "the task's loss on forward(x)";
    if (!net.HasOwnLoss()) (void)TaskLoss(out, y, spec);
    what = "loss(x, y)";
    if (net.HasOwnLoss() && net.OwnLoss(x, y).numel() != 1) {
      *error = prefix + "loss(x, y) must return the batch's mean loss as a scalar; it returned shape " +
               ShapeText(net.OwnLoss(x, y).sizes());
      return false;
    }
  } catch (const c10::Error& e) {
    *error = prefix + what + " failed: " + OneLineError(e.what_without_backtrace());
    return false;
  } catch (const std::exception& e) {
    *error = prefix + what + " failed: " + OneLineError(e.what());
    return false;
  }
  net.train();
  return true;
}

}  // namespace

bool IsBiasOrNormParameter(const std::string& name, const torch::Tensor& p, const std::string& owner_type) {
  if (p.dim() <= 1) return true;
  const std::string leaf = Lower(name.substr(name.rfind('.') == std::string::npos ? 0 : name.rfind('.') + 1));
  if (leaf.size() >= 4 && leaf.compare(leaf.size() - 4, 4, "bias") == 0) return true;
  const std::string type =
      owner_type.substr(owner_type.rfind('.') == std::string::npos ? 0 : owner_type.rfind('.') + 1);
  return Lower(type).find("norm") != std::string::npos;
}

TorchScriptNetwork::TorchScriptNetwork(torch::jit::Module module, bool flatten_labels)
    : module_(std::move(module)), flatten_labels_(flatten_labels) {
  has_loss_ = module_.find_method("loss").has_value();
  // Python's modules all have it; one built in C++ may not (then train()/eval() leave it as it is).
  has_training_ = true;
  for (const auto& m : module_.modules()) has_training_ = has_training_ && m.hasattr("training");
  // The type of the module that holds each parameter, by the parameter's full name.
  std::map<std::string, std::string> owner;
  for (const auto& m : module_.named_modules()) {
    const auto type = m.value.type()->name();
    for (const auto& p : m.value.named_parameters(/*recurse=*/false)) {
      owner[m.name.empty() ? p.name : m.name + "." + p.name] = type ? type->qualifiedName() : "";
    }
  }
  for (const auto& p : module_.named_parameters(/*recurse=*/true)) {
    auto t = Contiguous(p.value);
    if (!t.requires_grad()) {
      register_buffer(Registered(p.name), t);
      continue;
    }
    register_parameter(Registered(p.name), t);
    names_.push_back(p.name);
    no_decay_.push_back(IsBiasOrNormParameter(p.name, t, owner[p.name]));
  }
  for (const auto& b : module_.named_buffers(/*recurse=*/true)) {
    register_buffer(Registered(b.name), Contiguous(b.value));
  }
}

// Runs `method` of the module. An error raised inside it (c10::Error, or the interpreter's own exception) says
// which method failed and keeps its TorchScript traceback, whose last line says what failed (the line a worker
// reports as the trial's last stderr line), without LibTorch's C++ frames.
torch::Tensor TorchScriptNetwork::Call(const char* name, const char* method, std::vector<c10::IValue> args) {
  c10::IValue out;
  const std::string failed = std::string("the TorchScript model's ") + method + " failed: ";
  // Under autocast (bf16) the graph executor runs the module unoptimized: LibTorch 1.13's optimized graphs
  // differentiate batch norm by a formula of their own that fails on bf16 (on CPU: "expected scalar type BFloat16
  // but found Float"; Python's PyTorch fails the same way), where autograd's own derivatives work. The setting is
  // this thread's only (thread_local in LibTorch), restored when the call returns.
  torch::jit::GraphOptimizerEnabledGuard optimize(!at::autocast::is_cpu_enabled() && !at::autocast::is_enabled());
  try {
    out = module_.get_method(name)(std::move(args));
  } catch (const c10::Error& e) {
    throw std::runtime_error(failed + e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw std::runtime_error(failed + e.what());
  }
  return AsTensor(out, method);
}

torch::Tensor TorchScriptNetwork::forward(torch::Tensor x) { return Call("forward", "forward(x)", {std::move(x)}); }

torch::Tensor TorchScriptNetwork::OwnLoss(const torch::Tensor& x, const torch::Tensor& y) {
  return Call("loss", "loss(x, y)", {x, flatten_labels_ && y.dim() == 2 && y.size(1) == 1 ? y.reshape({-1}) : y});
}

void TorchScriptNetwork::train(bool on) {
  Network::train(on);
  if (has_training_) module_.train(on);
}

std::shared_ptr<Network> MakeTorchScriptNetwork(const std::string& path, const Dataset& meta, std::string* error) {
  torch::jit::Module module;
  if (!LoadTorchScript(path, &module, error)) return nullptr;
  const std::string prefix = "--model torchscript:" + path + ": ";
  std::shared_ptr<TorchScriptNetwork> net;
  try {
    net = std::make_shared<TorchScriptNetwork>(std::move(module), meta.task == Task::kClassify);
  } catch (const std::exception& e) {
    *error = prefix + OneLineError(e.what());
    return nullptr;
  }
  if (net->parameters().empty()) {
    *error = prefix + "the module has no parameters that require a gradient: nothing to train";
    return nullptr;
  }
  if (!CheckAgainstData(*net, meta, prefix, error)) return nullptr;
  return net;
}

}  // namespace ladder::trainer
