#include "worker/rank_guard.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <functional>
#include <string>
#include <vector>

#include "worker/trial_process.h"

namespace ladder::worker {
namespace {

struct Outcome {
  std::vector<std::string> lines;
  bool exited = false;
  int code = -999;
};

std::shared_ptr<TrialProcess> StartRank(boost::asio::io_context& loop, const std::string& script, Outcome* out) {
  LaunchSpec spec;
  spec.argv = {"/bin/sh", "-c", script};
  std::string error;
  auto p = TrialProcess::Launch(
      loop, spec, [out](const std::string& l, bool) { out->lines.push_back(l); },
      [out](int code, const std::string&) {
        out->exited = true;
        out->code = code;
      },
      &error);
  EXPECT_TRUE(p) << error;
  return p;
}

// Runs the loop until `done` (at most 30 s, a bound for a broken build only).
void RunUntil(boost::asio::io_context& loop, const std::function<bool()>& done) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!done() && std::chrono::steady_clock::now() < give_up) loop.run_one_for(std::chrono::milliseconds(100));
}

// Waits (without running the loop) until the process behind `pidfd` has ended; false after `seconds`.
bool Ends(int pidfd, int seconds) {
  pollfd p{pidfd, POLLIN, 0};
  return poll(&p, 1, seconds * 1000) == 1;
}

bool Alive(int pidfd) {
  pollfd p{pidfd, POLLIN, 0};
  return poll(&p, 1, 0) == 0;
}

TEST(RankGuard, KillsTheRanksProcessGroupOnceTheWorkersLoopFallsSilentAndSaysSo) {
  boost::asio::io_context loop;
  const auto limit = std::chrono::milliseconds(1500);  // the lease less the margin, from every beat on
  std::vector<std::string> warnings;
  RankGuard guard(loop, [&] { return RankGuard::Clock::now() + limit; },
                  [&](const std::string& w) { warnings.push_back(w); });
  std::string error;
  ASSERT_TRUE(guard.Start(&error)) << error;
  ASSERT_GT(guard.pid(), 0);
  // A rank with a process of its own in its group (as `sh -c "python train.py"` has).
  Outcome out;
  auto rank = StartRank(loop, "sleep 300 & echo $!; wait", &out);
  ASSERT_TRUE(rank);
  guard.Watch(rank->pid());
  const int leader_fd = static_cast<int>(syscall(SYS_pidfd_open, rank->pid(), 0));
  ASSERT_GE(leader_fd, 0);
  RunUntil(loop, [&] { return !out.lines.empty(); });
  ASSERT_EQ(out.lines.size(), 1u);
  const int helper_fd = static_cast<int>(syscall(SYS_pidfd_open, std::stoi(out.lines[0]), 0));
  ASSERT_GE(helper_fd, 0);

  // While the loop runs, the beats keep moving the deadline: the rank lives through twice the limit.
  loop.run_for(2 * limit);
  EXPECT_TRUE(Alive(leader_fd) && Alive(helper_fd)) << "killed while the worker's loop was beating";
  EXPECT_FALSE(out.exited);
  EXPECT_TRUE(warnings.empty());

  // The loop stops (a paused worker): past the limit the guard kills the whole group.
  EXPECT_TRUE(Ends(leader_fd, 20)) << "the rank outlived its worker's silence";
  EXPECT_TRUE(Ends(helper_fd, 20)) << "a process of the rank's group outlived its worker's silence";
  close(leader_fd);
  close(helper_fd);

  // The worker runs again: the exit it handles is the guard's doing, and it was told so.
  RunUntil(loop, [&] { return out.exited; });
  ASSERT_TRUE(out.exited);
  EXPECT_EQ(out.code, 128 + SIGKILL);
  const std::string why = guard.Ended(rank->pid());
  EXPECT_NE(why.find("stopped by the worker's rank guard: the worker was silent for "), std::string::npos) << why;
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("killed 1 ranks' process groups"), std::string::npos) << warnings[0];
  EXPECT_EQ(guard.Ended(rank->pid()), "") << "told once";
}

TEST(RankGuard, ARankThatEndsOnItsOwnIsNotReportedAsKilled) {
  boost::asio::io_context loop;
  RankGuard guard(loop, [] { return RankGuard::Clock::now() + std::chrono::seconds(5); }, [](const std::string&) {});
  std::string error;
  ASSERT_TRUE(guard.Start(&error)) << error;
  Outcome out;
  auto rank = StartRank(loop, "exit 3", &out);
  ASSERT_TRUE(rank);
  guard.Watch(rank->pid());
  RunUntil(loop, [&] { return out.exited; });
  EXPECT_EQ(out.code, 3);
  EXPECT_EQ(guard.Ended(rank->pid()), "");
}

}  // namespace
}  // namespace ladder::worker
