#pragma once
// The worker's half of a container run's trial directory (common/container_trial_dir.h): the coordinator's line
// binds "{trial_dir}", the worker puts the run's directory there.
#include <map>
#include <string>
#include <vector>

namespace ladder::worker {

// A start whose `env` names a container runtime (LADDER_CONTAINER): every "{trial_dir}" in `argv` becomes `dir`
// (the run's trial directory, absolute) and `env` gets LADDER_HOST_TRIAL_DIR=`dir`. Without it, nothing changes.
void FillContainerTrialDir(const std::string& dir, std::vector<std::string>* argv,
                           std::map<std::string, std::string>* env);

}  // namespace ladder::worker
