#pragma once
// The run epoch of a checkpoint: an older run's write never replaces a newer run's.
//
// Under ladder every run of a trial has its own assignment epoch (LADDER_ASSIGNMENT_EPOCH, larger for every later
// run), and all runs of a trial share one checkpoint directory. A run the coordinator has given away (its worker
// fell silent past its lease; the trial runs again elsewhere) may still be alive for a moment and save. So beside
// the checkpoint `PATH` the file `PATH.epoch` holds the epoch of the newest run that replaced it, and a run saves
// only under this rule, with the checkpoint's directory locked (flock) from the check to the rename:
//   * a recorded epoch newer than the run's: the checkpoint is not replaced (false; *error names both epochs);
//   * else the run's epoch is recorded first (temp file, fsync, rename), then the checkpoint renamed into place:
//     a crash in between leaves the newer epoch over the older checkpoint, which the newer run replaces anyway.
// Epoch 0 (not run by ladder) neither checks nor records.
#include <cstdint>
#include <string>

namespace ladder::trainer {

// This run's epoch: LADDER_ASSIGNMENT_EPOCH, set by the coordinator (0 when unset). -1 with *error naming the
// variable and its value when it is not a number.
int64_t RunEpochFromEnvironment(std::string* error);

// `path` + ".epoch".
std::string CheckpointEpochPath(const std::string& path);

// The epoch recorded for the checkpoint `path`: 0 when none is. -1 with *error naming the file and its content
// when it cannot be read or is not a number.
int64_t RecordedCheckpointEpoch(const std::string& path, std::string* error);

// Renames the finished (fsynced) checkpoint `tmp` to `path` under the rule above, and syncs the directory. On
// refusal or failure `tmp` is removed and *error says why.
bool ReplaceCheckpoint(const std::string& tmp, const std::string& path, int64_t run_epoch, std::string* error);

}  // namespace ladder::trainer
