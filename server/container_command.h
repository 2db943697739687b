#pragma once
// A rank's command inside the spec's container (`container:`): a pure function from the container's options and
// what the run binds and passes to the exact command line of each runtime. ladder stays on the host: the worker,
// ladder-stage (the data is staged on the host, then bound in), srun and mpirun run outside, and each rank's own
// command is wrapped, so that `srun ... ch-run IMAGE -- ladder-train ...` starts one container per rank.
//
//   charliecloud  ch-run --bind=TRIAL_DIR:/mnt/9 --set-env=LADDER_TRIAL_DIR=/mnt/9 --bind=SRC[:DST]... IMAGE --
//                 COMMAND
//                 (the environment passes through as it is; a bind's DST must exist in the image, which ch-run
//                 mounts read-only, unless it is under /tmp, the host's: so the trial's directory, wherever the
//                 worker keeps it, goes to /mnt/9, the last of the mount points /mnt/0-9 that Charliecloud's
//                 ch-image makes in every image (scripts/ch-image.sh too), and the rank's LADDER_TRIAL_DIR says
//                 so; it binds the coordinator's checkpoint root, whose path the image can hold once, rather than
//                 each trial's checkpoint directory below it; GPUs: the image gets the host's driver libraries with
//                 ch-fromhost --nvidia when it is built)
//   apptainer     apptainer exec [--nv] --bind SRC[:DST]... IMAGE COMMAND
//                 (the environment passes through; --nv binds the host's NVIDIA driver when the trial has GPUs)
//   podman        podman run --rm --network=host --ipc=host [--device nvidia.com/gpu=all] -v SRC:DST...
//                 -e NAME... -e SLURM_* -e OMPI_* -e PMIX_* IMAGE COMMAND
//                 (podman passes only what it is told: every variable ladder sets by name, Slurm's, Open MPI's and
//                 PMIx's by prefix; the host's network for the rendezvous and the collectives, its IPC for shared
//                 memory; GPUs through CDI)
// Bound in, in this order: the trial's directory (LADDER_TRIAL_DIR; charliecloud: at /mnt/9, the others at its own
// path), then each at its own path the trial's checkpoint directory (charliecloud: the checkpoint root), every
// staged directory (stage[].to), then the spec's binds.
#include <string>
#include <vector>

#include "common/container_trial_dir.h"
#include "search/core/container_options.h"

namespace ladder::server {

struct ContainerRun {
  std::string trial_dir;                // on the host; in a run, "{trial_dir}" (common/container_trial_dir.h)
  std::string checkpoint_dir;
  std::string checkpoint_root;          // above every trial's checkpoint_dir (charliecloud binds this instead)
  std::vector<std::string> stage_dirs;  // stage[].to
  std::vector<std::string> env_names;   // the variables the rank gets from ladder (podman passes them by name)
  bool gpus = false;                    // the trial has GPUs (resources.gpus_per_rank > 0)
};

// `command` run inside the container; `command` itself when options.runtime is kNone.
std::vector<std::string> ContainerLine(const search::ContainerOptions& options, const ContainerRun& run,
                                       const std::vector<std::string>& command);

}  // namespace ladder::server
