// The one-node rendezvous files' directory (rendezvous_dir.h).
#include "worker/rendezvous_dir.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace ladder::worker {
namespace {

// A node id as part of a file name: letters, digits, '.', '-' and '_' kept, anything else '_'.
std::string FileSafe(const std::string& s) {
  std::string out = s.empty() ? "node" : s;
  for (char& c : out) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '-' || c == '_';
    if (!ok) c = '_';
  }
  return out;
}

// ladder-rendezvous-UID-NODE-: the name of a node's directories less the worker's pid.
std::string Prefix(const std::string& node_id) {
  return "ladder-rendezvous-" + std::to_string(::geteuid()) + "-" + FileSafe(node_id) + "-";
}

}  // namespace

void RemoveDeadRendezvousDirs(const std::string& node_id) {
  std::error_code ec;
  const std::filesystem::path tmp = std::filesystem::temp_directory_path(ec);
  if (ec) return;
  const std::string prefix = Prefix(node_id);
  for (const auto& e : std::filesystem::directory_iterator(tmp, ec)) {
    const std::string name = e.path().filename().string();
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string pid = name.substr(prefix.size());
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    if (::kill(static_cast<pid_t>(std::stol(pid)), 0) != 0 && errno == ESRCH) {
      std::error_code rec;
      std::filesystem::remove_all(e.path(), rec);
    }
  }
}

std::optional<std::string> RendezvousDir(const std::string& node_id, std::string* why) {
  std::error_code ec;
  const std::filesystem::path tmp = std::filesystem::temp_directory_path(ec);
  if (ec) {
    *why = "no temporary directory: " + ec.message();
    return std::nullopt;
  }
  RemoveDeadRendezvousDirs(node_id);  // what a killed predecessor on this node left
  const std::string dir = (tmp / (Prefix(node_id) + std::to_string(::getpid()))).string();
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    *why = "cannot create " + dir + ": " + std::strerror(errno);
    return std::nullopt;
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    *why = dir + " is not a directory of this user's closed to others";
    return std::nullopt;
  }
  return dir;
}

std::string RendezvousFile(const std::string& dir, int64_t trial_id, int64_t epoch) {
  return dir + "/trial-" + std::to_string(trial_id) + "-" + std::to_string(epoch);
}

}  // namespace ladder::worker
