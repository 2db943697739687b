#include "trainer/batch_prefetcher.h"

namespace ladder::trainer {

BatchPrefetcher::BatchPrefetcher(torch::Tensor x, torch::Tensor y, SampleStream stream, int64_t first_step,
                                 std::function<int64_t(int64_t)> global_at, PrefetchOptions options)
    : x_(std::move(x)), y_(std::move(y)), stream_(std::move(stream)), step_(first_step),
      global_at_(std::move(global_at)), o_(options) {
  if (o_.depth > 0) thread_ = std::thread([this] { Produce(); });
}

BatchPrefetcher::~BatchPrefetcher() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool BatchPrefetcher::HasMore() const {
  const int64_t take = o_.local_shard ? global_at_(step_) / o_.world : global_at_(step_);
  return stream_.Remaining(o_.epochs) >= take && !(o_.max_steps > 0 && step_ >= o_.max_steps);
}

Batch BatchPrefetcher::Make() {
  Batch b;
  b.step = step_;
  b.global = global_at_(step_);
  const auto all = stream_.Next(o_.local_shard ? b.global / o_.world : b.global, &b.epochs_completed);
  std::vector<int64_t> mine;
  mine.reserve(all.size() / static_cast<size_t>(o_.world) + 1);
  const size_t first = o_.local_shard ? 0 : static_cast<size_t>(o_.rank);
  const size_t stride = o_.local_shard ? 1 : static_cast<size_t>(o_.world);
  for (size_t i = first; i < all.size(); i += stride) mine.push_back(all[i]);
  const auto idx = torch::tensor(mine, torch::kInt64);
  b.x = x_.index_select(0, idx);
  b.y = y_.index_select(0, idx);
  if (o_.pin_memory) {
    b.x = b.x.pin_memory();
    b.y = b.y.pin_memory();
  }
  b.epoch_after = stream_.epoch();
  b.offset_after = stream_.offset();
  ++step_;
  b.last = !HasMore();
  return b;
}

void BatchPrefetcher::Produce() {
  try {
    for (;;) {
      {
        std::unique_lock<std::mutex> g(mu_);
        cv_.wait(g, [this] { return stop_ || ready_.size() < static_cast<size_t>(o_.depth); });
        if (stop_) return;
      }
      if (!HasMore()) break;
      Batch b = Make();
      std::lock_guard<std::mutex> g(mu_);
      ready_.push_back(std::move(b));
      cv_.notify_all();
    }
  } catch (...) {
    std::lock_guard<std::mutex> g(mu_);
    error_ = std::current_exception();
  }
  std::lock_guard<std::mutex> g(mu_);
  done_ = true;
  cv_.notify_all();
}

std::optional<Batch> BatchPrefetcher::Next() {
  if (o_.depth == 0) {
    if (!HasMore()) return std::nullopt;
    return Make();
  }
  std::unique_lock<std::mutex> g(mu_);
  cv_.wait(g, [this] { return !ready_.empty() || done_; });
  if (ready_.empty()) {
    if (error_) std::rethrow_exception(error_);
    return std::nullopt;
  }
  Batch b = std::move(ready_.front());
  ready_.pop_front();
  cv_.notify_all();
  return b;
}

}  // namespace ladder::trainer
