#pragma once
// SerialExecutor: runs submitted tasks one at a time, in submission order, on one background thread — or on a
// thread that waits for one of them (RunUntilReady). The MPI backend runs every MPI call through one (as
// Horovod does, but a waiting caller does the queued work itself); the hierarchical allreduce runs its three
// phases on one, so that collectives leave every rank in the order the trainer issued them.
//
// Threading: Submit may be called from any thread. Tasks never run concurrently, whichever thread runs them,
// and each starts after the previous one has returned (the executor's mutex orders their memory effects).
// RunUntilReady may be called from any thread except the executor's own; while a thread is in it, the
// background thread finishes the task it is running and then leaves the queue to that caller, so a caller
// that would only wait runs the remaining tasks itself (no hand-off and wake-up per task). Use it only for
// tasks that may run on any thread (MPI at MPI_THREAD_SERIALIZED or above). The destructor runs the tasks still
// queued, then joins; no thread may be in RunUntilReady then. A task's exception reaches whoever waits on its
// future.
#include <chrono>
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
    cv_.notify_all();  // the background thread or a helper, whichever may take it
    return f;
  }

  // Runs queued tasks on the calling thread, in order, until `f` (a future of this executor's Submit) is ready;
  // waits (without spinning) while another thread runs a task. Does not call f.get().
  void RunUntilReady(std::future<void>& f) {
    {
      std::lock_guard<std::mutex> g(mu_);
      ++helpers_;
    }
    for (;;) {
      std::packaged_task<void()> task;
      {
        std::unique_lock<std::mutex> g(mu_);
        cv_.wait(g, [this] { return !running_; });
        // Nothing queued and nothing running: every task submitted before `f`'s, and `f`'s own, has run.
        if (queue_.empty() || Ready(f)) break;
        task = TakeFront();
      }
      Run(task);
    }
    {
      std::lock_guard<std::mutex> g(mu_);
      --helpers_;
    }
    cv_.notify_all();  // the background thread may take the queue again
  }

  // Threads now in RunUntilReady (for tests and diagnostics).
  int helpers() const {
    std::lock_guard<std::mutex> g(mu_);
    return helpers_;
  }

 private:
  static bool Ready(std::future<void>& f) { return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }

  // The queue's front, marked running. Call with mu_ held and the queue not empty.
  std::packaged_task<void()> TakeFront() {
    std::packaged_task<void()> task = std::move(queue_.front());
    queue_.pop_front();
    running_ = true;
    return task;
  }
  // Runs a task from TakeFront (mu_ not held), then wakes whoever waits to take the next one (the background
  // thread, or a helper waiting for this task to end).
  void Run(std::packaged_task<void()>& task) {
    task();
    {
      std::lock_guard<std::mutex> g(mu_);
      running_ = false;
    }
    cv_.notify_all();
  }

  void Loop() {
    for (;;) {
      std::packaged_task<void()> task;
      {
        std::unique_lock<std::mutex> g(mu_);
        cv_.wait(g, [this] { return (stop_ && queue_.empty()) || (!queue_.empty() && !running_ && helpers_ == 0); });
        if (queue_.empty()) return;
        task = TakeFront();
      }
      Run(task);
    }
  }

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<void()>> queue_;
  bool running_ = false;  // a task is running (on the background thread or a helper)
  int helpers_ = 0;       // threads in RunUntilReady
  bool stop_ = false;
  std::thread thread_;  // last: starts after the members it uses exist
};

// A Work that completes with a task of a SerialExecutor. With `helper` (the executor that runs the task),
// Wait() runs the queued tasks on the waiting thread (RunUntilReady) instead of sleeping until the background
// thread gets to them.
class FutureWork final : public Work {
 public:
  explicit FutureWork(std::future<void> f, SerialExecutor* helper = nullptr) : f_(std::move(f)), helper_(helper) {}
  void Wait() override {
    if (helper_) helper_->RunUntilReady(f_);
    f_.get();
  }

 private:
  std::future<void> f_;
  SerialExecutor* helper_;
};

}  // namespace ladder::trainer::comm
