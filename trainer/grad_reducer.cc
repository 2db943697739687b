#include "trainer/grad_reducer.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>

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
    buckets_.push_back(std::move(cur));
    cur = Bucket{};
    elems = 0;
  };
  for (size_t k = params_.size(); k-- > 0;) {
    const auto& p = params_[k];
    int64_t bytes = p.numel() * static_cast<int64_t>(p.element_size());
    const int64_t cap = buckets_.empty() ? std::min(first_bucket_cap_bytes, bucket_cap_bytes) : bucket_cap_bytes;
    if (!cur.params.empty() && (elems * static_cast<int64_t>(p.element_size()) + bytes > cap ||
                                p.scalar_type() != params_[cur.params.front()].scalar_type() ||
                                p.device() != params_[cur.params.front()].device())) {
      close();
    }
    where_[k] = {buckets_.size(), cur.params.size()};
    cur.params.push_back(k);
    cur.offsets.push_back(elems);
    elems += p.numel();
  }
  close();
  // The accumulator of a leaf runs after the tensor's own hooks and after the gradient is accumulated, so its
  // post-hook sees the gradient in the bucket.
  for (size_t k = 0; k < params_.size(); ++k) {
    auto acc = torch::autograd::impl::grad_accumulator(params_[k]);
    hook_keys_.push_back(acc->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
        [this, k](const torch::autograd::variable_list& outputs, const torch::autograd::variable_list&) {
          MarkReady(k);
          return outputs;
        })));
    accumulators_.push_back(std::move(acc));
  }
  ZeroGrad();
}

GradientReducer::~GradientReducer() {
  for (size_t k = 0; k < accumulators_.size(); ++k) accumulators_[k]->del_post_hook(hook_keys_[k]);
}

void GradientReducer::ZeroGrad() {
  torch::NoGradGuard no_grad;
  for (auto& b : buckets_) {
    b.flat.zero_();
    for (size_t s = 0; s < b.params.size(); ++s) {
      auto& p = params_[b.params[s]];
      auto view = b.flat.narrow(0, b.offsets[s], p.numel()).view_as(p);
      if (!p.grad().defined() || p.grad().data_ptr() != view.data_ptr()) p.mutable_grad() = view;
    }
  }
}

void GradientReducer::Prepare() {
  for (auto& b : buckets_) {
    b.pending = static_cast<int>(b.params.size());
    std::fill(b.ready.begin(), b.ready.end(), false);
    b.work.reset();
  }
  final_ = true;
}

void GradientReducer::MarkReady(size_t k) {
  if (!final_) return;
  auto [bi, slot] = where_[k];
  Bucket& b = buckets_[bi];
  if (b.ready[slot]) return;
  b.ready[slot] = true;
  if (--b.pending == 0) b.work = comm_.AllreduceSum(b.flat);
}

double GradientReducer::Finish() {
  auto t0 = std::chrono::steady_clock::now();
  for (auto& b : buckets_) {
    if (!b.work) b.work = comm_.AllreduceSum(b.flat);
  }
  for (auto& b : buckets_) b.work->Wait();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace ladder::trainer
