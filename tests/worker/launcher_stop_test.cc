// worker/launcher_stop.h: a trial started by srun or mpirun is stopped through its launcher, with the signal that
// launcher forwards to every rank (never SIGTERM first, which srun and mpirun answer by ending the ranks); here the
// "launcher" is a shell that says which signal it got.
#include "worker/launcher_stop.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

namespace ladder::worker {
namespace {

struct Ended {
  std::vector<std::string> lines;
  int code = -1;
  bool exited = false;
};

// A launcher stand-in: prints "ready", then "got SIG" for the signal it handles (USR1 unless `ignore_usr1`, TERM)
// and exits 0.
std::shared_ptr<TrialProcess> StartLauncher(boost::asio::io_context& loop, bool ignore_usr1, Ended* out) {
  const std::string usr1 = ignore_usr1 ? "trap '' USR1; " : "trap 'echo got USR1; exit 0' USR1; ";
  LaunchSpec spec;
  spec.argv = {"/bin/sh", "-c", usr1 + "trap 'echo got TERM; exit 0' TERM; echo ready; while :; do sleep 0.05; done"};
  std::string error;
  auto p = TrialProcess::Launch(
      loop, spec, [out](const std::string& l, bool) { out->lines.push_back(l); },
      [out](int code, const std::string&) {
        out->code = code;
        out->exited = true;
      },
      &error);
  EXPECT_TRUE(p) << error;
  return p;
}

// Runs the loop until the launcher printed "ready" (its traps are set).
void RunUntilReady(boost::asio::io_context& loop, const Ended& out) {
  while (out.lines.empty() && !out.exited) loop.run_one();
  ASSERT_EQ(out.lines, std::vector<std::string>{"ready"});
}

TEST(LauncherStop, MpirunGetsSigusr1WhichItForwardsToEveryRank) {
  boost::asio::io_context loop;
  Ended out;
  auto p = StartLauncher(loop, false, &out);
  ASSERT_TRUE(p);
  ASSERT_NO_FATAL_FAILURE(RunUntilReady(loop, out));
  StopThroughLauncher(loop, p, v1::LAUNCHER_MPIRUN, "", "", std::chrono::seconds(30), "trial 1");
  loop.run();
  EXPECT_EQ(out.lines, (std::vector<std::string>{"ready", "got USR1"})) << "never SIGTERM first";
  EXPECT_EQ(out.code, 0);
}

TEST(LauncherStop, SrunOutsideASlurmJobGetsSigusr1WhichItForwardsToItsTasks) {
  boost::asio::io_context loop;
  Ended out;
  auto p = StartLauncher(loop, false, &out);
  ASSERT_TRUE(p);
  ASSERT_NO_FATAL_FAILURE(RunUntilReady(loop, out));
  // No job id: the step cannot be looked up, so no scancel; srun's own forwarding instead.
  StopThroughLauncher(loop, p, v1::LAUNCHER_SRUN, "ladder-trial-1", "", std::chrono::seconds(30), "trial 1");
  loop.run();
  EXPECT_EQ(out.lines, (std::vector<std::string>{"ready", "got USR1"}));
}

TEST(LauncherStop, ALauncherStillRunningAfterTheGraceGetsSigtermItself) {
  boost::asio::io_context loop;
  Ended out;
  auto p = StartLauncher(loop, /*ignore_usr1=*/true, &out);
  ASSERT_TRUE(p);
  ASSERT_NO_FATAL_FAILURE(RunUntilReady(loop, out));
  StopThroughLauncher(loop, p, v1::LAUNCHER_MPIRUN, "", "", std::chrono::milliseconds(100), "trial 1");
  loop.run();
  EXPECT_EQ(out.lines, (std::vector<std::string>{"ready", "got TERM"})) << "the launcher's own end of its ranks";
}

// scancel's exit status is Slurm's error number's low byte: "invalid job id" and "already done" mean the step is
// ending (no second signal); anything else (slurmctld down: 1) is a failure to signal it.
TEST(LauncherStop, ScancelsStepGoneCodesMeanTheStepIsEnding) {
  EXPECT_TRUE(StepAlreadyEnded(225));   // ESLURM_INVALID_JOB_ID 2017
  EXPECT_TRUE(StepAlreadyEnded(229));   // ESLURM_ALREADY_DONE 2021
  EXPECT_FALSE(StepAlreadyEnded(1));
  EXPECT_FALSE(StepAlreadyEnded(0));
  EXPECT_FALSE(StepAlreadyEnded(228));  // ESLURM_TRANSITION_STATE_NO_UPDATE 2020: not ended
}

TEST(LauncherStop, FindsTheNewestStepOfTheTrialsNameInSqueuesList) {
  const std::string listed = "12.0 ladder-workers\n12.3 ladder-trial-7\n12.4 ladder-trial-70\n12.5 ladder-trial-7\n";
  EXPECT_EQ(FindStepId(listed, "ladder-trial-7"), "12.5");
  EXPECT_EQ(FindStepId(listed, "ladder-trial-70"), "12.4");
  EXPECT_EQ(FindStepId(listed, "ladder-trial-8"), "");
  EXPECT_EQ(FindStepId("", "ladder-trial-7"), "");
}

// `scontrol show job` as Slurm 22.05 prints it: PreemptTime is None until Slurm picks the job for preemption.
TEST(LauncherStop, AJobIsBeingPreemptedOnceScontrolShowsItsPreemptTime) {
  const std::string running = "   StartTime=2026-11-27T15:54:21 EndTime=Unknown Deadline=N/A\n"
                              "   PreemptEligibleTime=2026-11-27T15:54:21 PreemptTime=None\n";
  const std::string preempted = "   StartTime=2026-11-27T15:54:21 EndTime=2026-11-27T15:55:31 Deadline=N/A\n"
                                "   PreemptEligibleTime=2026-11-27T15:54:21 PreemptTime=2026-11-27T15:55:21\n";
  EXPECT_FALSE(PreemptTimeSet(running));
  EXPECT_TRUE(PreemptTimeSet(preempted));
  EXPECT_FALSE(PreemptTimeSet(""));
  EXPECT_FALSE(PreemptTimeSet("slurm_load_jobs error: Invalid job id specified\n"));
}

}  // namespace
}  // namespace ladder::worker
