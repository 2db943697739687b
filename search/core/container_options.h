#pragma once
// The spec's `container:` (search/spec/container_section.cc reads it; server/container_command.h wraps each rank's
// command): a trial's ranks run inside a container image while ladder itself (the worker, ladder-stage, srun,
// mpirun) stays on the host, where Slurm's commands are.
#include <string>
#include <vector>

namespace ladder::search {

enum class ContainerRuntime { kNone, kCharliecloud, kApptainer, kPodman };

struct ContainerOptions {
  ContainerRuntime runtime = ContainerRuntime::kNone;  // kNone: no `container:`
  std::string image;               // charliecloud: an image directory or SquashFS file; apptainer: a .sif (or a
                                   // sandbox directory); podman: an image name or reference
  std::vector<std::string> binds;  // "SRC" or "SRC:DST", absolute paths, besides the trial's own directories
};

// "charliecloud", "apptainer", "podman" ("" for kNone).
inline const char* ContainerRuntimeName(ContainerRuntime runtime) {
  switch (runtime) {
    case ContainerRuntime::kCharliecloud: return "charliecloud";
    case ContainerRuntime::kApptainer: return "apptainer";
    case ContainerRuntime::kPodman: return "podman";
    default: return "";
  }
}

// The program each runtime's command line starts with: "ch-run", "apptainer", "podman".
inline const char* ContainerRuntimeProgram(ContainerRuntime runtime) {
  return runtime == ContainerRuntime::kCharliecloud ? "ch-run" : ContainerRuntimeName(runtime);
}

}  // namespace ladder::search
