#pragma once
// GradientReducer: averages gradients across ranks in buckets, each bucket's allreduce overlapped with the rest
// of the backward pass (PyTorch DDP's Reducer with gradient_as_bucket_view, much simplified).
//
// Parameters are packed into flat buckets of at most `bucket_cap_bytes` in reverse order (gradients of the last
// layers are ready first); the first bucket is capped at `first_bucket_cap_bytes`, so that its allreduce starts
// while most of the backward pass is still to run. Every parameter's .grad is a view of its slice of a bucket,
// so autograd accumulates straight into the buckets and no gradient is ever copied. A post-hook on each
// parameter's gradient accumulator marks it ready once its gradient is in the bucket; when all of a bucket's
// parameters are ready its allreduce starts at once. Finish() (after backward) starts the buckets that still
// wait (a parameter that got no gradient contributes its zeros), waits for all, and leaves the sums in place.
//
// Averaging: the caller scales its loss by 1/ranks (see train_loop.cc), so the sum across ranks is the mean
// gradient and no pass over the gradients is needed for it either.
//
// Per step: ZeroGrad() (zeroes the buckets; replaces the optimizer's ZeroGrad), Prepare(), backward pass(es),
// Finish(), then the optimizer reads and may modify .grad in place.
//
// Threading: hooks run on the thread that runs the backward pass (the training loop's for CPU tensors, an
// autograd device thread for CUDA ones, while the loop blocks in backward()); collectives are issued in the same
// bucket order on every rank as long as the backward pass produces gradients in the same order, which holds
// for the same model on every rank.
#include <torch/torch.h>

#include <memory>
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
  GradientReducer(std::vector<torch::Tensor> params, comm::Communicator& comm,
                  int64_t bucket_cap_bytes = kDefaultBucketCapBytes,
                  int64_t first_bucket_cap_bytes = kDefaultFirstBucketCapBytes);
  ~GradientReducer();
  // Zeroes every gradient (the buckets) and makes sure each .grad is its bucket view again.
  void ZeroGrad();
  // Call before each step's first backward pass.
  void Prepare();
  // Gradient accumulation: before each micro-batch's backward say whether it is the step's last. Earlier
  // micro-batches only accumulate into the buckets; the allreduces start during the last one.
  void SetFinalMicroBatch(bool final) { final_ = final; }
  // Call after backward: returns the seconds spent waiting for allreduces after backward ended.
  double Finish();
  size_t bucket_count() const { return buckets_.size(); }
  // What the accumulator post-hooks call once parameter `param`'s gradient is in its bucket. Public so that a
  // benchmark can drive the reducer without autograd.
  void MarkReady(size_t param);

 private:
  struct Bucket {
    torch::Tensor flat;
    std::vector<size_t> params;      // indices into params_
    std::vector<int64_t> offsets;    // element offset of each param in flat
    std::vector<bool> ready;
    int pending = 0;
    std::unique_ptr<comm::Work> work;
  };

  std::vector<torch::Tensor> params_;
  comm::Communicator& comm_;
  std::vector<Bucket> buckets_;
  std::vector<std::pair<size_t, size_t>> where_;  // param → (bucket, slot)
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;  // kept alive: they hold our hooks
  std::vector<uintptr_t> hook_keys_;
  bool final_ = true;
};

}  // namespace ladder::trainer
