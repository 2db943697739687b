#include "trainer/blas_threads.h"

#include <dlfcn.h>

#include <filesystem>

namespace ladder::trainer {

std::string BlasLibrary() {
  void* sym = dlsym(RTLD_DEFAULT, "sgemm_");
  Dl_info info{};
  if (!sym || !dladdr(sym, &info) || !info.dli_fname) return "";
  std::error_code ec;
  const auto real = std::filesystem::canonical(info.dli_fname, ec);
  return ec ? std::string(info.dli_fname) : real.string();
}

std::string BlasName() {
  if (dlsym(RTLD_DEFAULT, "openblas_set_num_threads")) return "openblas";
  if (dlsym(RTLD_DEFAULT, "bli_thread_set_num_threads")) return "blis";
  if (dlsym(RTLD_DEFAULT, "MKL_Set_Num_Threads")) return "mkl";
  const std::string lib = BlasLibrary();
  if (lib.empty()) return "none";
  if (lib.find("/blas/") != std::string::npos) return "reference";
  return std::filesystem::path(lib).filename().string();
}

bool SetBlasThreads(int threads) {
  using SetThreads = void (*)(int);
  for (const char* name : {"openblas_set_num_threads", "bli_thread_set_num_threads", "MKL_Set_Num_Threads"}) {
    if (auto* f = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, name))) {
      f(threads);
      return true;
    }
  }
  return false;
}

}  // namespace ladder::trainer
