#include "trainer/zygote_hooks.h"

#include <torch/torch.h>

#include "trainer/args.h"
#include "trainer/blas_threads.h"
#include "trainer/csv_dataset.h"
#include "trainer/data_cache.h"

namespace ladder::trainer {

void WarmUpForForking() {
  torch::set_num_threads(1);  // also sizes LibTorch's pthreadpool to one thread: its worker ends here
  SetBlasThreads(1);
  torch::manual_seed(0);
  torch::nn::Sequential mlp(torch::nn::Linear(8, 16), torch::nn::ReLU(), torch::nn::Dropout(0.1),
                            torch::nn::Linear(16, 4));
  const torch::Tensor x = torch::randn({32, 8});
  const torch::Tensor y = torch::randint(0, 4, {32}, torch::kLong);
  torch::optim::SGD sgd(mlp->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  for (int step = 0; step < 2; ++step) {
    sgd.zero_grad();
    torch::Tensor loss = torch::nn::functional::cross_entropy(mlp->forward(x), y);
    loss.backward();
    sgd.step();
  }
  torch::NoGradGuard no_grad;
  mlp->eval();
  (void)torch::softmax(mlp->forward(x), 1).argmax(1).eq(y).sum().item<int64_t>();
}

void PrepareTrialData(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  const ParsedArgs parsed = ParseArgs(args);
  if (!parsed.error.empty() || parsed.help || parsed.version) return;
  std::string data = parsed.args.data;
  if (data.empty()) {
    std::string data_dir, tried;
    bool set = false;
    for (const std::string& e : env) {
      if (e.rfind("LADDER_DATA_DIR=", 0) == 0) {
        data_dir = e.substr(16);
        set = true;
      }
    }
    data = DefaultDataPath(&tried, set ? data_dir.c_str() : nullptr);
    if (data.empty()) return;
  }
  DataOptions options;
  options.seq_len = parsed.args.seq_len;
  std::string error;
  PreloadData(data, options, &error);
}

}  // namespace ladder::trainer
