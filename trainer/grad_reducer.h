#pragma once
// GradientReducer: averages gradients across ranks in buckets, each bucket's allreduce overlapped with the rest
// of the backward pass (PyTorch DDP's Reducer with gradient_as_bucket_view, simplified).
//
// Layout: the gradients live in flat buffers, the parameters in reverse order (the last layers' gradients are
// ready first), one buffer per run of parameters with the same dtype and device; every parameter's .grad is a
// view of its slice, so autograd accumulates straight into the buffers and no gradient is ever copied.
// Buckets are consecutive ranges of a buffer of exactly `bucket_cap_bytes` (the buffer's last one may be
// shorter), the first bucket of all `first_bucket_cap_bytes`, so that its allreduce starts while most of the
// backward pass is still to run. A bucket boundary may cut a parameter: unlike DDP, which never splits a
// tensor (its buckets overshoot the cap by up to one tensor), every allreduce has the size that was asked for.
//
// Readiness: a post-hook on each parameter's gradient accumulator marks it ready once its gradient is in the
// buffer; a bucket's allreduce starts as soon as every parameter overlapping it is ready. Finish() (after
// backward) starts the buckets that still wait (a parameter that got no gradient contributes its zeros), waits
// for all, and leaves the sums in place.
//
// Averaging: the caller scales its loss by 1/ranks (see train_loop.cc), so the sum across ranks is the mean
// gradient and no pass over the gradients is needed for it either.
//
// Per step: ZeroGrad() (zeroes the buffers; replaces the optimizer's ZeroGrad), Prepare(), backward pass(es),
// Finish(), then the optimizer reads and may modify .grad in place.
//
// Threading: hooks run on the thread that runs the backward pass (the training loop's for CPU tensors, an
// autograd device thread for CUDA ones, while the loop blocks in backward()); collectives are issued in the same
// bucket order on every rank as long as the backward pass produces gradients in the same order, which holds
// for the same model on every rank.
#include <torch/torch.h>

#include <memory>
#include <utility>
#include <vector>

#include "trainer/comm/communicator.h"

namespace torch::autograd {
struct Node;
}

namespace ladder::trainer {

inline constexpr int64_t kDefaultBucketCapBytes = 25 * 1024 * 1024;      // as DDP
inline constexpr int64_t kDefaultFirstBucketCapBytes = 1024 * 1024;      // as DDP: the first bucket is small so
                                                                         // communication starts early

class GradientReducer {
 public:
  // overlap false: no allreduce starts during the backward pass; Finish() starts them all (for CPU ranks with no
  // core to spare: there the communication only takes cycles from the backward pass and adds hand-offs).
  GradientReducer(std::vector<torch::Tensor> params, comm::Communicator& comm,
                  int64_t bucket_cap_bytes = kDefaultBucketCapBytes,
                  int64_t first_bucket_cap_bytes = kDefaultFirstBucketCapBytes, bool overlap = true);
  ~GradientReducer();
  // Zeroes every gradient (the buffers) and makes sure each .grad is its buffer view again.
  void ZeroGrad();
  // Call before each step's first backward pass.
  void Prepare();
  // Gradient accumulation: before each micro-batch's backward say whether it is the step's last. Earlier
  // micro-batches only accumulate into the buffers; the allreduces start during the last one.
  void SetFinalMicroBatch(bool final) { final_ = final; }
  // Call after backward: returns the seconds spent waiting for allreduces after backward ended.
  double Finish();
  size_t bucket_count() const { return buckets_.size(); }
  // Each bucket's size in bytes, in bucket order (the order they are launched in when gradients arrive in
  // reverse parameter order).
  std::vector<int64_t> bucket_bytes() const;
  // The flat gradient buffers (one per run of parameters sharing a dtype and device; every .grad is a view of
  // one). A benchmark reduces the very same bytes with raw collectives through them.
  const std::vector<torch::Tensor>& buffers() const { return buffers_; }
  // What the accumulator post-hooks call once parameter `param`'s gradient is in its buffer. Public so that a
  // benchmark can drive the reducer without autograd.
  void MarkReady(size_t param);

 private:
  struct Bucket {
    torch::Tensor flat;  // a range of one of buffers_
    int params = 0;      // parameters overlapping it
    int pending = 0;     // of those, not ready yet this step
    std::unique_ptr<comm::Work> work;
  };

  bool overlap_;
  std::vector<torch::Tensor> params_;
  comm::Communicator& comm_;
  std::vector<torch::Tensor> buffers_;
  std::vector<Bucket> buckets_;
  std::vector<torch::Tensor> grad_views_;              // param → its view of a buffer
  std::vector<std::pair<size_t, size_t>> spans_;       // param → buckets [first, end) it overlaps
  std::vector<char> ready_;                            // param → marked ready this step
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;  // kept alive: they hold our hooks
  std::vector<uintptr_t> hook_keys_;
  bool final_ = true;
};

}  // namespace ladder::trainer
