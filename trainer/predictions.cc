#include "trainer/predictions.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace ladder::trainer {

bool SavePredictions(Network& net, const torch::Tensor& x, const torch::Tensor& y, const LossSpec& spec,
                     const EvalOptions& o, const std::string& path, std::string* error) {
  if (spec.task != Task::kClassify) {
    *error = "--save-predictions: only classification runs have per-example class probabilities";
    return false;
  }
  torch::NoGradGuard no_grad;
  const bool was_training = net.is_training();
  net.eval();
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) {
    *error = "--save-predictions: cannot write '" + tmp + "': " + std::strerror(errno);
    return false;
  }
  const int64_t rows = x.size(0);
  const int64_t chunk = 4096;
  bool header = false;
  for (int64_t start = 0; start < rows; start += chunk) {
    const int64_t len = std::min(chunk, rows - start);
    torch::Tensor logits;
    {
      AutocastScope autocast(o.device, o.bf16);
      logits = net.forward(x.narrow(0, start, len).to(o.device));
    }
    auto probs = torch::softmax(logits.to(torch::kFloat64), 1).cpu().contiguous();
    auto labels = y.narrow(0, start, len).to(torch::kInt64).cpu().contiguous();
    const int64_t classes = probs.size(1);
    if (!header) {
      std::fputs("label", f);
      for (int64_t c = 0; c < classes; ++c) std::fprintf(f, ",p%lld", static_cast<long long>(c));
      std::fputc('\n', f);
      header = true;
    }
    const double* p = probs.data_ptr<double>();
    const int64_t* l = labels.data_ptr<int64_t>();
    for (int64_t r = 0; r < len; ++r) {
      std::fprintf(f, "%lld", static_cast<long long>(l[r]));
      for (int64_t c = 0; c < classes; ++c) std::fprintf(f, ",%.9g", p[r * classes + c]);
      std::fputc('\n', f);
    }
  }
  if (was_training) net.train();
  bool ok = std::fflush(f) == 0 && fsync(fileno(f)) == 0;
  ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    *error = "--save-predictions: cannot write '" + path + "': " + std::strerror(errno);
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace ladder::trainer
