#include "worker/leftovers.h"

#include <signal.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "common/container_trial_dir.h"

namespace ladder::worker {

std::vector<std::string> KillLeftoverTrialProcesses(const std::string& trial_dir, const std::string& node_id) {
  std::error_code ec;
  const std::string under = std::filesystem::absolute(trial_dir, ec).string() + "/trial-";
  if (ec) return {};
  // LADDER_TRIAL_DIR, or in a container LADDER_HOST_TRIAL_DIR (inside Charliecloud the other is the guest's path).
  const std::vector<std::string> markers = {"LADDER_TRIAL_DIR=" + under,
                                            std::string(kHostTrialDirVariable) + "=" + under};
  std::vector<std::string> killed;
  const pid_t self = getpid();
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    if (pid == self) continue;
    std::ifstream in(e.path() / "environ", std::ios::binary);
    const std::string env((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // One variable per NUL-terminated entry: the marker must start an entry.
    size_t start = std::string::npos;  // of "trial-..."
    for (const auto& marker : markers) {
      size_t at = env.rfind(marker, 0) == 0 ? 0 : env.find(std::string(1, '\0') + marker);
      if (at == std::string::npos) continue;
      start = (at > 0 ? at + 1 : 0) + marker.size() - 6;
      break;
    }
    if (start == std::string::npos) continue;
    const std::string node = "LADDER_NODE_ID=" + node_id;
    if (env.rfind(node + '\0', 0) != 0 && env.find('\0' + node + '\0') == std::string::npos) continue;
    if (kill(pid, SIGKILL) != 0) continue;
    killed.push_back("pid " + name + " (" + env.substr(start, env.find('\0', start) - start) + ")");
  }
  return killed;
}

}  // namespace ladder::worker
