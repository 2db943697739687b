#include "trainer/grad_reducer.h"

#include <chrono>

namespace ladder::trainer {

GradientReducer::GradientReducer(std::vector<torch::Tensor> params, comm::Communicator& comm,
                                 int64_t bucket_cap_bytes, int64_t first_bucket_cap_bytes)
    : params_(std::move(params)), comm_(comm), where_(params_.size()) {
  Bucket cur;
  int64_t elems = 0;
  auto close = [&] {
    if (cur.params.empty()) return;
    cur.flat = torch::zeros({elems}, params_[cur.params.front()].options().requires_grad(false));
    cur.ready.assign(cur.params.size(), false);
    cur.touched.assign(cur.params.size(), false);
    buckets_.push_back(std::move(cur));
    cur = Bucket{};
    elems = 0;
  };
  for (size_t k = params_.size(); k-- > 0;) {
    const auto& p = params_[k];
    int64_t bytes = p.numel() * static_cast<int64_t>(p.element_size());
    const int64_t cap = buckets_.empty() ? std::min(first_bucket_cap_bytes, bucket_cap_bytes) : bucket_cap_bytes;
    if (!cur.params.empty() && (elems * static_cast<int64_t>(p.element_size()) + bytes > cap ||
                                p.scalar_type() != params_[cur.params.front()].scalar_type())) {
      close();
    }
    where_[k] = {buckets_.size(), cur.params.size()};
    cur.params.push_back(k);
    cur.offsets.push_back(elems);
    elems += p.numel();
  }
  close();
  for (size_t k = 0; k < params_.size(); ++k) {
    params_[k].register_hook([this, k](torch::Tensor grad) { OnGrad(k, grad); });
  }
}

void GradientReducer::Prepare() {
  for (auto& b : buckets_) {
    b.pending = static_cast<int>(b.params.size());
    std::fill(b.ready.begin(), b.ready.end(), false);
    std::fill(b.touched.begin(), b.touched.end(), false);
    b.work.reset();
  }
  final_ = true;
}

void GradientReducer::OnGrad(size_t k, const torch::Tensor& grad) {
  auto [bi, slot] = where_[k];
  Bucket& b = buckets_[bi];
  auto dst = b.flat.narrow(0, b.offsets[slot], grad.numel());
  // Pre-divided by the world size, so the sum across ranks is the average (one pass over the memory).
  // First gradient of this step: write; later ones (micro-batches, shared weights): accumulate.
  const double scale = 1.0 / comm_.size();
  if (b.touched[slot]) {
    dst.add_(grad.reshape({-1}), scale);
  } else {
    torch::mul_out(dst, grad.reshape({-1}), scale);
    b.touched[slot] = true;
  }
  if (!final_ || b.ready[slot]) return;
  b.ready[slot] = true;
  if (--b.pending == 0) Launch(b);
}

void GradientReducer::Launch(Bucket& b) { b.work = comm_.AllreduceSum(b.flat); }

double GradientReducer::Finish() {
  auto t0 = std::chrono::steady_clock::now();
  for (auto& b : buckets_) {
    if (b.work) continue;
    for (size_t s = 0; s < b.params.size(); ++s) {
      if (!b.touched[s]) b.flat.narrow(0, b.offsets[s], params_[b.params[s]].numel()).zero_();
    }
    Launch(b);
  }
  // The averaged gradients stay in the buckets: each .grad becomes a view of its slice (no copy back).
  // ZeroGrad must then drop the views (set them to none), or autograd would accumulate into the buckets.
  torch::NoGradGuard no_grad;
  for (auto& b : buckets_) {
    b.work->Wait();
    for (size_t s = 0; s < b.params.size(); ++s) {
      auto& p = params_[b.params[s]];
      p.mutable_grad() = b.flat.narrow(0, b.offsets[s], p.numel()).view_as(p);
    }
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace ladder::trainer
