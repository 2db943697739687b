#include "trainer/grad_reducer.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <chrono>

namespace ladder::trainer {

GradientReducer::GradientReducer(std::vector<torch::Tensor> params, comm::Communicator& comm,
                                 int64_t bucket_cap_bytes, int64_t first_bucket_cap_bytes, bool overlap)
    : overlap_(overlap),
      params_(std::move(params)),
      comm_(comm),
      grad_views_(params_.size()),
      spans_(params_.size()),
      ready_(params_.size(), 0) {
  // Runs of parameters (in reverse order) that share a dtype and a device: one buffer each.
  std::vector<size_t> order(params_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = order.size() - 1 - i;
  size_t run_begin = 0;
  while (run_begin < order.size()) {
    const auto& first = params_[order[run_begin]];
    size_t run_end = run_begin;
    int64_t elems = 0;
    std::vector<int64_t> offsets;
    while (run_end < order.size() && params_[order[run_end]].scalar_type() == first.scalar_type() &&
           params_[order[run_end]].device() == first.device()) {
      offsets.push_back(elems);
      elems += params_[order[run_end]].numel();
      ++run_end;
    }
    auto buffer = comm_.NewBuffer(elems, first.options().requires_grad(false));
    // Buckets: consecutive ranges of exactly the cap (the first bucket of all: the first-bucket cap).
    const int64_t esize = static_cast<int64_t>(first.element_size());
    const size_t first_bucket = buckets_.size();
    for (int64_t pos = 0; pos < elems;) {
      const int64_t cap_bytes = buckets_.empty() ? std::min(first_bucket_cap_bytes, bucket_cap_bytes) : bucket_cap_bytes;
      const int64_t len = std::min(std::max<int64_t>(1, cap_bytes / esize), elems - pos);
      Bucket b;
      b.flat = buffer.narrow(0, pos, len);
      buckets_.push_back(std::move(b));
      pos += len;
    }
    // Each parameter's view and the buckets its range overlaps.
    for (size_t j = run_begin; j < run_end; ++j) {
      const size_t k = order[j];
      const int64_t begin = offsets[j - run_begin], end = begin + params_[k].numel();
      grad_views_[k] = buffer.narrow(0, begin, params_[k].numel()).view(params_[k].sizes());
      size_t bi = first_bucket, lo = buckets_.size(), hi = buckets_.size();
      for (int64_t pos = 0; bi < buckets_.size(); pos += buckets_[bi].flat.numel(), ++bi) {
        const int64_t bend = pos + buckets_[bi].flat.numel();
        if (bend > begin && pos < end) {
          if (lo == buckets_.size()) lo = bi;
          hi = bi + 1;
          ++buckets_[bi].params;
        }
      }
      spans_[k] = lo == buckets_.size() ? std::make_pair(lo, lo) : std::make_pair(lo, hi);
    }
    buffers_.push_back(std::move(buffer));
    run_begin = run_end;
  }
  // The accumulator of a leaf runs after the tensor's own hooks and after the gradient is accumulated, so its
  // post-hook sees the gradient in the buffer.
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
  Prepare();
}

GradientReducer::~GradientReducer() {
  for (size_t k = 0; k < accumulators_.size(); ++k) accumulators_[k]->del_post_hook(hook_keys_[k]);
}

std::vector<int64_t> GradientReducer::bucket_bytes() const {
  std::vector<int64_t> out;
  for (const auto& b : buckets_) out.push_back(b.flat.numel() * static_cast<int64_t>(b.flat.element_size()));
  return out;
}

void GradientReducer::ZeroGrad() {
  torch::NoGradGuard no_grad;
  for (auto& buffer : buffers_) buffer.zero_();
  for (size_t k = 0; k < params_.size(); ++k) {
    auto& p = params_[k];
    if (!p.grad().defined() || !p.grad().is_same(grad_views_[k])) p.mutable_grad() = grad_views_[k];
  }
}

void GradientReducer::Prepare() {
  for (auto& b : buckets_) {
    b.pending = b.params;
    b.work.reset();
  }
  std::fill(ready_.begin(), ready_.end(), 0);
  final_ = true;
}

void GradientReducer::MarkReady(size_t k) {
  if (!overlap_ || !final_ || ready_[k]) return;
  ready_[k] = 1;
  for (size_t bi = spans_[k].first; bi < spans_[k].second; ++bi) {
    Bucket& b = buckets_[bi];
    if (--b.pending == 0) b.work = comm_.AllreduceSum(b.flat);
  }
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
