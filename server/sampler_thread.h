#pragma once
// SamplerThread: the searches' samplers, run on a thread of their own instead of the coordinator's loop.
//
// A model-based sampler's suggestion costs milliseconds to seconds (GP-BO refits its hyperparameters: up to 1.5 s
// with 200 trials in its model). On the loop that time held every heartbeat, exit, metrics batch and start behind
// it. Here every call on a sampler — Tell, AddPending, Ask, Waiting — is a job on one thread, run in the order the
// loop posted them, and Ask's answer comes back to the loop by a post.
//
// Threads and ownership:
//   - The loop (the coordinator's io_context) calls every method here, builds each sampler (SearchManager) and
//     keeps it in its search's record, but never calls it: from its first job on, a sampler is touched only by jobs
//     on the sampler thread, one at a time (a job holds a reference; the object is destroyed after its last job by
//     whichever side drops the last reference, never while a job runs it).
//   - Jobs run in the order they were posted (one thread, one strand), so a sampler sees its Tells and Asks in the
//     loop's order, as when it ran on the loop: its suggestions are the same (search/samplers/sampler.h's
//     determinism contract).
//   - One batch of asks is in flight at a time (asking()): the pass that wants points while one is out waits for
//     its answer, which asks for another pass. `done` runs on the loop, unless Stop came first (then never).
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "search/samplers/sampler.h"

namespace ladder::server {

class SamplerThread {
 public:
  // `count` configurations for trials first, first + 1, ... of the sampler.
  struct Request {
    int64_t search_id = 0;
    std::shared_ptr<search::Sampler> sampler;
    int64_t first = 0;
    int count = 0;
  };
  // Fewer points than asked: the sampler had no more for the next number; `waiting` is its Waiting() then (more
  // may come once a pending trial is told). `error`: Ask threw (what it said); the points before it are kept.
  struct Answer {
    int64_t search_id = 0;
    int64_t first = 0;
    int count = 0;
    std::vector<search::Params> points;
    bool waiting = false;
    std::string error;
  };

  explicit SamplerThread(boost::asio::io_context& loop);
  ~SamplerThread();  // Stop
  SamplerThread(const SamplerThread&) = delete;
  SamplerThread& operator=(const SamplerThread&) = delete;

  void Tell(std::shared_ptr<search::Sampler> sampler, int64_t number, search::Params params,
            std::optional<double> objective);
  void AddPending(std::shared_ptr<search::Sampler> sampler, int64_t number, search::Params params);
  // Asks each request's sampler in turn; `done` gets their answers, in the requests' order, on the loop. Only when
  // !asking().
  void Ask(std::vector<Request> requests, std::function<void(std::vector<Answer>)> done);
  bool asking() const { return asking_; }
  // Blocks until every job posted so far has run: an answer is then on the loop's queue. For tests that run the
  // loop by hand; on the loop in a daemon it would hold the loop as a suggestion on it did.
  void WaitForJobs();

  // No more answers: the jobs not yet begun are dropped, a batch being asked stops after the suggestion in hand (at
  // most one refit), the thread is joined. Idempotent.
  void Stop();

 private:
  boost::asio::io_context& loop_;
  boost::asio::thread_pool thread_{1};
  // Every job goes through the strand: run one at a time, in the order posted.
  boost::asio::strand<boost::asio::thread_pool::executor_type> jobs_{thread_.get_executor()};
  // While a batch is out: the loop does not run out of work before its answer (io_context::run would return).
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> loop_work_;
  // Expires at Stop: an answer posted before it and run after it is dropped. Read and reset on the loop only.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  bool asking_ = false;
  std::atomic<bool> stopping_{false};  // set by Stop; read by a batch between its suggestions
};

}  // namespace ladder::server
