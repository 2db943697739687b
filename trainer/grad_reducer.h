#pragma once
// GradientReducer: averages gradients across ranks in buckets, overlapping each bucket's allreduce with the
// rest of the backward pass (the mechanism of PyTorch DDP's Reducer, much simplified).
//
// Parameters are packed into buckets of at most `bucket_cap_bytes` in reverse order (gradients of the last
// layers are ready first); the first bucket is capped at `first_bucket_cap_bytes`, so that its allreduce
// starts while most of the backward pass is still to run. A hook on every parameter copies its gradient into its bucket's flat buffer; when a
// bucket is complete its allreduce starts at once. Finish() (after backward) starts any incomplete bucket
// (a parameter that got no gradient counts as zero), waits for all, and makes each .grad a view of its
// averaged slice. Gradients are scaled by 1/ranks as they are copied in, so each element is touched once
// before the allreduce and never after. The caller must reset gradients to none (not zero them in place)
// before the next backward pass: Optimizer::ZeroGrad does.
//
// Threading: one thread (the training loop's; CPU autograd runs hooks on it). Collectives are issued in the
// same bucket order on every rank only if the backward pass produces gradients in the same order, which holds
// for the same model on every rank.
#include <torch/torch.h>

#include <memory>
#include <vector>

#include "trainer/comm/communicator.h"

namespace ladder::trainer {

inline constexpr int64_t kDefaultBucketCapBytes = 25 * 1024 * 1024;      // as DDP
inline constexpr int64_t kDefaultFirstBucketCapBytes = 1024 * 1024;      // as DDP: the first bucket is small so
                                                                         // communication starts early

class GradientReducer {
 public:
  GradientReducer(std::vector<torch::Tensor> params, comm::Communicator& comm,
                  int64_t bucket_cap_bytes = kDefaultBucketCapBytes,
                  int64_t first_bucket_cap_bytes = kDefaultFirstBucketCapBytes);
  // Call before each step's first backward pass.
  void Prepare();
  // Gradient accumulation: before each micro-batch's backward say whether it is the step's last. Earlier
  // micro-batches only accumulate into the buckets; the allreduces start during the last one.
  void SetFinalMicroBatch(bool final) { final_ = final; }
  // Call after backward: returns the seconds spent waiting for allreduces after backward ended.
  double Finish();
  size_t bucket_count() const { return buckets_.size(); }
  // What the per-parameter hooks call: parameter `param`'s gradient from one backward pass. Public so that
  // a benchmark can drive the reducer without autograd.
  void OnGrad(size_t param, const torch::Tensor& grad);

 private:
  struct Bucket {
    torch::Tensor flat;
    std::vector<size_t> params;      // indices into params_
    std::vector<int64_t> offsets;    // element offset of each param in flat
    std::vector<bool> ready;
    std::vector<bool> touched;       // got a gradient in this step
    int pending = 0;
    std::unique_ptr<comm::Work> work;
  };
  void Launch(Bucket& b);

  std::vector<torch::Tensor> params_;
  comm::Communicator& comm_;
  std::vector<Bucket> buckets_;
  std::vector<std::pair<size_t, size_t>> where_;  // param → (bucket, slot)
  bool final_ = true;
};

}  // namespace ladder::trainer
