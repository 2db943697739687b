// ladder-stage: stages data onto this node (worker/stage.h), then runs a command in its place.
//   ladder-stage [--extract | --shard node] --from PATH [--from PATH ...] --to DIR [...] -- COMMAND [ARGS...]
// The coordinator puts it in front of a trial's command when its spec has `stage:`; every rank runs it.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/address.h"
#include "worker/stage.h"

namespace {

constexpr const char* kUsage =
    "usage: ladder-stage [--extract | --shard node] --from PATH [--from PATH ...] --to DIR [...] -- COMMAND [ARGS...]\n"
    "  a file: copied into the node-local directory DIR once per node (checked by size and CRC-32, reused by\n"
    "          later runs on the node, taken from an sbcast delivery when one checks out)\n"
    "  --extract: the archive PATH (.tar, .tar.gz, .tgz, .tar.bz2, .tar.xz, .tar.zst, .zip) unpacked once per node\n"
    "          into DIR/NAME (its name without the suffix), in one read of the archive\n"
    "  --shard node: this node's share of the shard files (one --from DIR/: a directory of them; or --from FILE\n"
    "          for each file of a list) in DIR/NAME (the directory's name) or DIR (a list); which node of the\n"
    "          trial this is comes from the rank's environment (srun: SLURM_NODEID of SLURM_NNODES; per_node:\n"
    "          RANK / LOCAL_WORLD_SIZE; mpirun: OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_LOCAL_SIZE; of LADDER_NODES)\n"
    "  then runs COMMAND\n";

int Usage(const std::string& why) {
  std::fprintf(stderr, "ladder-stage: %s\n%s", why.c_str(), kUsage);
  return 2;
}

struct Entry {
  std::vector<std::string> from;
  std::string to;
  bool extract = false, shard = false;
};

// The entries before "--"; *next: the index of "--". "" or what is wrong.
std::string ParseEntries(int argc, char** argv, std::vector<Entry>* out, int* next) {
  Entry e;
  int i = 1;
  for (; i < argc && std::strcmp(argv[i], "--") != 0; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--extract" && e.from.empty()) {
      e.extract = true;
    } else if (a == "--shard" && has_value && std::strcmp(argv[i + 1], "node") == 0 && e.from.empty()) {
      e.shard = true;
      ++i;
    } else if (a == "--from" && has_value && (e.from.empty() || e.shard)) {
      e.from.push_back(argv[++i]);
    } else if (a == "--to" && has_value && !e.from.empty()) {
      e.to = argv[++i];
      if (e.extract && e.shard) return "--extract and --shard node cannot be combined";
      out->push_back(std::move(e));
      e = Entry{};
    } else {
      return "unexpected argument '" + a + "' (each --from PATH needs its --to DIR; several --from only with --shard node)";
    }
  }
  if (!e.from.empty() || e.extract || e.shard) return "the last --from has no --to DIR";
  *next = i;
  return "";
}

// Stages one entry; "" or the error.
std::string StageEntry(const Entry& e, const ladder::worker::StageOptions& options, std::string* note) {
  using namespace ladder::worker;
  if (e.extract) return EnsureExtracted(e.from.front(), e.to, options, note);
  if (!e.shard) return EnsureStaged(e.from.front(), e.to, options, note);
  std::string error;
  auto share = NodeShareFromEnv([](const char* name) { return std::getenv(name); }, &error);
  if (!share) return error;
  ShardSource source;
  if (e.from.size() == 1 && e.from.front().size() > 1 && e.from.front().back() == '/') {  // DIR/: a directory
    source.dir = e.from.front();
    while (source.dir.size() > 1 && source.dir.back() == '/') source.dir.pop_back();
  } else {
    source.files = e.from;
  }
  return EnsureShardStaged(source, e.to, *share, options, note);
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc && std::strcmp(argv[i], "--") != 0; ++i) {
    if (std::strcmp(argv[i], "--help") == 0) return std::fputs(kUsage, stdout) < 0;
  }
  std::vector<Entry> entries;
  int i = 0;
  if (std::string why = ParseEntries(argc, argv, &entries, &i); !why.empty()) return Usage(why);
  if (i + 1 >= argc) return Usage("no command after --");
  ladder::worker::StageOptions options;
  const char* slurm_node = std::getenv("SLURMD_NODENAME");
  options.node = slurm_node && *slurm_node ? slurm_node : ladder::ThisHostname();
  for (size_t k = 0; k < entries.size(); ++k) {
    std::string note;
    const std::string error = StageEntry(entries[k], options, &note);
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
