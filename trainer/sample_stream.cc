#include "trainer/sample_stream.h"

#include <algorithm>
#include <numeric>
#include <random>

namespace ladder::trainer {

SampleStream::SampleStream(int64_t rows, uint64_t seed) : rows_(rows), seed_(seed) { Shuffle(); }

void SampleStream::Shuffle() {
  perm_.resize(static_cast<size_t>(rows_));
  std::iota(perm_.begin(), perm_.end(), 0);
  std::mt19937_64 rng(seed_ * 1000003ULL + static_cast<uint64_t>(epoch_));
  std::shuffle(perm_.begin(), perm_.end(), rng);
}

std::vector<int64_t> SampleStream::Next(int64_t count, int* epochs_completed) {
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(count));
  *epochs_completed = 0;
  while (static_cast<int64_t>(out.size()) < count) {
    int64_t take = std::min(count - static_cast<int64_t>(out.size()), rows_ - offset_);
    out.insert(out.end(), perm_.begin() + offset_, perm_.begin() + offset_ + take);
    offset_ += take;
    if (offset_ == rows_) {
      ++epoch_;
      offset_ = 0;
      ++*epochs_completed;
      Shuffle();
    }
  }
  return out;
}

void SampleStream::Seek(int64_t epoch, int64_t offset) {
  epoch_ = epoch;
  offset_ = offset;
  Shuffle();
}

int64_t GlobalBatchAt(int64_t base, const std::vector<RampPoint>& ramp, int64_t step) {
  int64_t mult = 1;
  for (const auto& r : ramp) {
    if (step >= r.step) mult = r.multiplier;
  }
  return base * mult;
}

}  // namespace ladder::trainer
