// SerialExecutor: tasks run one at a time in submission order, on the background thread or on a thread that
// waits for one of them (RunUntilReady), which then takes the queue over from the background thread.
#include "trainer/comm/serial_executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <stdexcept>
#include <thread>
#include <vector>

namespace ladder::trainer::comm {
namespace {

// Waits (yielding, with a deadline) until `done` holds; false if the deadline passed.
template <typename F>
bool Eventually(F done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

TEST(SerialExecutor, RunsTasksInSubmissionOrderOnItsThread) {
  SerialExecutor exec;
  std::vector<int> order;  // written by the tasks only, one at a time
  std::vector<std::future<void>> fs;
  for (int i = 0; i < 50; ++i) fs.push_back(exec.Submit([&order, i] { order.push_back(i); }));
  for (auto& f : fs) f.get();
  ASSERT_EQ(order.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(order[i], i);
}

TEST(SerialExecutor, AWaitingThreadRunsTheQueuedTasksAfterTheRunningOne) {
  SerialExecutor exec;
  std::promise<void> release;
  auto released = release.get_future().share();
  std::thread::id worker, ran_b, ran_c;
  std::vector<char> order;
  std::promise<void> a_started;
  auto a = exec.Submit([&] {
    worker = std::this_thread::get_id();
    order.push_back('a');
    a_started.set_value();
    released.wait();
  });
  auto b = exec.Submit([&] {
    ran_b = std::this_thread::get_id();
    order.push_back('b');
  });
  auto c = exec.Submit([&] {
    ran_c = std::this_thread::get_id();
    order.push_back('c');
  });
  // Release `a` only once this thread is waiting in RunUntilReady: the background thread must then leave
  // b and c to it.
  std::thread releaser([&] {
    EXPECT_TRUE(Eventually([&] { return exec.helpers() == 1; }));  // released anyway: no hang on failure
    release.set_value();
  });
  a_started.get_future().wait();  // the background thread runs `a` (a waiter would otherwise take it too)
  exec.RunUntilReady(c);
  releaser.join();
  EXPECT_EQ(exec.helpers(), 0);
  a.get();
  b.get();
  c.get();
  EXPECT_EQ(order, (std::vector<char>{'a', 'b', 'c'}));
  EXPECT_NE(worker, std::this_thread::get_id());
  EXPECT_EQ(ran_b, std::this_thread::get_id());
  EXPECT_EQ(ran_c, std::this_thread::get_id());
}

TEST(SerialExecutor, RunUntilReadyStopsAtItsTaskAndTheRestRunInTheBackground) {
  SerialExecutor exec;
  std::promise<void> release;
  auto released = release.get_future().share();
  std::atomic<bool> b_done{false};
  std::thread::id ran_b, ran_c;
  // `hold` keeps the background thread busy until b, the task waited for, is queued behind it.
  std::promise<void> hold_started;
  auto hold = exec.Submit([&] {
    hold_started.set_value();
    released.wait();
  });
  auto b = exec.Submit([&] {
    ran_b = std::this_thread::get_id();
    b_done = true;
  });
  auto c = exec.Submit([&] { ran_c = std::this_thread::get_id(); });
  std::thread releaser([&] {
    EXPECT_TRUE(Eventually([&] { return exec.helpers() == 1; }));  // released anyway: no hang on failure
    release.set_value();
  });
  hold_started.get_future().wait();  // on the background thread
  exec.RunUntilReady(b);
  releaser.join();
  EXPECT_TRUE(b_done);
  EXPECT_EQ(ran_b, std::this_thread::get_id());
  c.get();  // left to the background thread
  EXPECT_NE(ran_c, std::this_thread::get_id());
  hold.get();
}

TEST(SerialExecutor, ATasksExceptionReachesTheWaiterWhoeverRanIt) {
  SerialExecutor exec;
  auto f = exec.Submit([] { throw std::runtime_error("bucket 3 failed"); });
  FutureWork work(std::move(f), &exec);
  try {
    work.Wait();
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "bucket 3 failed");
  }
  // The executor still runs what comes next.
  int x = 0;
  FutureWork next(exec.Submit([&] { x = 7; }), &exec);
  next.Wait();
  EXPECT_EQ(x, 7);
}

TEST(SerialExecutor, DestructorRunsWhatIsStillQueued) {
  std::atomic<int> ran{0};
  {
    SerialExecutor exec;
    for (int i = 0; i < 20; ++i) exec.Submit([&] { ++ran; });
  }
  EXPECT_EQ(ran.load(), 20);
}

}  // namespace
}  // namespace ladder::trainer::comm
