// ladder-stage: stages files onto this node (worker/stage.h), then runs a command in its place.
//   ladder-stage --from FILE --to DIR [--from FILE --to DIR ...] -- COMMAND [ARGS...]
// The coordinator puts it in front of a trial's command when its spec has `stage:`; every rank runs it.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "common/address.h"
#include "worker/stage.h"

namespace {

constexpr const char* kUsage =
    "usage: ladder-stage --from FILE --to DIR [--from FILE --to DIR ...] -- COMMAND [ARGS...]\n"
    "  copies each FILE into the node-local directory DIR once per node (checked by size and CRC-32, reused by\n"
    "  later runs on the node, taken from an sbcast delivery when one checks out), then runs COMMAND\n";

int Usage(const std::string& why) {
  std::fprintf(stderr, "ladder-stage: %s\n%s", why.c_str(), kUsage);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::pair<std::string, std::string>> files;
  int i = 1;
  for (; i < argc && std::strcmp(argv[i], "--") != 0; ++i) {
    const std::string a = argv[i];
    if (a == "--help") return std::fputs(kUsage, stdout) < 0;
    if (a == "--from" && i + 3 < argc && std::strcmp(argv[i + 2], "--to") == 0) {
      files.emplace_back(argv[i + 1], argv[i + 3]);
      i += 3;
      continue;
    }
    return Usage("unexpected argument '" + a + "' (each --from FILE needs its --to DIR)");
  }
  if (i + 1 >= argc) return Usage("no command after --");
  ladder::worker::StageOptions options;
  const char* slurm_node = std::getenv("SLURMD_NODENAME");
  options.node = slurm_node && *slurm_node ? slurm_node : ladder::ThisHostname();
  for (size_t k = 0; k < files.size(); ++k) {
    std::string note;
    const std::string error = ladder::worker::EnsureStaged(files[k].first, files[k].second, options, &note);
    if (!error.empty()) {
      std::fprintf(stderr, "ladder-stage: node %s: stage[%zu]: %s\n", options.node.c_str(), k, error.c_str());
      return 1;
    }
    std::fprintf(stderr, "ladder-stage: node %s: %s\n", options.node.c_str(), note.c_str());
  }
  std::fflush(stderr);
  execvp(argv[i + 1], argv + i + 1);
  std::fprintf(stderr, "ladder-stage: cannot run '%s': %s\n", argv[i + 1], std::strerror(errno));
  return 127;
}
