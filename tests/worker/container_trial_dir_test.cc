// A container run's trial directory, the worker's half (worker/container_trial_dir.h): the coordinator's line binds
// "{trial_dir}", the worker puts the run's directory there; a start without a container runs word for word.
#include "worker/container_trial_dir.h"

#include <gtest/gtest.h>

namespace ladder::worker {
namespace {

using Words = std::vector<std::string>;

TEST(ContainerTrialDir, TheWorkerFillsInTheTrialDirectoryItBindsAndNamesItsHostPath) {
  Words argv = {"srun", "--nodes=1", "ch-run", "--bind={trial_dir}:/mnt/9", "--bind=/ckpt",
                "--set-env=LADDER_TRIAL_DIR=/mnt/9", "/images/ladder", "--", "ladder-train"};
  std::map<std::string, std::string> env = {{"LADDER_CONTAINER", "charliecloud"}, {"RANK", "0"}};
  FillContainerTrialDir("/home/me/ladder-trials/trial-7", &argv, &env);
  EXPECT_EQ(argv, (Words{"srun", "--nodes=1", "ch-run", "--bind=/home/me/ladder-trials/trial-7:/mnt/9",
                         "--bind=/ckpt", "--set-env=LADDER_TRIAL_DIR=/mnt/9", "/images/ladder", "--",
                         "ladder-train"}));
  EXPECT_EQ(env.at("LADDER_HOST_TRIAL_DIR"), "/home/me/ladder-trials/trial-7")
      << "what a restarted worker finds a leftover rank by, where LADDER_TRIAL_DIR is the guest's path";
  // podman names it twice in one word; a directory whose path holds the placeholder is put once.
  argv = {"podman", "run", "-v", "{trial_dir}:{trial_dir}", "img"};
  FillContainerTrialDir("/x/{trial_dir}", &argv, &env);
  EXPECT_EQ(argv[3], "/x/{trial_dir}:/x/{trial_dir}");
}

TEST(ContainerTrialDir, AStartWithoutAContainerRunsAsItCame) {
  const Words given = {"/bin/sh", "-c", "echo {trial_dir}"};  // a literal, from the spec's {{trial_dir}}
  Words argv = given;
  std::map<std::string, std::string> env = {{"RANK", "0"}};
  FillContainerTrialDir("/home/me/ladder-trials/trial-7", &argv, &env);
  EXPECT_EQ(argv, given);
  EXPECT_EQ(env, (std::map<std::string, std::string>{{"RANK", "0"}}));
}

}  // namespace
}  // namespace ladder::worker
