#include "trainer/checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "trainer/checkpoint_epoch.h"

namespace ladder::trainer {

namespace {
constexpr int64_t kFormatVersion = 1;
}

bool SaveCheckpoint(const std::string& path, const std::vector<torch::Tensor>& params, Optimizer& opt,
                    const NoiseScaleEstimator& noise, const TrainPosition& pos, std::string* error,
                    int64_t run_epoch) {
  std::vector<torch::Tensor> out;
  out.push_back(torch::tensor({kFormatVersion, pos.step, pos.epoch, pos.offset, opt.step_count(),
                               static_cast<int64_t>(params.size())},
                              torch::kInt64));
  auto ns = noise.state();
  out.push_back(torch::tensor({pos.allreduce_s, ns[0], ns[1], ns[2]}, torch::kFloat64));
  {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    out.push_back(gen.get_state());
  }
  for (const auto& p : params) out.push_back(p.detach().clone());
  for (const auto& t : opt.State()) out.push_back(t.detach().clone());
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  try {
    torch::save(out, tmp);
  } catch (const c10::Error& e) {
    *error = "cannot write checkpoint '" + tmp + "': " + e.what_without_backtrace();
    unlink(tmp.c_str());
    return false;
  } catch (const std::exception& e) {
    *error = "cannot write checkpoint '" + tmp + "': " + e.what();
    unlink(tmp.c_str());
    return false;
  }
  int fd = open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || fsync(fd) != 0 || close(fd) != 0) {
    *error = "cannot write checkpoint '" + path + "': " + std::strerror(errno);
    unlink(tmp.c_str());
    return false;
  }
  // Into place unless a newer run of the trial saved it (trainer/checkpoint_epoch.h); the directory synced.
  if (!ReplaceCheckpoint(tmp, path, run_epoch, error)) return false;
  // Temporary files of earlier runs stopped mid-save (SIGTERM, SIGKILL): they would keep the checkpoint
  // directory from being recognised as empty, and a PBT exploit would copy them along.
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(path).has_parent_path() ? fs::path(path).parent_path() : fs::path(".");
  const std::string name = fs::path(path).filename().string();
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string entry = e.path().filename().string();
    if (entry.rfind(name + ".tmp.", 0) == 0 || entry.rfind(name + ".epoch.tmp.", 0) == 0) fs::remove(e.path(), ec);
  }
  return true;
}

bool LoadCheckpoint(const std::string& path, std::vector<torch::Tensor>& params, Optimizer& opt,
                    NoiseScaleEstimator& noise, TrainPosition* pos, std::string* error) {
  std::vector<torch::Tensor> in;
  try {
    torch::load(in, path);
  } catch (const c10::Error& e) {
    *error = "cannot read checkpoint '" + path + "': " + e.what_without_backtrace();
    return false;
  } catch (const std::exception& e) {
    *error = "cannot read checkpoint '" + path + "': " + std::string(e.what()).substr(0, 200);
    return false;
  }
  auto state = opt.State();
  if (in.size() < 3 || in[0].numel() != 6 || in[0].data_ptr<int64_t>()[0] != kFormatVersion ||
      in.size() != 3 + params.size() + state.size()) {
    *error = "checkpoint '" + path + "' does not match this model and optimizer (" + std::to_string(in.size()) +
             " tensors, expected " + std::to_string(3 + params.size() + state.size()) + ")";
    return false;
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (!in[3 + i].sizes().equals(params[i].sizes())) {
      *error = "checkpoint '" + path + "': parameter " + std::to_string(i) + " has shape " +
               c10::str(in[3 + i].sizes()) + ", the model has " + c10::str(params[i].sizes());
      return false;
    }
  }
  const int64_t* meta = in[0].data_ptr<int64_t>();
  const double* dmeta = in[1].data_ptr<double>();
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params.size(); ++i) params[i].copy_(in[3 + i]);
  for (size_t i = 0; i < state.size(); ++i) state[i].copy_(in[3 + params.size() + i]);
  opt.set_step_count(meta[4]);
  pos->step = meta[1];
  pos->epoch = meta[2];
  pos->offset = meta[3];
  pos->allreduce_s = dmeta[0];
  noise.set_state({dmeta[1], dmeta[2], dmeta[3]});
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(in[2]);
  return true;
}

}  // namespace ladder::trainer
