#include "trainer/fused_mlp.h"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace ladder::trainer {

namespace {

using Sgemm = void (*)(const char*, const char*, const int*, const int*, const int*, const float*, const float*,
                       const int*, const float*, const int*, const float*, float*, const int*);

Sgemm FindSgemm() {
  static const Sgemm f = reinterpret_cast<Sgemm>(dlsym(RTLD_DEFAULT, "sgemm_"));
  return f;
}

// Row-major C[m, n] = alpha * op(A)[m, k] * op(B)[k, n] + beta * C, with lda/ldb/ldc the row lengths as stored. In
// column-major terms that is C^T = op(B)^T op(A)^T, which is how it is handed to Fortran's sgemm.
void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (Sgemm f = FindSgemm()) {
    const char opa = ta ? 'T' : 'N', opb = tb ? 'T' : 'N';
    const int im = static_cast<int>(m), in = static_cast<int>(n), ik = static_cast<int>(k);
    const int ia = static_cast<int>(lda), ib = static_cast<int>(ldb), ic = static_cast<int>(ldc);
    f(&opb, &opa, &in, &im, &ik, &alpha, b, &ib, a, &ia, &beta, c, &ic);
    return;
  }
  auto opts = torch::TensorOptions().dtype(torch::kFloat32);
  auto A = torch::from_blob(const_cast<float*>(a), {ta ? k : m, lda}, opts).narrow(1, 0, ta ? m : k);
  auto B = torch::from_blob(const_cast<float*>(b), {tb ? n : k, ldb}, opts).narrow(1, 0, tb ? k : n);
  auto C = torch::from_blob(c, {m, ldc}, opts).narrow(1, 0, n);
  auto prod = torch::mm(ta ? A.t() : A, tb ? B.t() : B);
  if (beta == 0) {
    C.copy_(prod.mul_(alpha));
  } else {
    C.mul_(beta).add_(prod, alpha);
  }
}

}  // namespace

std::unique_ptr<FusedMlpStep> FusedMlpStep::Make(const std::vector<torch::Tensor>& params, int64_t features,
                                                 std::string* why) {
  if (params.empty() || params.size() % 2 != 0) {
    *why = "not weight and bias pairs";
    return nullptr;
  }
  std::vector<Layer> layers;
  int64_t in = features;
  for (size_t i = 0; i < params.size(); i += 2) {
    const auto &w = params[i], &b = params[i + 1];
    for (const auto& t : {w, b}) {
      if (!t.device().is_cpu() || t.scalar_type() != torch::kFloat32 || !t.is_contiguous()) {
        *why = "parameters are not contiguous fp32 CPU tensors";
        return nullptr;
      }
    }
    if (w.dim() != 2 || b.dim() != 1 || w.size(1) != in || b.size(0) != w.size(0)) {
      *why = "parameter " + std::to_string(i) + " is not a Linear layer taking " + std::to_string(in) + " inputs";
      return nullptr;
    }
    layers.push_back({w, b, in, w.size(0)});
    in = w.size(0);
  }
  return std::unique_ptr<FusedMlpStep>(new FusedMlpStep(std::move(layers)));
}

double FusedMlpStep::Step(const torch::Tensor& x, const torch::Tensor& y, double scale, bool accumulate) {
  const int64_t rows = x.size(0);
  const auto xc = x.reshape({rows, -1}).contiguous();
  const auto yc = y.reshape({-1}).contiguous();
  TORCH_CHECK(xc.scalar_type() == torch::kFloat32 && xc.size(1) == layers_.front().in && yc.size(0) == rows &&
                  yc.scalar_type() == torch::kInt64,
              "fused mlp step: a batch of ", xc.sizes(), " ", xc.scalar_type(), " with labels ", yc.sizes(), " ",
              yc.scalar_type(), " does not fit the model's ", layers_.front().in, " fp32 inputs");
  const float* input = xc.data_ptr<float>();
  const int64_t* labels = yc.data_ptr<int64_t>();
  const size_t nl = layers_.size();
  acts_.resize(nl);
  int64_t widest = 0;
  for (auto& l : layers_) widest = std::max(widest, l.out);
  for (auto& l : layers_) {
    // The gradient the step accumulates into: the caller's (zeroed) one, or a new zero tensor as autograd would.
    for (auto* t : {&l.w, &l.b}) {
      if (!t->grad().defined()) t->mutable_grad() = accumulate ? torch::zeros_like(*t) : torch::empty_like(*t);
    }
  }

  // Forward.
  const float* h = input;
  for (size_t i = 0; i < nl; ++i) {
    const Layer& l = layers_[i];
    auto& z = acts_[i];
    z.resize(static_cast<size_t>(rows * l.out));
    const float* bias = l.b.data_ptr<float>();
    for (int64_t r = 0; r < rows; ++r) std::memcpy(&z[r * l.out], bias, sizeof(float) * l.out);
    Gemm(false, true, rows, l.out, l.in, 1.0f, h, l.in, l.w.data_ptr<float>(), l.in, 1.0f, z.data(), l.out);
    if (i + 1 < nl) {
      float* v = z.data();
      for (size_t k = 0; k < z.size(); ++k) v[k] = v[k] > 0 ? v[k] : 0.0f;
    }
    h = z.data();
  }

  // Softmax cross-entropy: the mean loss, and dZ of the last layer.
  const int64_t classes = layers_.back().out;
  grad_a_.resize(static_cast<size_t>(rows * widest));
  grad_b_.resize(static_cast<size_t>(rows * widest));
  double loss = 0;
  const float g = static_cast<float>(scale / static_cast<double>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const float* z = &acts_.back()[r * classes];
    float* dz = &grad_a_[r * classes];
    const float mx = *std::max_element(z, z + classes);
    float sum = 0;
    for (int64_t c = 0; c < classes; ++c) sum += (dz[c] = std::exp(z[c] - mx));
    const int64_t label = labels[r];
    TORCH_CHECK(label >= 0 && label < classes, "fused mlp step: label ", label, " is not one of the ", classes,
                " classes");
    loss += static_cast<double>(std::log(sum) + mx - z[label]);
    const float inv = 1.0f / sum;
    for (int64_t c = 0; c < classes; ++c) dz[c] = dz[c] * inv * g;
    dz[label] -= g;
  }

  // Backward: dW += dZ^T H, db += column sums of dZ, dH = dZ W masked where H was clipped by the relu.
  for (size_t i = nl; i-- > 0;) {
    const Layer& l = layers_[i];
    const float* below = i == 0 ? input : acts_[i - 1].data();
    Gemm(true, false, l.out, l.in, rows, 1.0f, grad_a_.data(), l.out, below, l.in, accumulate ? 1.0f : 0.0f,
         l.w.mutable_grad().data_ptr<float>(), l.in);
    float* db = l.b.mutable_grad().data_ptr<float>();
    if (!accumulate) std::memset(db, 0, sizeof(float) * l.out);
    for (int64_t r = 0; r < rows; ++r) {
      const float* dz = &grad_a_[r * l.out];
      for (int64_t c = 0; c < l.out; ++c) db[c] += dz[c];
    }
    if (i == 0) break;
    Gemm(false, false, rows, l.in, l.out, 1.0f, grad_a_.data(), l.out, l.w.data_ptr<float>(), l.in, 0.0f,
         grad_b_.data(), l.in);
    const float* act = acts_[i - 1].data();
    float* dh = grad_b_.data();
    for (int64_t k = 0; k < rows * l.in; ++k) dh[k] = act[k] > 0 ? dh[k] : 0.0f;  // a select: vectorizes
    std::swap(grad_a_, grad_b_);
  }
  return loss / static_cast<double>(rows);
}

}  // namespace ladder::trainer
