// A rank's command inside a container (server/container_command.h), the exact line of each runtime, and a run's
// starts with a container: staged on the host, then the container, inside the launcher (server/launch_commands.h).
#include "server/container_command.h"

#include <gtest/gtest.h>

#include "server/launch_commands.h"

namespace ladder::server {
namespace {

using Words = std::vector<std::string>;

search::ContainerOptions Options(search::ContainerRuntime runtime, std::string image) {
  search::ContainerOptions c;
  c.runtime = runtime;
  c.image = std::move(image);
  c.binds = {"/lustre/me/code", "/scratch/me/out:/out", "/local/stage"};
  return c;
}

ContainerRun RunOf(bool gpus) {
  ContainerRun r;
  r.trial_dir = "/home/me/ladder-trials/trial-7";
  r.checkpoint_dir = "/ckpt/search-3/trial-7";
  r.checkpoint_root = "/ckpt";
  r.stage_dirs = {"/local/stage"};
  r.env_names = {"LADDER_TRIAL_ID", "MASTER_ADDR", "RANK"};
  r.gpus = gpus;
  return r;
}

const Words kCommand = {"ladder-train", "--lr", "0.1"};

TEST(ContainerCommand, CharliecloudBindsTheTrialsDirectoriesAndPassesTheEnvironmentThrough) {
  EXPECT_EQ(ContainerLine(Options(search::ContainerRuntime::kCharliecloud, "/images/ladder"), RunOf(true), kCommand),
            (Words{"ch-run", "--bind=/home/me/ladder-trials/trial-7:/mnt/9", "--bind=/ckpt", "--bind=/local/stage",
                   "--bind=/lustre/me/code", "--bind=/scratch/me/out:/out", "--set-env=LADDER_TRIAL_DIR=/mnt/9",
                   "/images/ladder", "--", "ladder-train", "--lr", "0.1"}))
      << "the trial directory at the image's mount point /mnt/9, which LADDER_TRIAL_DIR then names; the checkpoint "
         "root (its path exists in the image); each bind once (the staged directory was also in the spec's binds); "
         "no GPU flag: ch-fromhost";
}

TEST(ContainerCommand, ApptainerAddsNvOnlyWhenTheTrialHasGpus) {
  const auto options = Options(search::ContainerRuntime::kApptainer, "/images/ladder.sif");
  const Words binds = {"--bind", "/home/me/ladder-trials/trial-7", "--bind", "/ckpt/search-3/trial-7",
                       "--bind", "/local/stage", "--bind", "/lustre/me/code", "--bind", "/scratch/me/out:/out"};
  Words want = {"apptainer", "exec", "--nv"};
  want.insert(want.end(), binds.begin(), binds.end());
  want.push_back("/images/ladder.sif");
  want.insert(want.end(), kCommand.begin(), kCommand.end());
  EXPECT_EQ(ContainerLine(options, RunOf(true), kCommand), want);
  want.erase(want.begin() + 2);
  EXPECT_EQ(ContainerLine(options, RunOf(false), kCommand), want);
}

TEST(ContainerCommand, PodmanPassesEveryVariableByNameAndSlurmsByPrefix) {
  EXPECT_EQ(ContainerLine(Options(search::ContainerRuntime::kPodman, "localhost/ladder:1"), RunOf(true), kCommand),
            (Words{"podman", "run", "--rm", "--network=host", "--ipc=host", "--device", "nvidia.com/gpu=all",
                   "-v", "/home/me/ladder-trials/trial-7:/home/me/ladder-trials/trial-7",
                   "-v", "/ckpt/search-3/trial-7:/ckpt/search-3/trial-7", "-v", "/local/stage:/local/stage", "-v",
                   "/lustre/me/code:/lustre/me/code", "-v", "/scratch/me/out:/out", "-e", "LADDER_TRIAL_ID", "-e",
                   "MASTER_ADDR", "-e", "RANK", "-e", "SLURM_*", "-e", "OMPI_*", "-e", "PMIX_*",
                   "localhost/ladder:1", "ladder-train", "--lr", "0.1"}));
}

TEST(ContainerCommand, NoContainerLeavesTheCommandAsItIs) {
  EXPECT_EQ(ContainerLine(search::ContainerOptions{}, RunOf(true), kCommand), kCommand);
}

// In a run: ladder-stage on the host first (it stages, then execs the container), srun outside both; podman gets
// the rank variables the worker and the launcher set.
TEST(ContainerCommand, ARunsStartsStageOnTheHostThenTheContainerInsideTheLauncher) {
  search::SearchSpec spec;
  spec.group.launcher = search::Launcher::kSrun;
  spec.group.nodes = 2;
  spec.stage = {{"/shared/data.bin", "/local/data", {}, false, false}};
  spec.container.runtime = search::ContainerRuntime::kCharliecloud;
  spec.container.image = "/images/ladder";
  LaunchRun run;
  run.trial_id = 7;
  run.checkpoint_dir = "/ckpt/search-1/trial-7";
  run.nodes = 2;
  run.command = {"ladder-train"};
  LaunchSettings settings;
  settings.srun = {"srun"};
  const std::vector<LaunchMember> members = {{"n1", std::string("10.0.0.1"), {0}, {}, 0},
                                             {"n2", std::string("10.0.0.2"), {0}, {}, 1}};
  auto starts = StartMessages(spec, run, members, settings);
  ASSERT_EQ(starts.size(), 1u);
  const Words argv(starts[0].start.argv().begin(), starts[0].start.argv().end());
  const Words tail = {"ladder-stage", "--from", "/shared/data.bin", "--to", "/local/data", "--", "ch-run",
                      "--bind={trial_dir}:/mnt/9", "--bind=/ckpt", "--bind=/local/data",
                      "--set-env=LADDER_TRIAL_DIR=/mnt/9", "/images/ladder", "--", "ladder-train"};
  ASSERT_GT(argv.size(), tail.size());
  EXPECT_EQ(argv.front(), "srun");
  EXPECT_EQ(Words(argv.end() - static_cast<long>(tail.size()), argv.end()), tail);
  // The worker fills in the trial directory it keeps (worker/container_trial_dir.h): the start names the runtime.
  EXPECT_EQ(starts[0].start.env().at("LADDER_CONTAINER"), "charliecloud");
  // podman: the torchrun variables and the worker's per-rank ones by name.
  spec.container.runtime = search::ContainerRuntime::kPodman;
  spec.group.launcher = search::Launcher::kPerNode;
  run.env = {{"LADDER_TRIAL_ID", "7"}, {"MY_VAR", "x"}};
  starts = StartMessages(spec, run, members, settings);
  ASSERT_EQ(starts.size(), 2u);
  const Words a(starts[0].start.argv().begin(), starts[0].start.argv().end());
  for (const char* name : {"LADDER_TRIAL_ID", "MY_VAR", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                           "MASTER_PORT", "LADDER_RENDEZVOUS_SECRET", "RANK", "LOCAL_RANK", "CUDA_VISIBLE_DEVICES",
                           "LADDER_TRIAL_DIR", "LADDER_HOST_TRIAL_DIR", "LADDER_NODE_ID", "LADDER_WORKER_SLOTS"}) {
    bool passed = false;
    for (size_t i = 0; i + 1 < a.size(); ++i) passed |= a[i] == "-e" && a[i + 1] == name;
    EXPECT_TRUE(passed) << name;
  }
}

}  // namespace
}  // namespace ladder::server
