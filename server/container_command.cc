#include "server/container_command.h"

#include <set>

namespace ladder::server {

namespace {

// The binds in order, each once: the trial directory, the checkpoint directory (or root), the staged directories,
// the spec's.
std::vector<std::string> Binds(const search::ContainerOptions& options, const ContainerRun& run) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  auto add = [&](const std::string& b) {
    if (!b.empty() && seen.insert(b).second) out.push_back(b);
  };
  const bool charliecloud = options.runtime == search::ContainerRuntime::kCharliecloud;
  if (!run.trial_dir.empty()) add(charliecloud ? run.trial_dir + ":" + kCharliecloudTrialDir : run.trial_dir);
  const bool root = charliecloud && !run.checkpoint_root.empty();
  add(root ? run.checkpoint_root : run.checkpoint_dir);
  for (const auto& d : run.stage_dirs) add(d);
  for (const auto& b : options.binds) add(b);
  return out;
}

// "SRC" -> "SRC:SRC" (podman's -v needs both: a lone path would be an anonymous volume).
std::string BothSides(const std::string& bind) {
  return bind.find(':') == std::string::npos ? bind + ":" + bind : bind;
}

}  // namespace

std::vector<std::string> ContainerLine(const search::ContainerOptions& options, const ContainerRun& run,
                                       const std::vector<std::string>& command) {
  using search::ContainerRuntime;
  std::vector<std::string> argv;
  const auto binds = Binds(options, run);
  switch (options.runtime) {
    case ContainerRuntime::kNone:
      return command;
    case ContainerRuntime::kCharliecloud:
      argv = {"ch-run"};
      for (const auto& b : binds) argv.push_back("--bind=" + b);
      if (!run.trial_dir.empty()) argv.push_back(std::string("--set-env=LADDER_TRIAL_DIR=") + kCharliecloudTrialDir);
      argv.insert(argv.end(), {options.image, "--"});
      break;
    case ContainerRuntime::kApptainer:
      argv = {"apptainer", "exec"};
      if (run.gpus) argv.push_back("--nv");
      for (const auto& b : binds) argv.insert(argv.end(), {"--bind", b});
      argv.push_back(options.image);
      break;
    case ContainerRuntime::kPodman:
      argv = {"podman", "run", "--rm", "--network=host", "--ipc=host"};
      if (run.gpus) argv.insert(argv.end(), {"--device", "nvidia.com/gpu=all"});
      for (const auto& b : binds) argv.insert(argv.end(), {"-v", BothSides(b)});
      for (const auto& name : run.env_names) argv.insert(argv.end(), {"-e", name});
      for (const char* prefix : {"SLURM_*", "OMPI_*", "PMIX_*"}) argv.insert(argv.end(), {"-e", prefix});
      argv.push_back(options.image);
      break;
  }
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

}  // namespace ladder::server
