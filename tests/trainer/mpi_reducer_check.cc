// ladder-mpi-reducer-check: run under mpirun by mpi_reducer_test.cc. The GradientReducer over the MPI backend,
// whose waits run the queued MPI calls on the waiting thread, must leave exactly (bitwise) what raw
// MPI_Allreduce of the same bucket cuts leaves, step after step, whether the buckets were launched by the
// accumulator hooks (MarkReady), by Finish(), or were still queued when a blocking collective (Barrier)
// came in between. Prints "ok ..." on rank 0 and exits 0; else names the step and element and exits 1.
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "trainer/comm/communicator.h"
#include "trainer/grad_reducer.h"

int main() {
  std::string error;
  auto comm = ladder::trainer::comm::MakeCommunicator("mpi", &error);
  if (!comm) {
    std::fprintf(stderr, "mpi-reducer-check: %s\n", error.c_str());
    return 2;
  }
  torch::set_num_threads(1);
  std::vector<torch::Tensor> params;
  for (int64_t n : {1000, 37, 2048, 513, 4096, 1, 3000}) params.push_back(torch::zeros({n}).requires_grad_(true));
  // Small caps: 1 KiB first bucket, then 4 KiB, some cutting a tensor.
  ladder::trainer::GradientReducer reducer(params, *comm, 4096, 1024);
  const auto& buffer = reducer.buffers().at(0);
  const auto cuts = reducer.bucket_bytes();
  torch::manual_seed(1234 + comm->rank());
  int failures = 0;
  for (int step = 0; step < 6; ++step) {
    reducer.ZeroGrad();
    for (auto& p : params) p.mutable_grad().copy_(torch::randn({p.numel()}));
    auto expected = buffer.clone();
    reducer.Prepare();
    const size_t n = params.size();
    if (step % 3 == 0) {  // every parameter ready (the hooks launch every bucket)
      for (size_t j = n; j-- > 0;) reducer.MarkReady(j);
    } else if (step % 3 == 1) {  // half ready: Finish() launches the rest
      for (size_t j = n; j-- > n / 2;) reducer.MarkReady(j);
    } else {  // a blocking collective queued behind launched buckets: its wait runs them first
      for (size_t j = n; j-- > n / 2;) reducer.MarkReady(j);
      comm->Barrier();
      for (size_t j = n / 2; j-- > 0;) reducer.MarkReady(j);
    }
    reducer.Finish();
    // Raw MPI from this thread (nothing is in flight now), the same cuts.
    float* e = expected.data_ptr<float>();
    int64_t off = 0;
    for (int64_t b : cuts) {
      const int count = static_cast<int>(b / 4);
      MPI_Allreduce(MPI_IN_PLACE, e + off, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      off += count;
    }
    const float* got = buffer.data_ptr<float>();
    if (std::memcmp(got, e, static_cast<size_t>(buffer.numel()) * sizeof(float)) != 0) {
      for (int64_t i = 0; i < buffer.numel(); ++i) {
        if (std::memcmp(got + i, e + i, sizeof(float)) != 0) {
          std::fprintf(stderr, "mpi-reducer-check: rank %d step %d: element %lld is %.9g, raw MPI gives %.9g\n",
                       comm->rank(), step, static_cast<long long>(i), got[i], e[i]);
          break;
        }
      }
      ++failures;
    }
    // The sums are real sums: every rank holds the same values, not its own.
    auto first = buffer.narrow(0, 0, 4).clone();
    comm->Broadcast(first, 0);
    if (!torch::equal(first, buffer.narrow(0, 0, 4))) {
      std::fprintf(stderr, "mpi-reducer-check: rank %d step %d: ranks disagree after the allreduce\n",
                   comm->rank(), step);
      ++failures;
    }
  }
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (comm->rank() == 0 && total == 0) {
    std::printf("ok ranks=%d buckets=%zu steps=6\n", comm->size(), cuts.size());
  }
  return total == 0 ? 0 : 1;
}
