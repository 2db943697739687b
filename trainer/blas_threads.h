#pragma once
// The BLAS behind LibTorch's CPU matrix products: which library serves it (Debian picks it through the
// libblas.so.3 alternative: OpenBLAS when libopenblas0-pthread is installed, else the reference BLAS), and its
// thread pool sized per rank. OpenBLAS's pthread build starts one thread per core by default whatever
// torch::set_num_threads says, so two ranks on two cores would run four BLAS threads; SetBlasThreads gives each
// rank its --threads.
#include <string>

namespace ladder::trainer {

// The file of the library that serves sgemm_ (e.g. ".../openblas-pthread/libblas.so.3"), "" when none is loaded.
std::string BlasLibrary();
// A short name for it: "openblas", "blis", "mkl", "reference" or the file name.
std::string BlasName();
// Sets the BLAS's own thread count where the library has a call for it (OpenBLAS, BLIS, MKL); false otherwise.
bool SetBlasThreads(int threads);

}  // namespace ladder::trainer
