#pragma once
// BatchPrefetcher: assembles this rank's share of each global batch on a background thread, `depth` batches
// ahead of the training loop (the gather of rows and, for a GPU, the copy into pinned memory overlap the step
// that runs meanwhile).
//
// It walks the same SampleStream the loop would (sample_stream.h): step s takes the next GlobalBatchAt(s)
// samples, and this rank keeps positions rank, rank + world, ... of them (DistributedSampler semantics). Each
// Batch carries the stream position after it, which is what a checkpoint must record — not the producer's
// position, which is ahead. The sequence of batches is the same with or without the thread (depth 0 builds each
// batch in Next()), so prefetching never changes a result.
//
// Threading: Next() is called from one thread (the training loop's); the producer thread only reads the
// tensors given to the constructor. The destructor stops and joins the producer.
#include <torch/torch.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "trainer/sample_stream.h"

namespace ladder::trainer {

struct Batch {
  int64_t step = 0;        // the optimizer step this batch is for
  int64_t global = 0;      // global batch size at that step
  torch::Tensor x, y;      // this rank's rows, on the CPU (pinned when asked)
  int epochs_completed = 0;  // epoch ends this batch crossed
  int64_t epoch_after = 0, offset_after = 0;  // stream position after this batch (for checkpoints)
  bool last = false;       // no batch follows
};

struct PrefetchOptions {
  int depth = 2;          // batches prepared ahead; 0: synchronous
  int rank = 0, world = 1;
  int64_t epochs = 1;     // stop when fewer than a global batch of samples is left in these epochs
  int64_t max_steps = 0;  // stop after this step count (0: no cap)
  bool pin_memory = false;
  // The stream is over this rank's own rows (a sharded training set, csv_dataset.h): each step takes the next
  // global/world samples of it, all for this rank.
  bool local_shard = false;
};

class BatchPrefetcher {
 public:
  // `stream` is positioned where training (re)starts, `first_step` is that step's number.
  BatchPrefetcher(torch::Tensor x, torch::Tensor y, SampleStream stream, int64_t first_step,
                  std::function<int64_t(int64_t)> global_at, PrefetchOptions options);
  ~BatchPrefetcher();
  BatchPrefetcher(const BatchPrefetcher&) = delete;
  BatchPrefetcher& operator=(const BatchPrefetcher&) = delete;

  // The next batch; nullopt when training is done.
  std::optional<Batch> Next();

 private:
  bool HasMore() const;  // on the producer's stream
  Batch Make();
  void Produce();

  torch::Tensor x_, y_;
  SampleStream stream_;
  int64_t step_;
  std::function<int64_t(int64_t)> global_at_;
  PrefetchOptions o_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Batch> ready_;
  bool done_ = false, stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace ladder::trainer
