#pragma once
// A container run's trial directory, between the coordinator and the worker. A rank inside a container
// (`container:`) reads and writes its trial directory by LADDER_TRIAL_DIR, as any rank does; that directory is the
// worker's (its --trial-dir, trial-<id> below it), which the coordinator, who builds the container's command line
// (server/container_command.h), does not know. So the words of that line that bind it hold kTrialDirPlaceholder,
// the start's environment names the runtime (kContainerVariable), and the worker that runs the start fills the
// placeholder in with the run's directory, absolute (worker/container_trial_dir.h). A start without a container
// has no kContainerVariable: its command is run as it came, word for word.
namespace ladder {

inline constexpr char kTrialDirPlaceholder[] = "{trial_dir}";
// Where a rank inside Charliecloud finds its trial directory, its LADDER_TRIAL_DIR there: ch-run needs a bind's
// destination in the image, and /mnt/0-9 are in every image Charliecloud's ch-image makes (scripts/ch-image.sh
// makes them too). The spec's own binds may not use it (search/spec/container_section.cc).
inline constexpr char kCharliecloudTrialDir[] = "/mnt/9";
// "charliecloud", "apptainer" or "podman": the rank runs in such a container.
inline constexpr char kContainerVariable[] = "LADDER_CONTAINER";
// The trial directory's path on the host, which a container run's ranks also get: inside Charliecloud,
// LADDER_TRIAL_DIR is the guest's path of the bind; a restarted worker finds leftover ranks by this one
// (worker/leftovers.h).
inline constexpr char kHostTrialDirVariable[] = "LADDER_HOST_TRIAL_DIR";

}  // namespace ladder
