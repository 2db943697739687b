#pragma once
// SerialExecutor: one background thread that runs submitted tasks one at a time, in submission order. The MPI
// backend runs every MPI call on one (as Horovod does); the hierarchical allreduce runs its three phases on
// one, so that collectives leave every rank in the order the trainer issued them.
//
// Threading: Submit may be called from any thread. The destructor runs the tasks still queued, then joins.
// A task's exception reaches whoever waits on its future.
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "trainer/comm/communicator.h"

namespace ladder::trainer::comm {

class SerialExecutor {
 public:
  SerialExecutor() : thread_([this] { Loop(); }) {}
  ~SerialExecutor() {
    {
      std::lock_guard<std::mutex> g(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  SerialExecutor(const SerialExecutor&) = delete;
  SerialExecutor& operator=(const SerialExecutor&) = delete;

  std::future<void> Submit(std::function<void()> fn) {
    std::packaged_task<void()> task(std::move(fn));
    auto f = task.get_future();
    {
      std::lock_guard<std::mutex> g(mu_);
      queue_.push_back(std::move(task));
    }
    cv_.notify_one();
    return f;
  }

 private:
  void Loop() {
    for (;;) {
      std::packaged_task<void()> task;
      {
        std::unique_lock<std::mutex> g(mu_);
        cv_.wait(g, [this] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<void()>> queue_;
  bool stop_ = false;
  std::thread thread_;  // last: starts after the members it uses exist
};

// A Work that completes with a task of a SerialExecutor.
class FutureWork final : public Work {
 public:
  explicit FutureWork(std::future<void> f) : f_(std::move(f)) {}
  void Wait() override { f_.get(); }

 private:
  std::future<void> f_;
};

}  // namespace ladder::trainer::comm
