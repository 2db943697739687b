#include "trainer/stop_request.h"

#include <csignal>

namespace ladder::trainer {

namespace {

volatile std::sig_atomic_t g_signal = 0;

void OnSignal(int sig) { g_signal = sig; }

}  // namespace

void StopRequest::Install() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND | SA_RESTART;  // the second signal takes the default action: the process ends
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGUSR1, &sa, nullptr);
}

int StopRequest::Signal() { return g_signal; }

bool StopRequest::Due(int64_t step) {
  if (due_) return true;
  if (comm_.size() <= 1) {
    signal_ = g_signal;
    return due_ = signal_ != 0;
  }
  if (step % kCheckEvery != 0) return false;
  signal_ = g_signal;
  auto t = torch::full({1}, signal_ != 0 ? 1.0 : 0.0, torch::TensorOptions().dtype(torch::kFloat32).device(device_));
  comm_.AllreduceSum(t)->Wait();
  return due_ = t.item<float>() > 0;
}

bool StopRequest::AllSaved(bool saved) {
  if (comm_.size() <= 1) return saved;
  auto t = torch::full({1}, saved ? 0.0 : 1.0, torch::TensorOptions().dtype(torch::kFloat32).device(device_));
  comm_.AllreduceSum(t)->Wait();
  return t.item<float>() == 0;
}

}  // namespace ladder::trainer
