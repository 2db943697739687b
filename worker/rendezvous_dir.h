#pragma once
// Where the ranks of a one-node trial meet: a c10d FileStore file, a new one for each run (a killed run's keys must
// not be read by the next), in a directory of this worker's under the system's temporary directory rather than in
// the trial's directory. A container shares /tmp with the host (ch-run, apptainer) at the same path, where the
// trial's directory may be bound elsewhere (ch-run: at /mnt/9), so ranks inside an image meet through it.
//
// The directory is TMP/ladder-rendezvous-UID-NODE-PID, one per worker process (two coordinators' workers on one
// host may share a node id): made 0700 when the worker first starts a one-node trial of several ranks (a worker
// that never does leaves nothing behind, even killed), used only while it is a real directory (not a link) owned
// by this user and closed to others (else the caller falls back to the trial's directory), and removed when the
// worker stops; at its start a worker also removes the directories of its node whose process is gone (a killed
// predecessor's). Files are named trial-ID-EPOCH.
#include <cstdint>
#include <optional>
#include <string>

namespace ladder::worker {

// Removes the rendezvous directories of `node_id` whose worker process is gone (a worker's start).
void RemoveDeadRendezvousDirs(const std::string& node_id);

// This worker's rendezvous directory, made now (its node's dead workers' removed); nullopt with *why set when it is not safe to use.
std::optional<std::string> RendezvousDir(const std::string& node_id, std::string* why);

// The file for a run of trial `trial_id` (assignment `epoch`), inside `dir`.
std::string RendezvousFile(const std::string& dir, int64_t trial_id, int64_t epoch);

}  // namespace ladder::worker
