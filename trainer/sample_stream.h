#pragma once
// SampleStream: the order in which training examples are seen. Epoch e is a permutation of the rows seeded by
// (seed, e), the same on every rank; the stream is the concatenation of the epochs, and every step takes the
// next G samples of it, whatever G is at that step. So the sample order is exact under a batch-size ramp and
// independent of how many ranks share a global batch. Plain C++, no LibTorch.
#include <cstdint>
#include <vector>

namespace ladder::trainer {

class SampleStream {
 public:
  SampleStream(int64_t rows, uint64_t seed);
  // The next `count` sample indices; *epochs_completed is how many epoch ends this batch crossed.
  std::vector<int64_t> Next(int64_t count, int* epochs_completed);
  int64_t epoch() const { return epoch_; }    // epoch of the next sample
  int64_t offset() const { return offset_; }  // position of the next sample within it
  void Seek(int64_t epoch, int64_t offset);
  // Samples left before `epochs` epochs are complete.
  int64_t Remaining(int64_t epochs) const { return (epochs - epoch_) * rows_ - offset_; }

 private:
  void Shuffle();
  int64_t rows_;
  uint64_t seed_;
  int64_t epoch_ = 0, offset_ = 0;
  std::vector<int64_t> perm_;
};

// Global batch at `step` under a ramp: base × the multiplier of the last milestone <= step.
struct RampPoint {
  int64_t step;
  int64_t multiplier;
};
int64_t GlobalBatchAt(int64_t base, const std::vector<RampPoint>& ramp, int64_t step);

}  // namespace ladder::trainer
