#pragma once
// Where the ranks of a one-node trial meet: a c10d FileStore file, a new one for each run (a killed run's keys must
// not be read by the next), in a directory of this user's under the system's temporary directory rather than in
// the trial's directory. A container shares /tmp with the host (ch-run, apptainer) where a trial directory
// elsewhere is not bound in, so ranks inside an image could never meet through it.
//
// The directory is TMP/ladder-rendezvous-UID, made 0700; it is used only while it is a real directory (not a
// link) owned by this user and closed to others, else the caller falls back to the trial's directory. Files are
// named NODE-trial-ID-EPOCH, so several workers of one user on one host never share one; a worker starting on a
// node removes that node's files left by a killed predecessor (its ranks were killed first: worker/leftovers.h).
#include <cstdint>
#include <optional>
#include <string>

namespace ladder::worker {

// This user's rendezvous directory, made when missing; nullopt with *why set when it is not safe to use.
std::optional<std::string> RendezvousDir(std::string* why);

// The file for a run of trial `trial_id` (assignment `epoch`) on `node_id`, inside `dir`.
std::string RendezvousFile(const std::string& dir, const std::string& node_id, int64_t trial_id, int64_t epoch);

// Removes `node_id`'s files from `dir` (a worker's start); returns how many.
int RemoveNodeRendezvousFiles(const std::string& dir, const std::string& node_id);

}  // namespace ladder::worker
