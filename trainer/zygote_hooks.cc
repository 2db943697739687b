#include "trainer/zygote_hooks.h"

#include <torch/torch.h>

#include <cstdio>

#include "trainer/args.h"
#include "trainer/blas_threads.h"
#include "trainer/csv_dataset.h"
#include "trainer/comm/communicator.h"
#include "trainer/data_cache.h"
#include "trainer/metrics_writer.h"
#include "trainer/train_loop.h"

namespace ladder::trainer {

void WarmUpForForking() {
  torch::set_num_threads(1);  // also sizes LibTorch's pthreadpool to one thread: its worker ends here
  SetBlasThreads(1);
  // A tiny training of each MLP path through the trainer's own code: the fused SGD step, and LibTorch's
  // autograd with dropout and Adam. What they bind and initialise (the dynamic linker resolves each symbol on
  // its first call, walking some 290 libraries) each child then inherits: measured, a child's first epoch cost
  // 3-7 ms more than its second without this. Metrics go nowhere; one rank, no prefetch thread.
  std::FILE* sink = std::fopen("/dev/null", "we");
  if (!sink) return;
  Dataset all, train, val;
  std::string error;
  if (LoadData("synthetic:96:8:3", &all, &error)) {
    SplitDataset(all, 0.25, /*split_seed=*/1, &train, &val);
    Standardize(&train, &val);
    const std::vector<std::string> common = {"--epochs", "1", "--batch-size", "16", "--width", "16", "--depth", "2",
                                             "--threads", "1", "--prefetch", "0", "--log-every", "2"};
    for (const std::vector<std::string>& extra :
         {std::vector<std::string>{"--optimizer", "sgd", "--momentum", "0.9"},
          std::vector<std::string>{"--optimizer", "adam", "--dropout", "0.1"}}) {
      std::vector<std::string> argv = common;
      argv.insert(argv.end(), extra.begin(), extra.end());
      const ParsedArgs parsed = ParseArgs(argv);
      auto comm = parsed.error.empty() ? comm::MakeCommunicator("none", comm::CommOptions{}, &error) : nullptr;
      if (!comm) continue;
      MetricsWriter metrics(sink);
      Train(parsed.args, train, val, metrics, *comm);
    }
  }
  std::fclose(sink);
}

void PrepareTrialData(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  const ParsedArgs parsed = ParseArgs(args);
  if (!parsed.error.empty() || parsed.help || parsed.version) return;
  std::string data = parsed.args.data;
  if (data.empty()) {  // the default, found as the child would: with the request's LADDER_DATA_DIR
    const char* data_dir = nullptr;
    for (const std::string& e : env) {
      if (e.rfind("LADDER_DATA_DIR=", 0) == 0) data_dir = e.c_str() + 16;
    }
    std::string tried;
    data = DefaultDataPath(&tried, data_dir);
    if (data.empty()) return;
  }
  if (data.rfind("hdf5:", 0) == 0) return;  // each rank reads its own rows after the ranks meet (hdf5_shard.h)
  DataOptions options;
  options.seq_len = parsed.args.seq_len;
  std::string error;
  PreloadData(data, options, &error);
}

}  // namespace ladder::trainer
