// ladder-train: trains a network (MLP, ResNet CNN, U-Net, Transformer LM) and reports metrics as JSON lines (docs/METRICS.md).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/trial_exit_codes.h"
#include "trainer/allocator_tuning.h"
#include "trainer/args.h"
#include "trainer/checkpoint_epoch.h"
#include "trainer/comm/rendezvous.h"
#include "trainer/csv_dataset.h"
#include "trainer/data_cache.h"
#include "trainer/data_sources.h"
#include "trainer/hdf5_shard.h"
#include "trainer/metrics_writer.h"
#include "trainer/serve.h"
#include "trainer/stop_request.h"
#include "trainer/train_loop.h"
#include "trainer/zygote.h"
#include "trainer/zygote_hooks.h"
#include "trainer/zygote_protocol.h"

namespace {

// An output file's directory exists (created if need be) and is writable: checked before training, so that a
// wrong path costs no run. "" when fine, else the error naming the option and the path.
std::string PrepareOutputPath(const char* option, const std::string& path) {
  if (path.empty()) return "";
  namespace fs = std::filesystem;
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return std::string("option ") + option + " " + path + ": cannot create " + dir.string() + ": " + ec.message();
  if (::access(dir.c_str(), W_OK) != 0) {
    return std::string("option ") + option + " " + path + ": cannot write in " + dir.string() + ": " +
           std::strerror(errno);
  }
  return "";
}

// The options the parser leaves: the run's assignment epoch, the default data, the output paths (their directory
// must be writable). 0, or the exit code (the reason said).
int CheckRunOptions(ladder::trainer::TrainArgs& args) {
  using namespace ladder::trainer;
  // This run's assignment epoch, set by the coordinator: its checkpoints carry it (trainer/checkpoint_epoch.h).
  if (std::string why; RunEpochFromEnvironment(&why) < 0) {
    std::fprintf(stderr, "ladder-train: %s\n", why.c_str());
    return 2;
  }
  if (args.data.empty()) {
    std::string tried;
    args.data = DefaultDataPath(&tried);
    if (args.data.empty()) {
      std::fprintf(stderr, "ladder-train: no --data given and the digits data was not found (tried %s)\n",
                   tried.c_str());
      return 2;
    }
  }
  for (const auto& [option, path] : {std::pair<const char*, const std::string&>{"--checkpoint", args.checkpoint},
                                     {"--save-params", args.save_params},
                                     {"--save-predictions", args.save_predictions}}) {
    const std::string err = PrepareOutputPath(option, path);
    if (!err.empty()) {
      std::fprintf(stderr, "ladder-train: %s\n", err.c_str());
      return 2;
    }
  }
  return 0;
}

// The data, loaded here or found loaded by the zygote (trainer/data_cache.h), with --input-shape applied: *all
// points at it (`loaded` holds it when this run loaded or reshaped it). False with *error.
bool LoadRunData(const ladder::trainer::TrainArgs& args, ladder::trainer::Dataset* loaded,
                 const ladder::trainer::Dataset** all, bool* preloaded_used, std::string* error) {
  using namespace ladder::trainer;
  DataOptions data_options;
  data_options.seq_len = args.seq_len;
  const Dataset* preloaded = FindData(args.data, data_options);
  if (preloaded && !args.input_shape.empty()) *loaded = *preloaded;  // its shape is set below, on this copy
  if ((!preloaded && !LoadData(args.data, data_options, loaded, error)) ||
      (!args.input_shape.empty() && !SetSampleShape(args.input_shape, loaded, error))) {
    return false;
  }
  *preloaded_used = preloaded != nullptr;
  *all = preloaded && args.input_shape.empty() ? preloaded : loaded;
  return true;
}

// The collective backend of --comm; nullptr with the exit code in *code (the reason said).
std::unique_ptr<ladder::trainer::comm::Communicator> ConnectRanks(const ladder::trainer::TrainArgs& args, int* code) {
  namespace comm = ladder::trainer::comm;
  comm::CommOptions comm_options;
  comm_options.hierarchical = args.hierarchical;
  comm_options.ranks_per_node = args.ranks_per_node;
  comm_options.cpu_only = args.device == "cpu";
  std::string error;
  std::unique_ptr<comm::Communicator> c;
  try {
    c = comm::MakeCommunicator(args.comm, comm_options, &error);
  } catch (const comm::RendezvousPortInUse& e) {
    std::fprintf(stderr, "ladder-train: %s\n", e.what());
    *code = ladder::kExitRendezvousPortInUse;  // another port would do: the coordinator retries on one
    return nullptr;
  }
  if (!c) {
    std::fprintf(stderr, "ladder-train: %s\n", error.c_str());
    *code = 2;
  }
  return c;
}

// One training: what `ladder-train ARGS` does (and each --serve request, in a child of its own).
int RunTrainer(const std::vector<std::string>& argv) {
  using namespace ladder::trainer;
  auto parsed = ParseArgs(argv);
  if (parsed.help) {
    std::fputs(Usage().c_str(), stdout);
    return 0;
  }
  if (parsed.version) {
    std::printf("ladder-train (ladder %s)\n", LADDER_VERSION);
    return 0;
  }
  if (!parsed.error.empty()) {
    std::fprintf(stderr, "ladder-train: %s\n", parsed.error.c_str());
    return 2;
  }
  TrainArgs args = parsed.args;
  if (int code = CheckRunOptions(args); code != 0) return code;
  // With a checkpoint to save, SIGTERM/SIGUSR1 stop the run cleanly at a step the ranks agree on (installed before
  // the data loads and the ranks meet, so a stop asked for during start-up is kept too).
  if (!args.checkpoint.empty()) StopRequest::Install();
  Dataset loaded, train, val;
  const Dataset* all = &train;
  bool preloaded = false;
  std::string error;
  // HDF5 is read once the ranks have met: each rank its own rows (trainer/hdf5_shard.h).
  const bool per_rank = IsHdf5Data(args.data);
  if (!per_rank && !LoadRunData(args, &loaded, &all, &preloaded, &error)) {
    std::fprintf(stderr, "ladder-train: %s\n", error.c_str());
    return 2;
  }
  int code = 0;
  auto comm = ConnectRanks(args, &code);
  if (!comm) return code;
  if (per_rank && !LoadHdf5ForRank(args, *comm, &train, &val, &error, &args.class_weights)) {
    std::fprintf(stderr, "ladder-train: %s\n", error.c_str());
    return 2;
  }
  if (!per_rank) {
    SplitDataset(*all, args.val_fraction, /*split_seed=*/20261122, &train, &val);
    Standardize(&train, &val);
  }
  if (comm->rank() == 0) {
    std::fprintf(stderr,
                 "ladder-train: %s%s: %lld train / %lld validation rows, %lld features, %lld classes (task %s); "
                 "%d rank(s) over %s\n",
                 args.data.c_str(), preloaded ? " (loaded by the zygote)" : "", static_cast<long long>(train.rows),
                 static_cast<long long>(val.rows), static_cast<long long>(all->features),
                 static_cast<long long>(all->classes), TaskName(all->task), comm->size(), comm->backend().c_str());
  }
  MetricsWriter metrics(stdout);
  try {
    return Train(args, train, val, metrics, *comm).exit_code;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ladder-train: %s\n", e.what());
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  ladder::trainer::TuneAllocator();  // before any thread starts: steps reuse freed memory, not fresh pages
  std::vector<std::string> args(argv + 1, argv + argc);
  // --serve alone; with other options ParseArgs refuses it like any misplaced option.
  if (args == std::vector<std::string>{"--serve"}) return ladder::trainer::Serve(stdin, stdout, RunTrainer);
  // --zygote alone: ladder-worker's warm start (trainer/zygote.h), on the socket it passed as fd 3.
  if (args == std::vector<std::string>{"--zygote"}) {
    ladder::trainer::ZygoteHooks hooks;
    hooks.run = RunTrainer;
    hooks.warm_up = ladder::trainer::WarmUpForForking;
    hooks.prepare = ladder::trainer::PrepareTrialData;
    return ladder::trainer::RunZygote(ladder::trainer::zygote::kSocketFd, hooks);
  }
  return RunTrainer(args);
}
