#include "worker/container_trial_dir.h"

#include "common/container_trial_dir.h"

namespace ladder::worker {

void FillContainerTrialDir(const std::string& dir, std::vector<std::string>* argv,
                           std::map<std::string, std::string>* env) {
  if (env->count(kContainerVariable) == 0) return;
  const std::string placeholder = kTrialDirPlaceholder;
  for (auto& word : *argv) {
    for (size_t at = word.find(placeholder); at != std::string::npos; at = word.find(placeholder, at + dir.size())) {
      word.replace(at, placeholder.size(), dir);
    }
  }
  (*env)[kHostTrialDirVariable] = dir;
}

}  // namespace ladder::worker
