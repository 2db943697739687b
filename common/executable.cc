#include "common/executable.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace ladder {

namespace {
bool IsExecutableFile(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}
}  // namespace

std::string ResolveExecutable(const std::string& cmd, const std::vector<std::string>& dirs, std::string* error) {
  if (cmd.empty()) {
    *error = "empty command";
    return "";
  }
  if (cmd.find('/') != std::string::npos) {
    if (IsExecutableFile(cmd)) return cmd;
    *error = "command '" + cmd + "' " + (access(cmd.c_str(), F_OK) == 0 ? "is not an executable file" : "does not exist");
    return "";
  }
  std::vector<std::string> all = dirs;
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    std::string d = p.substr(start, end - start);
    all.push_back(d.empty() ? "." : d);
    start = end + 1;
  }
  for (const auto& d : all) {
    std::string candidate = d + "/" + cmd;
    if (IsExecutableFile(candidate)) return candidate;
  }
  *error = "command '" + cmd + "' not found (looked in " + (dirs.empty() ? "" : dirs.front() + " and ") + "PATH)";
  return "";
}

std::string OwnBinDir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

int ShellOutput(const std::string& command, std::string* output) {
  output->clear();
  FILE* p = ::popen(command.c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) output->append(buf, n);
  const int status = ::pclose(p);
  if (status == -1) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace ladder
